#include "pcp/rpc/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#include <nmmintrin.h>
#endif

namespace pcp {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "crc32c.cc assumes little-endian loads");

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

// a(x) * b(x) mod P(x) on reflected 32-bit polynomials (bit 31 = x^0). `a` must be non-zero.
// From zlib 1.2.12's multmodp.
uint32_t MultModP(uint32_t a, uint32_t b) {
  uint32_t m = 1u << 31;
  uint32_t p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return p;
}

// kX2n[k] = x^(2^k) mod P.
constexpr std::array<uint32_t, 32> MakeX2nTable() {
  std::array<uint32_t, 32> t{};
  uint32_t p = 1u << 30;  // x^1
  t[0] = p;
  for (int n = 1; n < 32; ++n) {
    // Inline MultModP(p, p) so the table is a compile-time constant.
    uint32_t a = p, b = p, m = 1u << 31, r = 0;
    for (;;) {
      if (a & m) {
        r ^= b;
        if ((a & (m - 1)) == 0) break;
      }
      m >>= 1;
      b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
    }
    t[n] = p = r;
  }
  return t;
}
constexpr std::array<uint32_t, 32> kX2n = MakeX2nTable();

// x^(n * 2^k) mod P: the operator that appends n * 2^k / 8 zero bytes (k = 3: n bytes).
uint32_t X2nModP(uint64_t n, int k) {
  uint32_t p = 1u << 31;  // x^0
  while (n) {
    if (n & 1) p = MultModP(kX2n[k & 31], p);
    n >>= 1;
    ++k;
  }
  return p;
}

// Slicing-by-8 tables: kTable[0] is the classic byte table; kTable[k][b] advances the CRC of
// byte b by k more zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][n] = c;
  }
  for (uint32_t n = 0; n < 256; ++n) {
    for (int k = 1; k < 8; ++k) t[k][n] = (t[k - 1][n] >> 8) ^ t[0][t[k - 1][n] & 0xFF];
  }
  return t;
}
constexpr auto kTable = MakeTables();

inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

#if defined(__x86_64__)
// Interleaving three independent crc32 streams hides the instruction's 3-cycle latency; the
// three partial CRCs are joined by "append L zero bytes" operators, applied with 4 table
// lookups each (Mark Adler's crc32c.c design).
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

struct ShiftTable {
  uint32_t t[4][256];
  explicit ShiftTable(size_t bytes) {
    uint32_t op = X2nModP(bytes, 3);
    for (int k = 0; k < 4; ++k) {
      for (uint32_t n = 0; n < 256; ++n) t[k][n] = MultModP(op, n << (8 * k));
    }
  }
  uint32_t Apply(uint32_t crc) const {
    return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
  }
};

const ShiftTable& LongShift() {
  static const ShiftTable* table = new ShiftTable(kLongBlock);
  return *table;
}
const ShiftTable& ShortShift() {
  static const ShiftTable* table = new ShiftTable(kShortBlock);
  return *table;
}

template <size_t kBlock>
__attribute__((target("sse4.2"))) inline uint64_t ThreeWay(uint64_t c0, const uint8_t*& p, size_t& size,
                                                           const ShiftTable& shift) {
  while (size >= 3 * kBlock) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t* end = p + kBlock;
    do {
      c0 = _mm_crc32_u64(c0, Load64(p));
      c1 = _mm_crc32_u64(c1, Load64(p + kBlock));
      c2 = _mm_crc32_u64(c2, Load64(p + 2 * kBlock));
      p += 8;
    } while (p < end);
    c0 = shift.Apply(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
    c0 = shift.Apply(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c2);
    p += 2 * kBlock;
    size -= 3 * kBlock;
  }
  return c0;
}

// Carry-less multiplication folding (VPCLMULQDQ on 512-bit registers, four 128-bit lanes
// each): the bytes are folded 256 at a time into four registers, which are then folded into
// one, its lanes into one, and those 16 bytes and the tail go through the crc32 instruction.
// Folding X (16 bytes) forward over D bits of following data replaces it by X·x^D mod P,
// computed per 64-bit half as a product with a 33-bit constant; each product has degree < 96
// and is XORed into the 16 bytes D bits further on. Bit layout (reflected): bit k of a
// 128-bit lane is the coefficient of x^(127-k), bit i of its first 64-bit half that of
// x^(127-i); pclmulqdq of a half with the operand K (bit j = coefficient of x^(64-j)) then
// gives the product in the lane's layout.

// K_D = x·(x^(D-1) mod P) (≡ x^D, degree 1..32) as that operand: bit j = coefficient of x^(64-j).
uint64_t FoldConstant(int d) {
  uint64_t r = 1;  // x^0, normal layout (bit i = coefficient of x^i)
  for (int i = 0; i < d - 1; ++i) {
    r <<= 1;
    if (r & (uint64_t{1} << 32)) r ^= 0x11EDC6F41ull;  // P(x), normal layout
  }
  r <<= 1;
  uint64_t k = 0;
  for (int i = 1; i <= 32; ++i) {
    if (r & (uint64_t{1} << i)) k |= uint64_t{1} << (64 - i);
  }
  return k;
}

