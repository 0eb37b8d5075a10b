// Hyperparameters of the nanoGPT architecture (token + position embeddings, pre-LayerNorm
// blocks with causal multi-head self-attention and a 4x GELU MLP, final LayerNorm, lm_head
// tied to wte). Names follow nanoGPT's GPTConfig.
//
//   GPTConfig c{.vocab_size = 65, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128};
//   PCP_RETURN_IF_ERROR(c.Validate());
#ifndef PCP_MODELS_GPT_CONFIG_H_
#define PCP_MODELS_GPT_CONFIG_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace pcp {

struct GPTConfig {
  int64_t vocab_size = 65;
  int64_t block_size = 64;  // maximum context length (tokens)
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  bool bias = true;  // biases in Linear and LayerNorm layers, as nanoGPT's `bias`

  // Checks the sizes are positive and n_embd divides by n_head.
  absl::Status Validate() const {
    if (vocab_size <= 0 || block_size <= 0 || n_layer <= 0 || n_head <= 0 || n_embd <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("GPT sizes must be positive (vocab_size ", vocab_size,
                                                     ", block_size ", block_size, ", n_layer ", n_layer, ", n_head ",
                                                     n_head, ", n_embd ", n_embd, ")"));
    }
    if (n_embd % n_head != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("n_embd (", n_embd, ") must be divisible by n_head (", n_head, ")"));
    }
    return absl::OkStatus();
  }
};

}  // namespace pcp

#endif  // PCP_MODELS_GPT_CONFIG_H_
