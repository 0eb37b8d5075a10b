#include "sparse.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels.h"

namespace pcp::codec::internal {
namespace {

constexpr uint32_t kInfBits = 0x7f800000u;
constexpr uint32_t kKMask = (1u << 17) - 1;  // k in bits 0..16 (a block holds at most 65536 values)
constexpr uint32_t kRiceBit = 1u << 17;      // index mode: 0 bitmap, 1 Rice-coded gaps
constexpr int kRiceShift = 18;               // Rice parameter in bits 18..22
constexpr uint32_t kRiceMask = 31;
constexpr uint32_t kMaxRice = 16;
constexpr uint32_t kReservedMask = ~((1u << 23) - 1);

inline uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline float LoadF32(const char* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Appends bits LSB-first.
class BitWriter {
 public:
  explicit BitWriter(std::string* out) : out_(out) {}
  void Put(uint32_t value, int n) {  // n ≤ 24
    acc_ |= static_cast<uint64_t>(value) << fill_;
    fill_ += n;
    while (fill_ >= 8) {
      out_->push_back(static_cast<char>(acc_ & 0xff));
      acc_ >>= 8;
      fill_ -= 8;
    }
  }
  void Ones(uint32_t n) {
    while (n >= 16) {
      Put(0xffff, 16);
      n -= 16;
    }
    Put((1u << n) - 1, static_cast<int>(n));
  }
  void Flush() {
    if (fill_ > 0) out_->push_back(static_cast<char>(acc_ & 0xff));
    acc_ = 0;
    fill_ = 0;
  }

 private:
  std::string* out_;
  uint64_t acc_ = 0;
  int fill_ = 0;
};

// Reads bits LSB-first from [data, data + size); reading past the end sets `overrun`.
class BitReader {
 public:
  BitReader(const char* data, size_t size) : data_(reinterpret_cast<const uint8_t*>(data)), bits_(8 * size) {}
  uint32_t Bit() {
    if (at_ >= bits_) {
      overrun_ = true;
      return 0;
    }
    const uint32_t b = (data_[at_ >> 3] >> (at_ & 7)) & 1u;
    ++at_;
    return b;
  }
  uint32_t Bits(uint32_t n) {
    uint32_t v = 0;
    for (uint32_t i = 0; i < n; ++i) v |= Bit() << i;
    return v;
  }
  bool overrun() const { return overrun_; }
  size_t bytes_used() const { return (at_ + 7) / 8; }
  // Whether the bits after the last one read, up to the byte boundary, are zero.
  bool PaddingZero() const {
    if ((at_ & 7) == 0) return true;
    return (data_[at_ >> 3] >> (at_ & 7)) == 0;
  }

 private:
  const uint8_t* data_;
  size_t bits_;
  size_t at_ = 0;
  bool overrun_ = false;
};

uint64_t CodeBytes(uint64_t k, int bits) { return (k * static_cast<uint64_t>(bits) + 7) / 8; }

struct Scratch {
  std::vector<uint32_t> keys;
  std::vector<uint32_t> order;
  std::vector<uint32_t> index;
};
Scratch& ThreadScratch() {
  thread_local Scratch s;
  return s;
}

void AppendBlockHeader(uint32_t word, float scale, std::string* out) {
  char b[kSparseBlockHeader];
  std::memcpy(b, &word, 4);
  std::memcpy(b + 4, &scale, 4);
  out->append(b, sizeof b);
}

void EncodeBlock(const float* x, size_t m, int bits, double density, Scratch& s, std::string* out) {
  // One pass: |x| as f32 bits (ordered as the values are), their max, and a histogram of their
  // exponents (four interleaved, so repeated bins do not wait on each other's increments).
  s.keys.resize(m);
  uint32_t hist[4][256] = {};
  uint32_t max_key = 0;
  size_t i = 0;
  for (; i + 4 <= m; i += 4) {
    for (size_t l = 0; l < 4; ++l) {
      const uint32_t key = std::bit_cast<uint32_t>(x[i + l]) & 0x7fffffffu;
      s.keys[i + l] = key;
      max_key = std::max(max_key, key);
      ++hist[l][key >> 23];
    }
  }
  for (; i < m; ++i) {
    const uint32_t key = std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu;
    s.keys[i] = key;
    max_key = std::max(max_key, key);
    ++hist[0][key >> 23];
  }
  if (max_key >= kInfBits) return AppendBlockHeader(0, std::numeric_limits<float>::quiet_NaN(), out);
  if (max_key < std::bit_cast<uint32_t>(kMinBlockAbsMax)) return AppendBlockHeader(0, 0.0f, out);

  // The threshold: the want-th largest key, found among the keys of the exponent where the
  // count from the top reaches want (nth_element on those few). Keys above it are kept, and of
  // those equal to it the first ones by position until want are; zeros are never kept.
  const size_t want = KeptPerBlock(m, density);
  uint32_t threshold = 0;
  size_t equal_quota = 0;
  size_t equal_keys = 0;  // keys equal to the threshold (all in its bin)
  if (want < m) {
    size_t above = 0;
    int bin = 255;
    for (; bin > 0; --bin) {
      const size_t here = hist[0][bin] + hist[1][bin] + hist[2][bin] + hist[3][bin];
      if (above + here >= want) break;
      above += here;
    }
    // (Branch-free through raw pointers: the thread's scratch is not reloaded per value.)
    if (s.order.size() < m) s.order.resize(m);
    const uint32_t* keys = s.keys.data();
    uint32_t* order = s.order.data();
    size_t in_bin = 0;
    for (size_t j = 0; j < m; ++j) {
      order[in_bin] = keys[j];
      in_bin += (keys[j] >> 23) == static_cast<uint32_t>(bin) ? 1 : 0;
    }
    const size_t need = std::min(want - above, in_bin);  // ≥ 1 unless bin 0 ran out
    if (need > 0) {
      std::nth_element(order, order + (need - 1), order + in_bin, std::greater<uint32_t>());
      threshold = order[need - 1];
      size_t strictly = 0;
      for (size_t j = 0; j + 1 < need; ++j) strictly += order[j] > threshold ? 1 : 0;
      equal_quota = threshold == 0 ? 0 : need - strictly;
      for (size_t j = 0; j < in_bin; ++j) equal_keys += order[j] == threshold ? 1 : 0;
    }
  }
  // (s.index keeps its size across blocks: shrinking and growing it again would zero it.)
  if (s.index.size() < m) s.index.resize(m);
  size_t kept = 0;
  const uint32_t* keys = s.keys.data();
  uint32_t* index = s.index.data();
  if (equal_quota == 0 || equal_quota == equal_keys) {
    // None or every key equal to the threshold kept (nearly every block): a compare per key.
    const uint32_t from = equal_quota == 0 ? threshold + 1 : threshold;
    for (size_t j = 0; j < m; ++j) {
      index[kept] = static_cast<uint32_t>(j);
      kept += keys[j] >= from ? 1 : 0;
    }
  } else {  // the first equal_quota of the keys equal to the threshold
    for (size_t j = 0; j < m; ++j) {
      const uint32_t key = keys[j];
      const size_t equal = key == threshold ? 1 : 0;
      const size_t take = (key > threshold ? 1 : 0) | (equal & (equal_quota > 0 ? 1 : 0));
      equal_quota -= equal & take;
      index[kept] = static_cast<uint32_t>(j);
      kept += take;
    }
  }
  const size_t k = kept;  // ≥ 1: the largest key is above 0; s.index[0, k) are the kept positions

  // Indices: the smaller of a bitmap and Rice-coded gaps (each gap g = index − previous − 1 as
  // g >> r ones, a zero, and the r low bits), with the best r.
  // A geometric gap of mean g is coded best near r = log2(g): the three around it are tried.
  uint64_t best_bits = std::numeric_limits<uint64_t>::max();
  uint32_t best_r = 0;
  const size_t mean_gap = (m - k) / k;
  const uint32_t r0 = mean_gap == 0 ? 0 : static_cast<uint32_t>(std::bit_width(mean_gap) - 1);
  for (uint32_t r = r0 > 0 ? r0 - 1 : 0; r <= std::min(r0 + 1, kMaxRice); ++r) {
    uint64_t total = static_cast<uint64_t>(k) * (1 + r);
    uint32_t prev = 0;
    for (size_t j = 0; j < k; ++j) {
      const uint32_t gap = s.index[j] - prev;  // prev is the previous index + 1
      total += gap >> r;
      prev = s.index[j] + 1;
    }
    if (total < best_bits) {
      best_bits = total;
      best_r = r;
    }
  }
  const bool rice = (best_bits + 7) / 8 < (m + 7) / 8;

  const int levels = 1 << (bits - 1);
  const float absmax = std::bit_cast<float>(max_key);
  const float scale = absmax / static_cast<float>(levels);
  const float inv = static_cast<float>(levels) / absmax;
  AppendBlockHeader(static_cast<uint32_t>(k) | (rice ? kRiceBit | (best_r << kRiceShift) : 0u), scale, out);
  if (rice) {
    BitWriter w(out);
    uint32_t prev = 0;
    for (size_t j = 0; j < k; ++j) {
      const uint32_t gap = s.index[j] - prev;
      prev = s.index[j] + 1;
      w.Ones(gap >> best_r);
      w.Put(0, 1);
      if (best_r > 0) w.Put(gap & ((1u << best_r) - 1), static_cast<int>(best_r));
    }
    w.Flush();
  } else {
    const size_t at = out->size();
    out->resize(at + (m + 7) / 8, '\0');
    uint8_t* map = reinterpret_cast<uint8_t*>(out->data() + at);
    for (size_t j = 0; j < k; ++j) map[s.index[j] >> 3] |= static_cast<uint8_t>(1u << (s.index[j] & 7));
  }
  BitWriter w(out);
  for (size_t j = 0; j < k; ++j) {
    const float v = x[s.index[j]];
    const int mag = std::clamp(static_cast<int>(std::fabs(v) * inv + 0.5f), 1, levels);  // |v|·inv ≤ L
    const uint32_t sign = std::signbit(v) ? 1u : 0u;
    w.Put((sign << (bits - 1)) | static_cast<uint32_t>(mag - 1), bits);
  }
  w.Flush();
}

std::string BlockWhere(uint64_t block, uint64_t start) {
  return absl::StrCat("encoded sparse buffer: block ", block, " (values from ", start, ")");
}

// Walks the blocks of a body. kCheck: every rule of CheckSparse, calling nothing; otherwise
// trusts the body and calls sink.Block(start, m, nan) then sink.Value(position, x̂) per value.
template <bool kCheck, typename Sink>
absl::Status Walk(absl::string_view body, uint64_t count, int bits, size_t block_size, Sink& sink) {
  const char* p = body.data();
  const char* const end = body.data() + body.size();
  const int levels = 1 << (bits - 1);
  uint64_t block = 0;
  for (uint64_t start = 0; start < count; start += block_size, ++block) {
    const size_t m = static_cast<size_t>(std::min<uint64_t>(block_size, count - start));
    if constexpr (kCheck) {
      if (static_cast<size_t>(end - p) < kSparseBlockHeader) {
        return absl::InvalidArgumentError(absl::StrCat(BlockWhere(block, start), ": truncated before its header"));
      }
    }
    const uint32_t word = LoadU32(p);
    const float scale = LoadF32(p + 4);
    p += kSparseBlockHeader;
    const uint32_t k = word & kKMask;
    const bool rice = (word & kRiceBit) != 0;
    const uint32_t r = (word >> kRiceShift) & kRiceMask;
    const bool nan = std::isnan(scale);
    if constexpr (kCheck) {
      if ((word & kReservedMask) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(BlockWhere(block, start), ": reserved bits set"));
      }
      if (k > m) {
        return absl::InvalidArgumentError(absl::StrCat(BlockWhere(block, start), ": keeps ", k, " values of ", m));
      }
      if (r > kMaxRice || (!rice && r != 0) || (k == 0 && (word & ~kKMask) != 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat(BlockWhere(block, start), ": bad index mode or Rice parameter ", r));
      }
      if (!nan && !(scale >= 0 && scale <= std::numeric_limits<float>::max())) {
        return absl::InvalidArgumentError(
            absl::StrCat(BlockWhere(block, start), ": scale ", scale, " (must be finite and >= 0, or NaN)"));
      }
      if (nan && k != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(BlockWhere(block, start), ": a NaN scale (non-finite block) must keep no values, keeps ", k));
      }
    } else {
      sink.Block(start, m, nan);
    }
    if (k == 0) continue;
    // Positions: collected first (the codes follow the index section, whose length a Rice
    // stream only tells once read).
    thread_local std::vector<uint32_t> positions;
    positions.resize(k);
    if (rice) {
      BitReader reader(p, static_cast<size_t>(end - p));
      uint32_t next = 0;  // the previous index + 1
      for (uint32_t j = 0; j < k; ++j) {
        uint32_t q = 0;
        while (reader.Bit() == 1) {
          ++q;
          if constexpr (kCheck) {
            if (q > m || reader.overrun()) break;
          }
        }
        const uint32_t low = r > 0 ? reader.Bits(r) : 0;
        const uint64_t index = static_cast<uint64_t>(next) + ((static_cast<uint64_t>(q) << r) | low);
        if constexpr (kCheck) {
          if (reader.overrun()) {
            return absl::InvalidArgumentError(
                absl::StrCat(BlockWhere(block, start), ": Rice-coded indices run past the end at index ", j));
          }
          if (index >= m) {
            return absl::InvalidArgumentError(
                absl::StrCat(BlockWhere(block, start), ": index ", index, " of value ", j, " is not below ", m));
          }
        }
        positions[j] = static_cast<uint32_t>(index);
        next = static_cast<uint32_t>(index) + 1;
      }
      if constexpr (kCheck) {
        if (!reader.PaddingZero()) {
          return absl::InvalidArgumentError(absl::StrCat(BlockWhere(block, start), ": padding bits set"));
        }
      }
      p += reader.bytes_used();
    } else {
      const size_t map_bytes = (m + 7) / 8;
      if constexpr (kCheck) {
        if (static_cast<size_t>(end - p) < map_bytes) {
          return absl::InvalidArgumentError(absl::StrCat(BlockWhere(block, start), ": bitmap truncated"));
        }
        if (m % 8 != 0 && (static_cast<uint8_t>(p[map_bytes - 1]) >> (m % 8)) != 0) {
          return absl::InvalidArgumentError(absl::StrCat(BlockWhere(block, start), ": bitmap bits past the block set"));
        }
      }
      const uint8_t* map = reinterpret_cast<const uint8_t*>(p);
      uint32_t j = 0;
      for (size_t byte = 0; byte < map_bytes; ++byte) {
        uint32_t v = map[byte];
        while (v != 0) {
          if constexpr (kCheck) {
            if (j == k) {
              return absl::InvalidArgumentError(
                  absl::StrCat(BlockWhere(block, start), ": bitmap has more set bits than its ", k, " values"));
            }
          }
          positions[j++] = static_cast<uint32_t>(8 * byte + static_cast<size_t>(std::countr_zero(v)));
          v &= v - 1;
        }
      }
      if constexpr (kCheck) {
        if (j != k) {
          return absl::InvalidArgumentError(
              absl::StrCat(BlockWhere(block, start), ": bitmap has ", j, " set bits for ", k, " values"));
        }
      }
      p += map_bytes;
    }
    const size_t code_bytes = static_cast<size_t>(CodeBytes(k, bits));
    if constexpr (kCheck) {
      if (static_cast<size_t>(end - p) < code_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(BlockWhere(block, start), ": values truncated"));
      }
      const uint32_t used = static_cast<uint32_t>((k * static_cast<uint32_t>(bits)) % 8);
      if (used != 0 && (static_cast<uint8_t>(p[code_bytes - 1]) >> used) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(BlockWhere(block, start), ": padding bits set"));
      }
    } else {
      const uint8_t* codes = reinterpret_cast<const uint8_t*>(p);
      const uint32_t mask = (1u << (bits - 1)) - 1;
      for (uint32_t j = 0; j < k; ++j) {
        const size_t bit = static_cast<size_t>(j) * static_cast<size_t>(bits);
        const uint32_t c = (codes[bit >> 3] >> (bit & 7)) & ((1u << bits) - 1);
        const float mag = static_cast<float>((c & mask) + 1) * scale;
        sink.Value(start + positions[j], (c >> (bits - 1)) != 0 ? -mag : mag);
      }
    }
    p += code_bytes;
    (void)levels;
  }
  if constexpr (kCheck) {
    if (p != end) {
      return absl::InvalidArgumentError(
          absl::StrCat("encoded sparse buffer: ", end - p, " bytes after the last block"));
    }
  }
  return absl::OkStatus();
}

