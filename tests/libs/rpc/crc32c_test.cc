#include "pcp/rpc/crc32c.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pcp {
namespace {

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xFF);
  return s;
}

// Known answers: the CRC-32C check value and the iSCSI test vectors of RFC 3720, B.4.
struct Vector {
  std::string data;
  uint32_t crc;
};
std::vector<Vector> KnownVectors() {
  std::string ascending(32, '\0'), descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  return {
      {"", 0x00000000u},
      {"a", 0xC1D04330u},
      {"123456789", 0xE3069283u},
      {std::string(32, '\0'), 0x8A9136AAu},
      {std::string(32, '\xFF'), 0x62A8AB43u},
      {ascending, 0x46DD794Eu},
      {descending, 0x113FDB5Cu},
  };
}

TEST(Crc32cTest, KnownVectors) {
  for (const Vector& v : KnownVectors()) {
    EXPECT_EQ(Crc32c(v.data), v.crc) << "size " << v.data.size();
    EXPECT_EQ(crc32c_internal::ExtendPortable(0, v.data.data(), v.data.size()), v.crc);
    if (crc32c_internal::HasClmul()) {
      EXPECT_EQ(crc32c_internal::ExtendClmul(0, v.data.data(), v.data.size()), v.crc);
    }
    if (crc32c_internal::HasSse42()) {
      EXPECT_EQ(crc32c_internal::ExtendSse42(0, v.data.data(), v.data.size()), v.crc);
    }
  }
}

// Both implementations agree on every length around the hardware path's block boundaries
// (8, 3 x 256, 3 x 8192 bytes) and at every alignment.
TEST(Crc32cTest, ImplementationsAgree) {
  if (!crc32c_internal::HasSse42()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  const std::string data = RandomBytes(3 * 8192 * 2 + 1000, 1);
  std::vector<size_t> sizes = {
      0, 1, 7, 8, 9, 63, 64, 767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 3 * 8192 + 768 + 13, 2 * 3 * 8192};
  for (size_t size : sizes) {
    for (size_t align = 0; align < 8; ++align) {
      const char* p = data.data() + align;
      EXPECT_EQ(crc32c_internal::ExtendSse42(0x12345678u, p, size),
                crc32c_internal::ExtendPortable(0x12345678u, p, size))
          << "size " << size << " align " << align;
    }
  }
}

// The folding implementation agrees with the table on every length around its block
// boundaries (256 bytes per loop, 64 per register, the crc32-instruction tail), at every
// alignment, from several starting CRCs.
TEST(Crc32cTest, ClmulAgreesWithTheTable) {
  if (!crc32c_internal::HasClmul()) GTEST_SKIP() << "no AVX-512 VPCLMULQDQ on this CPU";
  const std::string data = RandomBytes((1 << 20) + 1000, 3);
  std::vector<size_t> sizes = {0,   1,   15,  16,  17,  63,  64,  255,  256,  257,  319,        320,    321,
                               383, 384, 511, 512, 513, 767, 768, 1000, 4096, 4099, 65536 + 77, 1 << 20};
  for (size_t s = 257; s < 1100; s += 37) sizes.push_back(s);
  for (size_t size : sizes) {
    for (size_t align = 0; align < 64; align += 3) {
      for (uint32_t start : {0u, 0x12345678u, 0xFFFFFFFFu}) {
        const char* p = data.data() + align;
        ASSERT_EQ(crc32c_internal::ExtendClmul(start, p, size), crc32c_internal::ExtendPortable(start, p, size))
            << "size " << size << " align " << align << " start " << start;
      }
    }
  }
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string data = RandomBytes(100000, 2);
  const uint32_t whole = Crc32c(data);
  for (size_t split : {size_t{0}, size_t{1}, size_t{4097}, size_t{65536}, data.size()}) {
    uint32_t c = Crc32c(data.data(), split);
    c = Crc32cExtend(c, data.data() + split, data.size() - split);
    EXPECT_EQ(c, whole) << "split " << split;
  }
}

TEST(Crc32cTest, CombineEqualsWhole) {
  const std::string data = RandomBytes(3 << 20, 3);
  const uint32_t whole = Crc32c(data);
  for (size_t split : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20, data.size() - 1, data.size()}) {
    const uint32_t a = Crc32c(data.data(), split);
    const uint32_t b = Crc32c(data.data() + split, data.size() - split);
    EXPECT_EQ(Crc32cCombine(a, b, data.size() - split), whole) << "split " << split;
  }
  EXPECT_NE(Crc32cCombine(Crc32c("abc"), Crc32c("def"), 3), Crc32c("abcdeg"));
}

TEST(Crc32cTest, DetectsSingleBitFlip) {
  std::string data = RandomBytes(1 << 20, 4);
  const uint32_t before = Crc32c(data);
  data[123456] ^= 0x10;
  EXPECT_NE(Crc32c(data), before);
}

}  // namespace
}  // namespace pcp
