// CRC-32C (Castagnoli), the checksum of every record frame and durable file. Uses carry-less multiplication on long
// runs where the processor has VPCLMULQDQ with AVX-512, the SSE 4.2 instruction where it has that (both detected once
// at run time), a table otherwise; all give the same value.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace moonmq {

/// Extends `crc` (0 to start) over `size` bytes at `data`.
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size) noexcept;

/// The instruction alone, without folding (the table where the processor lacks it): for tests that compare the paths.
std::uint32_t crc32c_extend_instruction(std::uint32_t crc, const void* data, std::size_t size) noexcept;

/// The table-driven implementation alone (for tests that compare it with the instruction).
std::uint32_t crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t size) noexcept;

/// The CRC-32C of each of `count` (at most 4) independent buffers, computed interleaved: on the instruction path
/// about three times the throughput of one buffer at a time, which is what verifying a run of small frames needs.
void crc32c_many(const void* const* data, const std::size_t* size, std::uint32_t* out, std::size_t count) noexcept;

inline std::uint32_t crc32c(const void* data, std::size_t size) noexcept { return crc32c_extend(0, data, size); }
inline std::uint32_t crc32c(std::string_view s) noexcept { return crc32c(s.data(), s.size()); }

}  // namespace moonmq
