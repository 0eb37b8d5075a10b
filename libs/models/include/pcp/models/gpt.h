// The nanoGPT architecture as IR: a forward-loss function for training, a logits function for
// sampling and evaluation, the parameter list (nanoGPT state_dict names and PyTorch layouts)
// and nanoGPT's seeded initialisation.
//
//   GPTConfig c{.vocab_size = 65, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128};
//   PCP_ASSIGN_OR_RETURN(Function fwd, BuildGptForwardLoss(c, /*batch_size=*/12, /*block_len=*/64));
//   PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> params, InitGptParams(c, /*seed=*/1337));
//   std::vector<Tensor> args;                          // params..., tokens, targets
//   for (const NamedTensor& p : params) args.push_back(p.tensor);
//   args.push_back(tokens);                            // i32[12, 64]
//   args.push_back(targets);                           // i32[12, 64]
//   PCP_ASSIGN_OR_RETURN(std::vector<Tensor> out, Interpret(fwd, args));   // out[0] = loss
//
// Parameters, in this order and with these names and shapes (C = n_embd, V = vocab_size):
//   transformer.wte.weight            [V, C]   (also the lm_head: logits = x @ wte^T)
//   transformer.wpe.weight            [block_size, C]
//   for i in 0..n_layer-1:
//     transformer.h.{i}.ln_1.weight   [C]      transformer.h.{i}.ln_1.bias    [C]
//     transformer.h.{i}.attn.c_attn.weight [3C, C]   .bias [3C]
//     transformer.h.{i}.attn.c_proj.weight [C, C]    .bias [C]
//     transformer.h.{i}.ln_2.weight   [C]      transformer.h.{i}.ln_2.bias    [C]
//     transformer.h.{i}.mlp.c_fc.weight    [4C, C]   .bias [4C]
//     transformer.h.{i}.mlp.c_proj.weight  [C, 4C]   .bias [C]
//   transformer.ln_f.weight           [C]      transformer.ln_f.bias          [C]
// Every ".bias" is absent when config.bias is false. Linear weights keep PyTorch's
// [out, in] layout, so a nanoGPT state_dict loads without transposes (lm_head.weight is
// tied to wte and is not a separate parameter, as in nanoGPT's checkpoints).
//
// The computation is nanoGPT's model.py with dropout 0: token + position embeddings;
// per block x += attn(ln_1(x)); x += mlp(ln_2(x)) with LayerNorm eps 1e-5 (biased
// variance), causal attention scaled by 1/sqrt(head_dim) with masked positions set to -inf
// before a max-subtracted softmax, and an exact (erf) GELU; then ln_f and the tied lm_head.
// The loss is the mean cross-entropy over all B*T positions (log-softmax with max
// subtraction). Targets must lie in [0, vocab_size); there is no ignore_index (the IR cannot
// check data, so a target outside that range adds 0 to the sum but still counts in the mean).
#ifndef PCP_MODELS_GPT_H_
#define PCP_MODELS_GPT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"
#include "pcp/models/gpt_config.h"
#include "pcp/tensor/init_recipe.h"
#include "pcp/tensor/safetensors.h"  // NamedTensor
#include "pcp/tensor/tensor.h"

namespace pcp {

struct GptParamSpec {
  std::string name;
  TensorType type;
};

// The model parameters in order (see the table above). Fails if config.Validate() fails.
absl::StatusOr<std::vector<GptParamSpec>> GptParamSpecs(const GPTConfig& config);

// Number of parameter elements. nanoGPT's get_num_params() reports the count without the
// position embeddings (non_embedding = true); pass false to count every parameter.
absl::StatusOr<int64_t> GptNumParams(const GPTConfig& config, bool non_embedding = true);

struct GptBuildOptions {
  // Also return the logits f32[B, T, V] as result 1 ("logits"). The train step needs only
  // the loss; evaluation code may want both.
  bool return_logits = false;
};

// "forward_loss"(params..., tokens: i32[B, T], targets: i32[B, T]) -> (loss: f32[] [, logits]).
// Errors: invalid config, batch_size < 1, block_len < 1 or block_len > config.block_size.
absl::StatusOr<Function> BuildGptForwardLoss(const GPTConfig& config, int64_t batch_size, int64_t block_len,
                                             const GptBuildOptions& options = {});

// "logits"(params..., tokens: i32[B, T]) -> (logits: f32[B, T, V]) for every position.
absl::StatusOr<Function> BuildGptLogits(const GPTConfig& config, int64_t batch_size, int64_t block_len);

// nanoGPT's initialisation, in parameter order with the names above: Linear and Embedding
// weights ~ N(0, 0.02), except every c_proj.weight ~ N(0, 0.02 / sqrt(2 * n_layer)); Linear
// biases 0; LayerNorm weights 1 and biases 0. As a recipe (drawn bit for bit as
// pcp/tensor/init_recipe.h documents), and drawn.
absl::StatusOr<InitRecipe> GptInitRecipe(const GPTConfig& config, uint64_t seed);
absl::StatusOr<std::vector<NamedTensor>> InitGptParams(const GPTConfig& config, uint64_t seed);

}  // namespace pcp

#endif  // PCP_MODELS_GPT_H_
