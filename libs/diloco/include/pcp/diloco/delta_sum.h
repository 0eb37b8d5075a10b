// Streaming aggregation: a round's Δs summed chunk by chunk as they arrive, so the shepherd
// holds one sum of |Δ| values however many workers send, instead of every Δ until the round
// closes.
//
//   std::vector<absl::Span<float>> sums = ...;   // zeroed, one per Δ tensor; the caller owns them
//   DeltaSum sum(sums);
//   // per worker, once its header (declared norm, tokens) has been judged:
//   std::unique_ptr<DeltaSum::Contribution> c = sum.Begin("node-3", /*weight=*/tokens, verdict.scale, declared_norm);
//   PCP_RETURN_IF_ERROR(c->Add(tensor, element_offset, decoded_chunk));   // per chunk, any thread
//   // (or c->Add(tensor, element_offset, values, sum_of_squares) from a StreamTo sink: the
//   // values F32Pieces where gRPC received them)
//   ...
//   sum.Finish();   // no more adds; sums[i] now hold the weighted average
//   for (const std::string& who : sum.liars()) { ...count a refusal... }
//   if (sum.tainted()) { ...roll the round back... }
//
// How a refused Δ leaves no trace:
//   - A Δ is judged on the norm its sender declares before the first chunk (pcp.v1
//     ResultHeader). Rejected: Begin is never called, its chunks are checked and dropped.
//     Clipped: every chunk is scaled by the verdict's factor as it is added.
//   - Each chunk is checked before it is added: finite, and the running norm of the Δ so far
//     within the declared norm (+1e-6 relative for summation order). A chunk that breaks the
//     declaration is not added, Add fails, and the sum is tainted(): the sender lied, and the
//     chunks it had sent before are in the sum, so the caller discards the round (a rollback,
//     redone without the liar). An honest sender's chunks never taint.
//   - A chunk is added whole or not at all (a chunk is one message whose CRC was checked).
//
// Weights are per element: a Δ adds its weight to the ranges its chunks covered, and Finish
// divides each element by the weight that reached it. A Δ cut off mid-send (its worker died)
// thus counts where its chunks arrived and nowhere else; an element no Δ reached averages to 0.
//
// Memory: the caller's sums (|Δ| floats) plus a few entries per chunk boundary. Thread-safe:
// contributions from different streams add concurrently (the sums are striped over 256 locks
// of 64 Ki elements each); one Contribution is fed by one stream at a time.
#ifndef PCP_DILOCO_DELTA_SUM_H_
#define PCP_DILOCO_DELTA_SUM_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/base/f32_pieces.h"

namespace pcp::diloco {

// How the shepherd combines a round's Δs (job YAML diloco.aggregation).
//   buffered:  every Δ is kept whole until the round closes (the round's median can judge
//              them; a trimmed mean is possible); memory workers × |Δ|.
//   streaming: each Δ is judged on its declared norm against past rounds' median and the cap,
//              and summed chunk by chunk as it arrives (DeltaSum); memory |Δ|.
//   auto:      buffered while the round's Δs fit kDeltaStagingBytes (and whenever the job asks
//              for a trimmed mean), else streaming.
enum class Aggregation { kAuto, kStreaming, kBuffered };
inline constexpr std::pair<Aggregation, absl::string_view> kAggregationNames[] = {
    {Aggregation::kAuto, "auto"},
    {Aggregation::kStreaming, "streaming"},
    {Aggregation::kBuffered, "buffered"},
};
// The staging area for whole Δs under `auto`: 256 MiB.
inline constexpr int64_t kDeltaStagingBytes = int64_t{256} << 20;
// Whether a round of `workers` Δs of `delta_elements` f32 values each is streamed.
inline bool StreamsDeltas(Aggregation mode, int64_t workers, int64_t delta_elements, bool trimmed_mean) {
  if (mode != Aggregation::kAuto) return mode == Aggregation::kStreaming;
  return !trimmed_mean && workers * delta_elements * 4 > kDeltaStagingBytes;
}

class DeltaSum {
 public:
  // `sums`: one zeroed buffer per Δ tensor, kept alive by the caller until Finish.
  explicit DeltaSum(std::vector<absl::Span<float>> sums);
  DeltaSum(const DeltaSum&) = delete;
  DeltaSum& operator=(const DeltaSum&) = delete;

