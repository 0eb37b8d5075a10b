// f32 values read where they lie: in one array, or in consecutive byte pieces such as the
// slices of a gRPC receive buffer, split anywhere (a value may straddle two or more pieces).
// Lets a receiver hand a chunk's values on without first copying them into one array.
//
//   F32Pieces values(pieces);                          // absl::Span<const absl::string_view>
//   values.ForEachRun(0, values.size(), [&](size_t index, const char* bytes, size_t count) {
//     for (size_t j = 0; j < count; ++j) out[index + j] = F32Pieces::Load(bytes, j);
//   });
//   F32Pieces whole(absl::MakeConstSpan(v, n));        // one array: a single run
//
// Runs come in order of their values; their bytes need not be aligned (read them with Load).
// A value split between pieces comes as a run of its own, from a 4-byte bounce. Views: the
// pieces (and the array of pieces) must outlive the F32Pieces, which is cheap to copy.
#ifndef PCP_BASE_F32_PIECES_H_
#define PCP_BASE_F32_PIECES_H_

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pcp {

class F32Pieces {
 public:
  // The values of one array.
  explicit F32Pieces(absl::Span<const float> values)
      : one_(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)), size_(values.size()) {}
  // The values whose bytes are `pieces` one after another; their total size must be a
  // multiple of 4 (trailing bytes of a partial value are ignored).
  explicit F32Pieces(absl::Span<const absl::string_view> pieces) : pieces_(pieces) {
    size_t bytes = 0;
    for (absl::string_view p : pieces) bytes += p.size();
    size_ = bytes / sizeof(float);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The byte pieces (one for an array).
  absl::Span<const absl::string_view> pieces() const {
    return pieces_.empty() ? absl::Span<const absl::string_view>(&one_, 1) : pieces_;
  }

  // Value `j` of `bytes` (any alignment).
  static float Load(const char* bytes, size_t j) {
    float v;
    std::memcpy(&v, bytes + j * sizeof(float), sizeof v);
    return v;
  }

  // Calls run(index, bytes, count) for the values [begin, end) (end <= size()), in order:
  // `count` consecutive values from value `index` on, at `bytes`.
  template <typename Run>
  void ForEachRun(size_t begin, size_t end, Run&& run) const {
    const absl::Span<const absl::string_view> all = pieces();
    size_t at = 0;  // byte offset of piece i's first byte
    size_t next = begin;
    for (size_t i = 0; i < all.size() && next < end; at += all[i].size(), ++i) {
      const size_t piece_end = at + all[i].size();
      if (piece_end <= next * sizeof(float)) continue;  // before the next value (or empty)
      // Value `next` starts in this piece: the whole values here, then one that runs on.
      const size_t whole_end = std::min(end, piece_end / sizeof(float));
      if (whole_end > next) {
        run(next, all[i].data() + (next * sizeof(float) - at), whole_end - next);
        next = whole_end;
      }
      if (next < end && next * sizeof(float) < piece_end) {
        char bounce[sizeof(float)];
        Gather(all, i, next * sizeof(float) - at, bounce);
        run(next, static_cast<const char*>(bounce), size_t{1});
        ++next;
      }
    }
  }

  // All the values, copied into one array.
  void CopyTo(float* out) const {
    ForEachRun(0, size_, [out](size_t index, const char* bytes, size_t count) {
      std::memcpy(out + index, bytes, count * sizeof(float));
    });
  }
  std::vector<float> ToVector() const {
    std::vector<float> v(size_);
    CopyTo(v.data());
    return v;
  }

 private:
  // The 4 bytes from byte `offset` of piece `i` on, across the following pieces.
  static void Gather(absl::Span<const absl::string_view> all, size_t i, size_t offset, char* out) {
    size_t got = 0;
    for (; got < sizeof(float) && i < all.size(); ++i, offset = 0) {
      const size_t n = std::min(sizeof(float) - got, all[i].size() - offset);
      std::memcpy(out + got, all[i].data() + offset, n);
      got += n;
    }
  }

  absl::string_view one_;
  absl::Span<const absl::string_view> pieces_;
  size_t size_ = 0;
};

}  // namespace pcp

#endif  // PCP_BASE_F32_PIECES_H_
