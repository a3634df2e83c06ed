#include "moonmq/core/crc32c.hpp"

#include "crc32c_fold.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

namespace moonmq {

namespace {

constexpr std::uint32_t polynomial = 0x82f63b78u;  // reflected Castagnoli

constexpr std::array<std::array<std::uint32_t, 256>, 8> make_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1u) ? polynomial : 0u);
    t[0][i] = c;
  }
  for (std::uint32_t i = 0; i < 256; ++i)
    for (std::size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xffu];
  return t;
}

constexpr auto tables = make_tables();

std::uint32_t extend_table(std::uint32_t crc, const unsigned char* p, std::size_t n) noexcept {
  crc = ~crc;
  while (n >= 8) {  // slicing by 8
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    word ^= crc;
    crc = tables[7][word & 0xff] ^ tables[6][(word >> 8) & 0xff] ^ tables[5][(word >> 16) & 0xff] ^
          tables[4][(word >> 24) & 0xff] ^ tables[3][(word >> 32) & 0xff] ^ tables[2][(word >> 40) & 0xff] ^
          tables[1][(word >> 48) & 0xff] ^ tables[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ tables[0][(crc ^ *p++) & 0xffu];
  return ~crc;
}

#if defined(__x86_64__)
/// Moving a raw CRC (no inversion) past `Length` zero bytes, as four table lookups: the CRC is linear, so the state
/// after a block that started from `s` is shift(s) xor the state after the same block started from 0. That lets three
/// blocks run side by side, since the crc32 instruction takes three cycles but can start one every cycle.
template <std::size_t Length>
struct zeros_shift {
  std::array<std::array<std::uint32_t, 256>, 4> table{};

  __attribute__((target("sse4.2"))) zeros_shift() noexcept {
    std::array<std::uint32_t, 32> basis{};  // where each single bit of the state goes
    for (int bit = 0; bit < 32; ++bit) {
      std::uint64_t c = std::uint64_t{1} << bit;
      for (std::size_t i = 0; i < Length / 8; ++i) c = __builtin_ia32_crc32di(c, 0);
      basis[static_cast<std::size_t>(bit)] = static_cast<std::uint32_t>(c);
    }
    for (std::size_t k = 0; k < 4; ++k)
      for (std::uint32_t b = 0; b < 256; ++b)
        for (std::size_t j = 0; j < 8; ++j)
          if (b & (1u << j)) table[k][b] ^= basis[8 * k + j];
  }

  std::uint32_t operator()(std::uint32_t c) const noexcept {
    return table[0][c & 0xff] ^ table[1][(c >> 8) & 0xff] ^ table[2][(c >> 16) & 0xff] ^ table[3][c >> 24];
  }
};

/// Three blocks of `Length` bytes at a time from `p`, while at least that much is left; the raw state moves along.
template <std::size_t Length>
__attribute__((target("sse4.2"))) void three_ways(std::uint64_t& c, const unsigned char*& p, std::size_t& n) noexcept {
  static const zeros_shift<Length> shift;
  while (n >= 3 * Length) {
    std::uint64_t c1 = 0, c2 = 0;
    for (std::size_t i = 0; i < Length; i += 8) {
      std::uint64_t w0, w1, w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + Length + i, 8);
      std::memcpy(&w2, p + 2 * Length + i, 8);
      c = __builtin_ia32_crc32di(c, w0);
      c1 = __builtin_ia32_crc32di(c1, w1);
      c2 = __builtin_ia32_crc32di(c2, w2);
    }
    c = shift(shift(static_cast<std::uint32_t>(c)) ^ static_cast<std::uint32_t>(c1)) ^ static_cast<std::uint32_t>(c2);
    p += 3 * Length;
    n -= 3 * Length;
  }
}

/// From this many bytes on, folding by carry-less multiplication is faster than the instruction (where it runs).
constexpr std::size_t fold_from = 256;

/// `fold`: folding where the processor can and `n` is long enough; else the instruction alone.
__attribute__((target("sse4.2"))) std::uint32_t extend_hardware(std::uint32_t crc, const unsigned char* p,
                                                                std::size_t n, bool fold = true) noexcept {
  std::uint64_t c = ~crc;
  if (fold && n >= fold_from && detail::crc32c_fold_available()) {  // whole 16-byte blocks; the rest as below
    const std::size_t blocks = n & ~std::size_t{15};
    c = detail::crc32c_fold(static_cast<std::uint32_t>(c), p, blocks);
    p += blocks;
    n -= blocks;
  }
  three_ways<4096>(c, p, n);
  three_ways<256>(c, p, n);
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return ~c32;
}

__attribute__((target("sse4.2"))) void many_hardware(const void* const* data, const std::size_t* size,
                                                     std::uint32_t* out, std::size_t count) noexcept {
  if (detail::crc32c_fold_available() &&
      std::all_of(size, size + count, [](std::size_t n) { return n >= fold_from; })) {
    // Long enough to fold: one at a time, since folding keeps the multiplier busy on its own.
    for (std::size_t i = 0; i < count; ++i)
      out[i] = extend_hardware(0, static_cast<const unsigned char*>(data[i]), size[i]);
    return;
  }
  std::uint64_t c[4] = {~0u, ~0u, ~0u, ~0u};
  const unsigned char* p[4] = {};
  std::size_t left[4] = {};
  std::size_t common = SIZE_MAX;
  for (std::size_t i = 0; i < count; ++i) {
    p[i] = static_cast<const unsigned char*>(data[i]);
    left[i] = size[i];
    common = std::min(common, size[i]);
  }
  std::size_t words = common / 8;
  if (count == 4) {
    for (std::size_t w = 0; w < words; ++w) {
      std::uint64_t v0, v1, v2, v3;
      std::memcpy(&v0, p[0] + 8 * w, 8);
      std::memcpy(&v1, p[1] + 8 * w, 8);
      std::memcpy(&v2, p[2] + 8 * w, 8);
      std::memcpy(&v3, p[3] + 8 * w, 8);
      c[0] = __builtin_ia32_crc32di(c[0], v0);
      c[1] = __builtin_ia32_crc32di(c[1], v1);
      c[2] = __builtin_ia32_crc32di(c[2], v2);
      c[3] = __builtin_ia32_crc32di(c[3], v3);
    }
  } else {
    words = 0;
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t partial = ~static_cast<std::uint32_t>(c[i]);
    out[i] = extend_hardware(partial, p[i] + 8 * words, left[i] - 8 * words);
  }
}

bool has_hardware() noexcept {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (has_hardware()) return extend_hardware(crc, p, size);
#endif
  return extend_table(crc, p, size);
}

void crc32c_many(const void* const* data, const std::size_t* size, std::uint32_t* out, std::size_t count) noexcept {
#if defined(__x86_64__)
  if (has_hardware()) return many_hardware(data, size, out, count);
#endif
  for (std::size_t i = 0; i < count; ++i) out[i] = extend_table(0, static_cast<const unsigned char*>(data[i]), size[i]);
}

std::uint32_t crc32c_extend_instruction(std::uint32_t crc, const void* data, std::size_t size) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
  if (has_hardware()) return extend_hardware(crc, p, size, false);
#endif
  return extend_table(crc, p, size);
}

std::uint32_t crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t size) noexcept {
  return extend_table(crc, static_cast<const unsigned char*>(data), size);
}

}  // namespace moonmq
