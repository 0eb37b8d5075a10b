// Streaming DiLoCo (Douillard et al. 2025, arXiv 2501.18512): the parameters split into P
// fragments that are synchronised on a staggered schedule, so each sync carries |θ|/P values
// and a worker's peak bandwidth drops P×; a worker may keep training while a fragment's
// outer step is in flight and merge the result a few steps later.
//
// PCP's schedule (job YAML diloco.streaming, diloco.inner_steps = H):
//   - a shepherd round is H/P inner steps and syncs one fragment, p = (round − 1) mod P, so
//     each fragment syncs every H steps, fragment p at steps offset by p·H/P;
//   - the worker's Δ for that round is θ_p(global, as last merged) − θ_p(local, now): the
//     outer gradient of fragment p over its last H steps; the other fragments keep training
//     locally, never reset;
//   - the shepherd averages the fragment's Δs and applies the outer Nesterov step to that
//     fragment only (momentum is per coordinate, so per fragment);
//   - the worker merges the new global θ_p `overlap_steps` (τ_o) inner steps into the next
//     round: with τ_o = 0 it waits for it before the next round's first step and replaces its
//     local θ_p (plain DiLoCo's reset, for that fragment); with τ_o > 0 it trains on while
//     the Δ goes up and the result comes down, then mixes
//         θ_p(local) ← α·θ_p(local) + (1 − α)·θ_p(global)
//     (the paper's convention: α weighs the local parameters; its default 0.5).
//
// Fragments here are contiguous, balanced ranges of the flattened parameter list (tensors in
// program order, concatenated): fragment p holds elements [⌊p·n/P⌋, ⌊(p+1)·n/P⌋), so a sync
// carries at most ⌈n/P⌉ values whatever the model's layer sizes. The paper groups whole
// layers (strided); contiguous ranges of program order are layer groups too (the GPT's
// parameters are in layer order) with a tensor split at most at each fragment boundary, and
// they keep every sync within |θ|/P for any model (one embedding larger than |θ|/P would
// break that bound for whole-layer groups).
//
//   PCP_ASSIGN_OR_RETURN(FragmentPlan plan, FragmentPlan::Create({8320, 16384, 16384}, 4));
//   int64_t p = plan.FragmentOfRound(round);
//   for (const Segment& s : plan.segments(p)) { ...elements [s.begin, s.end) of tensor s.tensor... }
#ifndef PCP_DILOCO_STREAMING_H_
#define PCP_DILOCO_STREAMING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pcp::diloco {

// Job YAML diloco.streaming.
struct StreamingOptions {
  int64_t fragments = 1;      // P; inner_steps must be a multiple of P
  int64_t overlap_steps = 0;  // τ_o: steps a fragment's result may arrive late; < inner_steps / P
  double alpha = 0.5;         // with τ_o > 0: the local share of the merge

  // Off (plain DiLoCo) with one fragment and no overlap.
  bool enabled() const { return fragments > 1 || overlap_steps > 0; }
  bool operator==(const StreamingOptions&) const = default;
};

// Elements [begin, end) of parameter `tensor`.
struct Segment {
  size_t tensor = 0;
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const Segment&) const = default;
};

class FragmentPlan {
 public:
  // `sizes`: the element count of each parameter, in program order. InvalidArgument when
  // fragments < 1 or more than the elements.
  static absl::StatusOr<FragmentPlan> Create(absl::Span<const int64_t> sizes, int64_t fragments);

  int64_t fragments() const { return static_cast<int64_t>(fragments_.size()); }
  // The fragment round `round` (from 1) syncs.
  int64_t FragmentOfRound(uint64_t round) const {
    return static_cast<int64_t>((round - 1) % static_cast<uint64_t>(fragments()));
  }
  const std::vector<Segment>& segments(int64_t p) const { return fragments_[static_cast<size_t>(p)]; }
  int64_t elements(int64_t p) const;
  // A segment's name on the wire: the parameter's name when it is whole, else name[begin:end].
  std::string SegmentName(absl::string_view param_name, const Segment& s) const;

 private:
  std::vector<int64_t> sizes_;
  std::vector<std::vector<Segment>> fragments_;
};

// θ_local ← α·θ_local + (1 − α)·θ_global, elementwise (sizes must match).
void MixInto(absl::Span<float> local, absl::Span<const float> global, float alpha);

}  // namespace pcp::diloco

#endif  // PCP_DILOCO_STREAMING_H_
