#include "crc32c_fold.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

namespace moonmq::detail {

namespace {

constexpr std::uint32_t polynomial = 0x82f63b78u;  // reflected Castagnoli

/// x^n mod P, reflected (bit j holds the coefficient of x^(31-j)), placed in the upper half of a 64-bit word: the
/// form a carry-less multiply by a 64-bit block half needs (see fold below).
constexpr std::uint64_t x_power(unsigned n) {
  std::uint32_t r = 0x80000000u;  // x^0
  for (unsigned i = 0; i < n; ++i) r = (r >> 1) ^ ((r & 1u) ? polynomial : 0u);
  return std::uint64_t{r} << 32;
}

/// The two multipliers that move a 128-bit block `bits` bits further along the message.
///
/// A block loaded from memory holds the message's first byte in its lowest byte, and a reflected CRC takes the
/// lowest bit of each byte first: the block's low 64-bit half is the high-degree half H (A = H x^64 + L). A carry-less
/// multiply of two 64-bit halves whose bit i stands for x^(63-i) gives a product one degree short of the block's
/// convention (bit t stands for x^(127-t)), so clmul(H, k) reads as H k x. Hence
///   A x^bits = H x^(64+bits) + L x^bits == clmul(H, x^(63+bits) mod P) + clmul(L, x^(bits-1) mod P),
/// a sum below degree 96, which fits the block it is added to.
struct fold_by {
  std::uint64_t high;  ///< for the low half of the register (H)
  std::uint64_t low;   ///< for the high half (L)
};
constexpr fold_by fold_bits(unsigned bits) { return {x_power(63 + bits), x_power(bits - 1)}; }

constexpr fold_by by_256_bytes = fold_bits(256 * 8);
constexpr fold_by by_64_bytes = fold_bits(64 * 8);
constexpr fold_by by_16_bytes = fold_bits(16 * 8);

#define MOONMQ_FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

MOONMQ_FOLD_TARGET inline __m512i fold(__m512i a, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00), _mm512_clmulepi64_epi128(a, k, 0x11), next,
                                   0x96);  // three-way xor
}

MOONMQ_FOLD_TARGET inline __m128i fold(__m128i a, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11)), next);
}

MOONMQ_FOLD_TARGET inline __m512i wide(fold_by f) {
  const auto high = static_cast<long long>(f.high), low = static_cast<long long>(f.low);
  return _mm512_set_epi64(low, high, low, high, low, high, low, high);  // each 128-bit lane: high, then low
}

/// Block `Lane` of `z` (GCC 12's _mm512_extracti32x4_epi32 warns of an undefined value it passes for the unmasked
/// form; the zero-masked form keeps all four words alike).
template <int Lane>
MOONMQ_FOLD_TARGET inline __m128i block(__m512i z) {
  return _mm512_maskz_extracti32x4_epi32(0xf, z, Lane);
}

}  // namespace

MOONMQ_FOLD_TARGET std::uint32_t crc32c_fold(std::uint32_t state, const unsigned char* p, std::size_t n) noexcept {
  // Sixteen blocks side by side (four registers of four), each folded 256 bytes ahead per step: the multiplies of one
  // step do not wait on each other. The starting state goes into the message's first four bytes, since the CRC of
  // (state, data) equals the CRC of (0, data with state xored into its first 32 bits).
  const __m512i k256 = wide(by_256_bytes);
  __m512i z0 = _mm512_loadu_si512(p);
  __m512i z1 = _mm512_loadu_si512(p + 64);
  __m512i z2 = _mm512_loadu_si512(p + 128);
  __m512i z3 = _mm512_loadu_si512(p + 192);
  z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(state))));
  p += 256;
  n -= 256;
  while (n >= 256) {
    z0 = fold(z0, k256, _mm512_loadu_si512(p));
    z1 = fold(z1, k256, _mm512_loadu_si512(p + 64));
    z2 = fold(z2, k256, _mm512_loadu_si512(p + 128));
    z3 = fold(z3, k256, _mm512_loadu_si512(p + 192));
    p += 256;
    n -= 256;
  }
  // Down to one register, its four blocks the last 64 bytes folded; then whole 64-byte runs left.
  const __m512i k64 = wide(by_64_bytes);
  __m512i z = fold(fold(fold(z0, k64, z1), k64, z2), k64, z3);
  for (; n >= 64; p += 64, n -= 64) z = fold(z, k64, _mm512_loadu_si512(p));
  // Down to one block; then whole 16-byte runs left.
  const __m128i k16 = _mm_set_epi64x(static_cast<long long>(by_16_bytes.low), static_cast<long long>(by_16_bytes.high));
  __m128i x = block<0>(z);
  x = fold(x, k16, block<1>(z));
  x = fold(x, k16, block<2>(z));
  x = fold(x, k16, block<3>(z));
  for (; n >= 16; p += 16, n -= 16) x = fold(x, k16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  // The block is congruent to the message so far: its CRC from zero is the message's.
  const std::uint64_t c = _mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(x)));
  return static_cast<std::uint32_t>(_mm_crc32_u64(c, static_cast<std::uint64_t>(_mm_extract_epi64(x, 1))));
}

bool crc32c_fold_available() noexcept {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
                          __builtin_cpu_supports("sse4.2");
  return yes;
}

}  // namespace moonmq::detail

#else

namespace moonmq::detail {
std::uint32_t crc32c_fold(std::uint32_t state, const unsigned char*, std::size_t) noexcept { return state; }
bool crc32c_fold_available() noexcept { return false; }
}  // namespace moonmq::detail

#endif
