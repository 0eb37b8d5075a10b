#include "round_sum.h"

#include <algorithm>

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
  for (const TensorSpec& spec : specs) {
    Tensor t(DType::kF32, spec.shape);
    std::fill_n(t.data<float>(), t.num_elements(), 0.0f);
    buffers.push_back(std::move(t));
  }
  return std::make_shared<RoundSum>(std::move(buffers), screen, threshold, steps, tokens);
}

RoundSum::RoundSum(std::vector<Tensor> buffers, const diloco::DeltaScreen& screen,
                   const diloco::ScreenThreshold& threshold, uint32_t steps, uint64_t tokens)
    : sums(std::move(buffers)), sum(SpansOf(sums)), screen(screen), threshold(threshold), steps(steps), tokens(tokens) {}

}  // namespace pcp::shepherd
