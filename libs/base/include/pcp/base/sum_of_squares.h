// Σ v² of f32 values in double, fast and in one fixed order, whole or fed piece by piece.
//
//   double s = SumOfSquares(values);              // NaN or +inf if a value is NaN or ±inf
//
//   SquareLanes lanes;                            // the same sum, fed as the values arrive:
//   lanes.AddGroups(v, 3);                        // v[0..48): whole groups of kSquareLanes
//   lanes.AddGroups(v + 48, 2);                   // v[48..80)
//   double t = lanes.Finish(v + 80, 5);           // the last n % 16 values; t == SumOfSquares(v[0..85))
//
//   SquareBytes bytes;                            // the same sum, fed as bytes split anywhere:
//   bytes.Add(p, 7); bytes.Add(p + 7, 333);       // p: the 340 bytes of v[0..85)
//   double u = bytes.Finish();                    // u == t
//
// The order: sixteen partial sums, lane j holding the values j, j + 16, j + 32, ... of each
// whole group of 16 (from the first value on), the n % 16 values after the last whole group
// summed left to right into one double, to which lanes 0..15 are then added in order. The
// lanes are independent, so the compiler keeps them in vector registers and the additions do
// not wait on one another (~4 ms per 100 MB from memory instead of ~40 for one running sum).
// The result differs from a left-to-right sum by rounding only (relative ~1e-16 × the element
// count at worst); SquareLanes fed the same values in any split into whole groups gives the
// same bits as SumOfSquares. f32 values up to 3.4e38 do not overflow.
// Used by the Δ norm checks (pcp/diloco/screening.h, delta_sum.h), the receiver's check of a
// streamed chunk (pcp/rpc/tensor_chunks.h, SquareBytes) and the worker's declared norm (pcp/codec/encoded.h).
#ifndef PCP_BASE_SUM_OF_SQUARES_H_
#define PCP_BASE_SUM_OF_SQUARES_H_

#include <cstddef>
#include <cstring>

#include "absl/types/span.h"

namespace pcp {

inline constexpr size_t kSquareLanes = 16;

class SquareLanes {
 public:
  // Adds the squares of `groups` × kSquareLanes values at `v` to the lanes.
  void AddGroups(const float* v, size_t groups) { AddGroupBytes(reinterpret_cast<const char*>(v), groups); }
  // The same for values at `bytes`, which need not be aligned.
  void AddGroupBytes(const char* bytes, size_t groups) {
    double lane[kSquareLanes];
    for (size_t j = 0; j < kSquareLanes; ++j) lane[j] = lane_[j];
    for (size_t g = 0; g < groups; ++g, bytes += kSquareLanes * sizeof(float)) {
      for (size_t j = 0; j < kSquareLanes; ++j) {
        float v;
        std::memcpy(&v, bytes + j * sizeof(float), sizeof v);
        const double d = static_cast<double>(v);
        lane[j] += d * d;
      }
    }
    for (size_t j = 0; j < kSquareLanes; ++j) lane_[j] = lane[j];
  }
  // The sum: the `n` (< kSquareLanes) values at `tail` that follow the last whole group, then
  // the lanes.
  double Finish(const float* tail, size_t n) const {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(tail[i]);
      sum += d * d;
    }
    for (size_t j = 0; j < kSquareLanes; ++j) sum += lane_[j];
    return sum;
  }

 private:
  double lane_[kSquareLanes] = {};
};

// Σ v² of `values` (the order above); NaN or +inf when a value is NaN or ±inf.
double SumOfSquares(absl::Span<const float> values);

// The same sum over f32 values fed as bytes in any split (a value may straddle two calls),
// e.g. a chunk checked where gRPC's slices hold it: SumOfSquares of the values, same bits.
//
//   SquareBytes squares;
//   for (absl::string_view piece : pieces) squares.Add(piece.data(), piece.size());
//   double s = squares.Finish();
class SquareBytes {
 public:
  // The next `n` bytes of values.
  void Add(const char* bytes, size_t n) {
    if (carry_ > 0) {  // complete the group begun by earlier bytes
      const size_t take = n < kGroupBytes - carry_ ? n : kGroupBytes - carry_;
      std::memcpy(group_ + carry_, bytes, take);
      carry_ += take;
      bytes += take;
      n -= take;
      if (carry_ < kGroupBytes) return;
      lanes_.AddGroupBytes(group_, 1);
      carry_ = 0;
    }
    const size_t groups = n / kGroupBytes;
    lanes_.AddGroupBytes(bytes, groups);
    carry_ = n - groups * kGroupBytes;
    std::memcpy(group_, bytes + groups * kGroupBytes, carry_);
  }
  // The sum of the values fed so far (whole values: bytes fed a multiple of 4).
  double Finish() const {
    float tail[kSquareLanes];
    std::memcpy(tail, group_, carry_);
    return lanes_.Finish(tail, carry_ / sizeof(float));
  }

 private:
  static constexpr size_t kGroupBytes = kSquareLanes * sizeof(float);
  SquareLanes lanes_;
  char group_[kGroupBytes];
  size_t carry_ = 0;  // bytes in group_: the values after the last whole group
};

}  // namespace pcp

#endif  // PCP_BASE_SUM_OF_SQUARES_H_