// Per lane (first half, second half) constants: a lane's first half is x^64 higher than its
// second, so folding by D takes (K_{D+64}, K_D).
struct FoldConstants {
  alignas(64) uint64_t by2048[8];  // four registers apart (256 bytes)
  alignas(64) uint64_t by512[8];   // one register apart (64 bytes)
  alignas(64) uint64_t lanes[8];   // lane l into lane 3: by 128·(3 - l); lane 3 itself: none
  FoldConstants() {
    for (int l = 0; l < 4; ++l) {
      by2048[2 * l] = FoldConstant(2048 + 64);
      by2048[2 * l + 1] = FoldConstant(2048);
      by512[2 * l] = FoldConstant(512 + 64);
      by512[2 * l + 1] = FoldConstant(512);
      const int d = 128 * (3 - l);
      lanes[2 * l] = d == 0 ? 0 : FoldConstant(d + 64);
      lanes[2 * l + 1] = d == 0 ? 0 : FoldConstant(d);
    }
  }
};

const FoldConstants& Folds() {
  static const FoldConstants* folds = new FoldConstants;
  return *folds;
}

#define PCP_CLMUL_TARGET __attribute__((target("avx512f,avx512dq,avx512vl,vpclmulqdq,pclmul,sse4.2")))

// x·x^D (by the constants k) XOR data.
PCP_CLMUL_TARGET inline __m512i Fold(__m512i x, __m512i k, __m512i data) {
  const __m512i first = _mm512_clmulepi64_epi128(x, k, 0x00);
  const __m512i second = _mm512_clmulepi64_epi128(x, k, 0x11);
  return _mm512_ternarylogic_epi64(first, second, data, 0x96);  // three-way XOR
}
#endif

}  // namespace

namespace crc32c_internal {

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (size > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = (c >> 8) ^ kTable[0][(c ^ *p++) & 0xFF];
    --size;
  }
  while (size >= 8) {
    uint32_t lo = Load32(p) ^ c;
    uint32_t hi = Load32(p + 4);
    c = kTable[7][lo & 0xFF] ^ kTable[6][(lo >> 8) & 0xFF] ^ kTable[5][(lo >> 16) & 0xFF] ^ kTable[4][lo >> 24] ^
        kTable[3][hi & 0xFF] ^ kTable[2][(hi >> 8) & 0xFF] ^ kTable[1][(hi >> 16) & 0xFF] ^ kTable[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    c = (c >> 8) ^ kTable[0][(c ^ *p++) & 0xFF];
    --size;
  }
  return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t c = static_cast<uint32_t>(~crc);
  while (size > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --size;
  }
  c = ThreeWay<kLongBlock>(c, p, size, LongShift());
  c = ThreeWay<kShortBlock>(c, p, size, ShortShift());
  while (size >= 8) {
    c = _mm_crc32_u64(c, Load64(p));
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --size;
  }
  return ~static_cast<uint32_t>(c);
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}

PCP_CLMUL_TARGET uint32_t ExtendClmul(uint32_t crc, const void* data, size_t size) {
  if (size < 256) return ExtendSse42(crc, data, size);
  const FoldConstants& folds = Folds();
  const auto* p = static_cast<const uint8_t*>(data);
  // The register (~crc) XORed into the first 4 bytes, then the register taken as 0.
  __m512i x0 =
      _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  __m512i x1 = _mm512_loadu_si512(p + 64);
  __m512i x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  p += 256;
  size -= 256;
  const __m512i by2048 = _mm512_load_si512(folds.by2048);
  while (size >= 256) {
    x0 = Fold(x0, by2048, _mm512_loadu_si512(p));
    x1 = Fold(x1, by2048, _mm512_loadu_si512(p + 64));
    x2 = Fold(x2, by2048, _mm512_loadu_si512(p + 128));
    x3 = Fold(x3, by2048, _mm512_loadu_si512(p + 192));
    p += 256;
    size -= 256;
  }
  const __m512i by512 = _mm512_load_si512(folds.by512);
  x1 = Fold(x0, by512, x1);
  x2 = Fold(x1, by512, x2);
  x3 = Fold(x2, by512, x3);
  for (; size >= 64; p += 64, size -= 64) x3 = Fold(x3, by512, _mm512_loadu_si512(p));
  // The four lanes into the last.
  const __m512i lanes = _mm512_load_si512(folds.lanes);
  const __m512i t =
      _mm512_xor_si512(_mm512_clmulepi64_epi128(x3, lanes, 0x00), _mm512_clmulepi64_epi128(x3, lanes, 0x11));
  __m128i last = _mm_xor_si128(_mm512_extracti64x2_epi64(x3, 3), _mm512_extracti64x2_epi64(t, 0));
  last = _mm_xor_si128(last, _mm_xor_si128(_mm512_extracti64x2_epi64(t, 1), _mm512_extracti64x2_epi64(t, 2)));
  uint64_t r = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(last)));
  r = _mm_crc32_u64(r, static_cast<uint64_t>(_mm_extract_epi64(last, 1)));
  return ExtendSse42(~static_cast<uint32_t>(r), p, size);
}

bool HasClmul() {
  static const bool has = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul");
  return has;
}
#else
uint32_t ExtendSse42(uint32_t crc, const void* data, size_t size) { return ExtendPortable(crc, data, size); }
bool HasSse42() { return false; }
uint32_t ExtendClmul(uint32_t crc, const void* data, size_t size) { return ExtendPortable(crc, data, size); }
bool HasClmul() { return false; }
#endif

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  using Fn = uint32_t (*)(uint32_t, const void*, size_t);
  static const Fn fn = crc32c_internal::HasClmul()   ? &crc32c_internal::ExtendClmul
                       : crc32c_internal::HasSse42() ? &crc32c_internal::ExtendSse42
                                                     : &crc32c_internal::ExtendPortable;
  return fn(crc, data, size);
}

uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  if (size_b == 0) return crc_a;
  return MultModP(X2nModP(size_b, 3), crc_a) ^ crc_b;
}

}  // namespace pcp
