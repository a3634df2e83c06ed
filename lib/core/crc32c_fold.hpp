// CRC-32C by carry-less multiplication (VPCLMULQDQ on 512-bit registers): long runs fold sixteen 16-byte blocks at a
// time toward the end of the message, and the CRC instruction reduces the last block. About twice the throughput of
// the CRC instruction alone on long runs (19 against 38 us a MB here); crc32c.cpp uses it where the processor has it.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace moonmq::detail {

/// Whether this processor can run crc32c_fold (AVX-512F/VL, VPCLMULQDQ, PCLMULQDQ, SSE 4.2; checked once).
bool crc32c_fold_available() noexcept;

/// The raw (not inverted) CRC state after `n` bytes at `p`, from the raw state `state`. REQUIRES: n >= 256, n a
/// multiple of 16 (the caller goes on with the rest), and crc32c_fold_available().
std::uint32_t crc32c_fold(std::uint32_t state, const unsigned char* p, std::size_t n) noexcept;

}  // namespace moonmq::detail