  class Contribution {
   public:
    // Adds the decoded values of tensor `tensor` from element `offset` (chunks in any order
    // the stream sends them, each range once). InvalidArgument for a range outside the tensor;
    // FailedPrecondition when the values are not finite or take the Δ's norm above the
    // declared one (nothing of this chunk is added; the sender is a liar(), the sum tainted
    // if something of it was added; later calls fail); FailedPrecondition too once Finish ran.
    // A chunk is added whole or not at all, also when Finish runs meanwhile.
    // `sum_of_squares`, when given, must be SumOfSquares(values) (pcp/base/sum_of_squares.h),
    // e.g. as TensorAssembler::StreamTo computes it while checking the chunk's CRC: Add then
    // skips its own pass over the values for the norm check (same bits either way).
    absl::Status Add(size_t tensor, int64_t offset, absl::Span<const float> values,
                     std::optional<double> sum_of_squares = std::nullopt) {
      return Add(tensor, offset, F32Pieces(values), sum_of_squares);
    }
    // The same for values where they lie in the received pieces (a StreamTo sink's): added
    // from there, no copy; the same bits as the values copied into one array and added.
    absl::Status Add(size_t tensor, int64_t offset, const F32Pieces& values,
                     std::optional<double> sum_of_squares = std::nullopt);
    // The norm of the values added (or refused) so far.
    double norm() const;
    int64_t elements() const { return elements_; }

   private:
    friend class DeltaSum;
    Contribution(DeltaSum* sum, std::string who, double weight, double scale, double declared_norm)
        : sum_(sum), who_(std::move(who)), weight_(weight), scale_(scale), declared_norm_(declared_norm) {}
    DeltaSum* sum_;
    std::string who_;
    double weight_, scale_, declared_norm_;
    double sum_squares_ = 0;
    int64_t elements_ = 0;
    bool failed_ = false;
  };

  // A Δ from `who` of `weight` (> 0, e.g. its tokens), to be added scaled by `scale` (1:
  // accepted; < 1: clipped), whose sender declared the L2 norm `declared_norm` of its decoded
  // values.
  std::unique_ptr<Contribution> Begin(std::string who, double weight, double scale, double declared_norm);

  // True once a contribution broke its declaration after some of its chunks were added, or
  // Taint was called (the caller found the sender dishonest otherwise after chunks were added).
  bool tainted() const { return tainted_.load(); }
  void Taint() { tainted_ = true; }
  // Senders whose values broke their declaration, in the order caught.
  std::vector<std::string> liars() const;
  // Stops every contribution (waiting for chunks being added) and turns the sums into the
  // weighted average (per element: Σ weight·scale·Δ / Σ weight of the Δs that reached it; 0
  // where none did). Call once.
  void Finish();
  // Elements that at least one Δ reached (valid after Finish).
  int64_t covered_elements() const { return covered_; }

 private:
  static constexpr int kStripeShift = 16;  // 64 Ki elements per lock stripe
  static constexpr int kStripes = 256;
  void Accumulate(size_t tensor, int64_t offset, const F32Pieces& values, float factor);
  void AddWeight(size_t tensor, int64_t begin, int64_t end, double weight);

  std::vector<absl::Span<float>> sums_;
  // Adds hold it shared for a whole chunk; Finish exclusively, so no chunk is half added.
  std::shared_mutex close_mu_;
  bool closed_ = false;
  mutable std::mutex liars_mu_;
  std::vector<std::string> liars_;
  std::vector<int64_t> base_;  // flat offset of each tensor (for the stripes)
  std::vector<std::mutex> stripes_;
  std::mutex weights_mu_;
  // Per tensor, changes of (weight, number of Δs) at element boundaries: a difference array
  // over the ranges the chunks covered.
  struct Step {
    double weight = 0;
    int64_t count = 0;
  };
  std::vector<std::map<int64_t, Step>> weight_steps_;
  std::atomic<bool> tainted_{false};
  int64_t covered_ = 0;
};

}  // namespace pcp::diloco

#endif  // PCP_DILOCO_DELTA_SUM_H_
