#include "round_sum.h"

namespace pcp::shepherd {
namespace {

std::vector<absl::Span<float>> SpansOf(std::vector<Tensor>& tensors) {
  std::vector<absl::Span<float>> spans;
  for (Tensor& t : tensors) spans.push_back(absl::MakeSpan(t.data<float>(), static_cast<size_t>(t.num_elements())));
  return spans;
}

}  // namespace

std::shared_ptr<RoundSum> RoundSum::Create(const std::vector<TensorSpec>& specs, const diloco::DeltaScreen& screen,
                                           const diloco::ScreenThreshold& threshold, uint32_t steps, uint64_t tokens) {
  std::vector<Tensor> buffers;
  // Zero-filled by Tensor (large ones are fresh kernel pages, resident only once written),
  // on huge pages where the kernel has them: every Δ's add sweeps the whole sum.
  for (const TensorSpec& spec : specs) AdviseHugePages(buffers.emplace_back(DType::kF32, spec.shape));
  return std::make_shared<RoundSum>(std::move(buffers), screen, threshold, steps, tokens);
}

RoundSum::RoundSum(std::vector<Tensor> buffers, const diloco::DeltaScreen& screen,
                   const diloco::ScreenThreshold& threshold, uint32_t steps, uint64_t tokens)
    : sums(std::move(buffers)),
      sum(SpansOf(sums)),
      screen(screen),
      threshold(threshold),
      steps(steps),
      tokens(tokens) {}

}  // namespace pcp::shepherd
