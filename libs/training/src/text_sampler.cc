#include "pcp/training/text_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/passes.h"
#include "pcp/base/status_macros.h"
#include "pcp/models/gpt.h"
#include "pcp/training/rng.h"

namespace pcp {

absl::StatusOr<Function> BuildSampleLogits(const GPTConfig& model, int64_t tokens) {
  int64_t context = 1;
  while (context < tokens && context < model.block_size) context *= 2;
  context = std::min(context, model.block_size);
  PCP_ASSIGN_OR_RETURN(Function logits, BuildGptLogits(model, 1, context));
  logits.name = "logits";
  PCP_RETURN_IF_ERROR(RunStandardPasses(logits), _ << "optimizing logits");
  return logits;
}

absl::StatusOr<std::unique_ptr<TextSampler>> TextSampler::Create(Backend& backend, const Function& fn,
                                                                 const std::vector<Tensor>& params) {
  if (fn.params.size() != params.size() + 1 || fn.results.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("@", fn.name, " must take ", params.size(), " parameters plus tokens and return logits"));
  }
  const TensorType& tok = fn.type(fn.params.back());
  const TensorType& out = fn.type(fn.results[0]);
  if (tok.rank() != 2 || tok.shape[0] != 1 || out.rank() != 3) {
    return absl::InvalidArgumentError("logits function must map tokens[1, T] to logits[1, T, V]");
  }
  std::unique_ptr<TextSampler> s(new TextSampler(backend));
  s->block_ = tok.shape[1];
  s->vocab_ = out.shape[2];
  PCP_ASSIGN_OR_RETURN(s->exe_, backend.Compile(fn), _ << "compiling @" << fn.name);
  for (size_t i = 0; i < params.size(); ++i) {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, backend.Allocate(fn.type(fn.params[i])));
    PCP_RETURN_IF_ERROR(backend.CopyIn(params[i], *b), _ << "parameter " << fn.param_names[i]);
    s->params_.push_back(std::move(b));
  }
  PCP_ASSIGN_OR_RETURN(s->tokens_, backend.Allocate(tok));
  PCP_ASSIGN_OR_RETURN(s->logits_, backend.Allocate(out));
  return s;
}

absl::StatusOr<std::vector<int32_t>> TextSampler::Generate(const std::vector<int32_t>& prompt, const SampleOptions& o) {
  if (prompt.empty()) return absl::InvalidArgumentError("the prompt must hold at least one token");
  if (!(o.temperature > 0)) return absl::InvalidArgumentError("temperature must be > 0");
  if (o.top_k < 0 || o.max_new_tokens < 0) return absl::InvalidArgumentError("top_k and max_new_tokens must be >= 0");
  if (o.vocab < 0 || o.vocab > vocab_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the tokenizer's vocabulary (", o.vocab, ") must be within the model's ", vocab_, " outputs"));
  }
  const int64_t vocab = o.vocab == 0 ? vocab_ : o.vocab;
  for (int32_t id : prompt) {
    if (id < 0 || id >= vocab)
      return absl::InvalidArgumentError(absl::StrCat("prompt token ", id, " outside the vocabulary"));
  }
  Xoshiro256ss rng = Xoshiro256ss::FromSeed(o.seed);
  std::vector<int32_t> ids = prompt;
  std::vector<Buffer*> args;
  for (auto& b : params_) args.push_back(b.get());
  args.push_back(tokens_.get());
  Buffer* results[] = {logits_.get()};
  std::vector<double> probs(static_cast<size_t>(vocab));
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  for (int64_t n = 0; n < o.max_new_tokens; ++n) {
    // Causal attention: positions after the context do not affect it, so the context is
    // left-aligned in a fixed [1, block] window and the logits of its last position read.
    int64_t len = std::min<int64_t>(static_cast<int64_t>(ids.size()), block_);
    Tensor window(DType::kI32, {1, block_});
    std::copy(ids.end() - len, ids.end(), window.data<int32_t>());
    PCP_RETURN_IF_ERROR(backend_.CopyIn(window, *tokens_));
    PCP_RETURN_IF_ERROR(exe_->Run(args, results));
    PCP_ASSIGN_OR_RETURN(Tensor logits, backend_.CopyOut(*logits_));
    const float* row = logits.data<float>() + (len - 1) * vocab_;
    std::iota(order.begin(), order.end(), 0);
    int64_t k = o.top_k == 0 ? vocab : std::min(o.top_k, vocab);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    double max_logit = row[order[0]] / o.temperature, total = 0;
    for (int64_t i = 0; i < k; ++i) {
      probs[i] = std::exp(row[order[i]] / o.temperature - max_logit);
      total += probs[i];
    }
    double u = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53 * total;
    int64_t pick = k - 1;
    for (int64_t i = 0; i < k; ++i) {
      if (u < probs[i]) {
        pick = i;
        break;
      }
      u -= probs[i];
    }
    ids.push_back(order[pick]);
  }
  return ids;
}

}  // namespace pcp