struct NoSink {
  void Block(uint64_t, size_t, bool) {}
  void Value(uint64_t, float) {}
};

template <bool kAdd>
struct OutSink {
  float* out;
  float weight;
  void Block(uint64_t start, size_t m, bool nan) {
    if (nan) {
      const float v = std::numeric_limits<float>::quiet_NaN();
      for (size_t i = 0; i < m; ++i) {
        if constexpr (kAdd) {
          out[start + i] += v;
        } else {
          out[start + i] = v;
        }
      }
    } else if constexpr (!kAdd) {
      std::fill(out + start, out + start + m, 0.0f);
    }
  }
  void Value(uint64_t i, float v) {
    if constexpr (kAdd) {
      out[i] += weight * v;
    } else {
      out[i] = v;
    }
  }
};

}  // namespace

size_t KeptPerBlock(size_t m, double density) {
  const double k = std::ceil(density * static_cast<double>(m));
  return std::clamp<size_t>(k >= 1 ? static_cast<size_t>(k) : 1, 1, std::max<size_t>(m, 1));
}

uint64_t MaxSparseBodySize(uint64_t count, int bits, uint64_t block_size, double density) {
  const uint64_t full = count / block_size, rest = count % block_size;
  auto one = [&](uint64_t m) {
    return kSparseBlockHeader + (m + 7) / 8 + CodeBytes(KeptPerBlock(static_cast<size_t>(m), density), bits);
  };
  return full * one(block_size) + (rest > 0 ? one(rest) : 0);
}

uint64_t MinSparseBodySize(uint64_t count, uint64_t block_size) {
  return kSparseBlockHeader * ((count + block_size - 1) / block_size);
}

void EncodeSparse(absl::Span<const float> values, int bits, size_t block_size, double density, std::string* out) {
  Scratch& s = ThreadScratch();
  for (size_t start = 0; start < values.size(); start += block_size) {
    EncodeBlock(values.data() + start, std::min(block_size, values.size() - start), bits, density, s, out);
  }
}

absl::Status CheckSparse(absl::string_view body, uint64_t count, int bits, size_t block_size) {
  NoSink sink;
  return Walk<true>(body, count, bits, block_size, sink);
}

template <bool kAdd>
void DecodeSparse(absl::string_view body, int bits, size_t block_size, float weight, absl::Span<float> out) {
  OutSink<kAdd> sink{out.data(), weight};
  (void)Walk<false>(body, out.size(), bits, block_size, sink);
}

template void DecodeSparse<false>(absl::string_view, int, size_t, float, absl::Span<float>);
template void DecodeSparse<true>(absl::string_view, int, size_t, float, absl::Span<float>);

}  // namespace pcp::codec::internal
