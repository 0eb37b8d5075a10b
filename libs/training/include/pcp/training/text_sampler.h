// Autoregressive sampling from a GPT: nanoGPT's generate() (crop the context to the last
// block_size tokens, logits of the last position / temperature, keep the top-k, softmax,
// draw one token) over a compiled `logits` function (gpt_program.h).
//
//   PCP_ASSIGN_OR_RETURN(auto sampler, TextSampler::Create(backend, program.logits, params));
//   PCP_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
//                        sampler->Generate(prompt_ids, {.max_new_tokens = 200, .seed = 1}));
#ifndef PCP_TRAINING_TEXT_SAMPLER_H_
#define PCP_TRAINING_TEXT_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"
#include "pcp/kernels/backend.h"
#include "pcp/models/gpt_config.h"

namespace pcp {

struct SampleOptions {
  int64_t max_new_tokens = 500;
  double temperature = 0.8;  // > 0
  int64_t top_k = 200;       // 0 = all tokens
  uint64_t seed = 1337;
  // The ids the tokenizer can decode, [0, vocab): only those are drawn (0 = all V of the
  // logits). A model may have more outputs than the data has tokens (a vocabulary padded to a
  // multiple of 64, or an imported export's output width); those logits are never sampled.
  int64_t vocab = 0;
};

// The `logits` function (optimised) for a sample of `tokens` tokens in all (prompt and new
// ones), over the shortest power-of-two context that holds them, the model's block at most
// (where generate() starts cropping). Causal attention gives every position the same logits as
// over the whole block, so the text is the same, at a fraction of the work: GPT-2 small's
// 64-byte sample took 4.5 minutes over its 1024-token block.
absl::StatusOr<Function> BuildSampleLogits(const GPTConfig& model, int64_t tokens);

class TextSampler {
 public:
  // `logits_fn`: (params..., tokens i32[1, T]) -> logits f32[1, T, V]. `params` in its order.
  static absl::StatusOr<std::unique_ptr<TextSampler>> Create(Backend& backend, const Function& logits_fn,
                                                             const std::vector<Tensor>& params);
  // Returns the prompt followed by max_new_tokens sampled ids. An empty prompt is an error.
  absl::StatusOr<std::vector<int32_t>> Generate(const std::vector<int32_t>& prompt, const SampleOptions& options);

 private:
  explicit TextSampler(Backend& backend) : backend_(backend) {}
  Backend& backend_;
  std::unique_ptr<Executable> exe_;
  std::vector<std::unique_ptr<Buffer>> params_;
  std::unique_ptr<Buffer> tokens_, logits_;
  int64_t block_ = 0, vocab_ = 0;
};

}  // namespace pcp

#endif  // PCP_TRAINING_TEXT_SAMPLER_H_
