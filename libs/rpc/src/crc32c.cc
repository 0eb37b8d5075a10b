#include "pcp/rpc/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
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
__attribute__((target("sse4.2"))) inline uint64_t ThreeWay(uint64_t c0, const uint8_t*& p,
                                                           size_t& size,
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
    c = kTable[7][lo & 0xFF] ^ kTable[6][(lo >> 8) & 0xFF] ^ kTable[5][(lo >> 16) & 0xFF] ^
        kTable[4][lo >> 24] ^ kTable[3][hi & 0xFF] ^ kTable[2][(hi >> 8) & 0xFF] ^
        kTable[1][(hi >> 16) & 0xFF] ^ kTable[0][hi >> 24];
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
__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const void* data,
                                                       size_t size) {
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
#else
uint32_t ExtendSse42(uint32_t crc, const void* data, size_t size) {
  return ExtendPortable(crc, data, size);
}
bool HasSse42() { return false; }
#endif

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  using Fn = uint32_t (*)(uint32_t, const void*, size_t);
  static const Fn fn = crc32c_internal::HasSse42() ? &crc32c_internal::ExtendSse42
                                                   : &crc32c_internal::ExtendPortable;
  return fn(crc, data, size);
}

uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  if (size_b == 0) return crc_a;
  return MultModP(X2nModP(size_b, 3), crc_a) ^ crc_b;
}

}  // namespace pcp
