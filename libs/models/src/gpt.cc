#include "pcp/models/gpt.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/builder.h"
#include "pcp/base/status_macros.h"
#include "pcp/models/cross_entropy.h"

namespace pcp {
namespace {

constexpr double kLayerNormEps = 1e-5;  // nn.LayerNorm's default, as nanoGPT uses
constexpr double kInitStd = 0.02;

TensorType F32(Shape shape) { return TensorType{DType::kF32, std::move(shape)}; }

std::string LayerName(int64_t i, absl::string_view rest) { return absl::StrCat("transformer.h.", i, ".", rest); }

absl::Status ValidateSizes(const GPTConfig& config, int64_t batch_size, int64_t block_len) {
  PCP_RETURN_IF_ERROR(config.Validate());
  if (batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size must be positive, got ", batch_size));
  }
  if (block_len < 1 || block_len > config.block_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_len must be in [1, block_size = ", config.block_size, "], got ", block_len));
  }
  return absl::OkStatus();
}

// Emits the GPT computation into a builder whose parameters follow GptParamSpecs.
class GptEmitter {
 public:
  GptEmitter(FunctionBuilder& b, const GPTConfig& config, int64_t batch, int64_t len)
      : b_(b), c_(config), batch_(batch), len_(len) {}

  // Declares the model parameters; the values are looked up by name afterwards.
  void DeclareParams(const std::vector<GptParamSpec>& specs) {
    for (const GptParamSpec& s : specs) b_.Parameter(s.type, s.name);
  }

  ValueId Param(absl::string_view name) {
    int i = b_.function().FindParam(name);
    if (i < 0) {
      b_.SetError(absl::InternalError(absl::StrCat("GPT parameter '", name, "' not declared")));
      return kNoValue;
    }
    return b_.function().params[static_cast<size_t>(i)];
  }
  // kNoValue when the model has no biases.
  ValueId Bias(absl::string_view name) { return c_.bias ? Param(name) : kNoValue; }

  // tokens i32[B, T] -> logits f32[B, T, V].
  ValueId Logits(ValueId tokens) {
    const int64_t C = c_.n_embd;
    ValueId wte = Param("transformer.wte.weight");
    ValueId tok = b_.Gather(wte, tokens);                                        // [B, T, C]
    ValueId wpe = b_.Slice(Param("transformer.wpe.weight"), {0, 0}, {len_, C});  // [T, C]
    ValueId x = b_.BAdd(tok, wpe);
    for (int64_t i = 0; i < c_.n_layer; ++i) {
      ValueId h = LayerNorm(x, Param(LayerName(i, "ln_1.weight")), Bias(LayerName(i, "ln_1.bias")));
      x = b_.Add(x, Attention(h, i));
      h = LayerNorm(x, Param(LayerName(i, "ln_2.weight")), Bias(LayerName(i, "ln_2.bias")));
      x = b_.Add(x, Mlp(h, i));
    }
    x = LayerNorm(x, Param("transformer.ln_f.weight"), Bias("transformer.ln_f.bias"));
    return Linear(x, wte, kNoValue);  // tied lm_head: x @ wte^T
  }

  // Mean cross-entropy of logits f32[B, T, V] against targets i32[B, T] (cross_entropy.h).
  ValueId CrossEntropy(ValueId logits, ValueId targets) { return MeanCrossEntropy(b_, logits, targets); }

 private:
  // [B, T] -> [B, T, last] (default: V), repeating along the new last dimension.
  ValueId Expand(ValueId x, int64_t last = -1) {
    if (last < 0) last = c_.vocab_size;
    return b_.BroadcastInDim(x, {batch_, len_, last}, {0, 1});
  }

  // x [B, T, in] @ w[out, in]^T (+ bias[out]): PyTorch's nn.Linear, contracting the weight's dim 1.
  ValueId Linear(ValueId x, ValueId w, ValueId bias) {
    DotDims d;
    d.lhs_contract = {2};
    d.rhs_contract = {1};
    ValueId y = b_.DotGeneral(x, w, std::move(d));
    return bias == kNoValue ? y : b_.BAdd(y, bias);
  }

  // Over the last dimension (C), biased variance, as nn.LayerNorm.
  ValueId LayerNorm(ValueId x, ValueId weight, ValueId bias) {
    const int64_t C = c_.n_embd;
    ValueId inv_c = b_.ScalarConstant(1.0 / static_cast<double>(C));
    ValueId mean = b_.BMul(b_.ReduceSum(x, {2}), inv_c);  // [B, T]
    ValueId centered = b_.Sub(x, Expand(mean, C));
    ValueId var = b_.BMul(b_.ReduceSum(b_.Mul(centered, centered), {2}), inv_c);
    ValueId rstd = b_.Rsqrt(b_.BAdd(var, b_.ScalarConstant(kLayerNormEps)));
    ValueId y = b_.BMul(b_.Mul(centered, Expand(rstd, C)), weight);
    return bias == kNoValue ? y : b_.BAdd(y, bias);
  }

  // Causal multi-head self-attention of block `i` on x [B, T, C].
  ValueId Attention(ValueId x, int64_t i) {
    const int64_t B = batch_, T = len_, C = c_.n_embd, H = c_.n_head, D = C / H;
    ValueId qkv =
        Linear(x, Param(LayerName(i, "attn.c_attn.weight")), Bias(LayerName(i, "attn.c_attn.bias")));  // [B, T, 3C]
    // q, k, v: [B, T, C] -> [B, T, H, D] -> [B, H, T, D].
    auto head = [&](int64_t part) {
      ValueId s = b_.Slice(qkv, {0, 0, part * C}, {B, T, (part + 1) * C});
      return b_.Transpose(b_.Reshape(s, {B, T, H, D}), {0, 2, 1, 3});
    };
    ValueId q = head(0), k = head(1), v = head(2);
    DotDims qk;
    qk.lhs_batch = qk.rhs_batch = {0, 1};
    qk.lhs_contract = qk.rhs_contract = {3};
    ValueId att = b_.DotGeneral(q, k, std::move(qk));  // [B, H, T, T]
    att = b_.BMul(att, b_.ScalarConstant(1.0 / std::sqrt(static_cast<double>(D))));
    // masked_fill(tril == 0, -inf): keep key positions j <= query position i.
    const Shape scores = {B, H, T, T};
    ValueId rows = b_.Iota(TensorType{DType::kI32, {T, T}}, 0);
    ValueId cols = b_.Iota(TensorType{DType::kI32, {T, T}}, 1);
    ValueId causal = b_.BroadcastInDim(b_.Compare(cols, rows, ComparisonDirection::kLE), scores, {2, 3});
    att = b_.Select(causal, att, b_.Full(-std::numeric_limits<double>::infinity(), F32(scores)));
    // Softmax over the keys, max-subtracted.
    ValueId row_max = b_.BroadcastInDim(b_.ReduceMax(att, {3}), scores, {0, 1, 2});
    ValueId e = b_.Exp(b_.Sub(att, row_max));
    ValueId denom = b_.BroadcastInDim(b_.ReduceSum(e, {3}), scores, {0, 1, 2});
    ValueId probs = b_.Div(e, denom);
    ValueId y = b_.MatMul(probs, v);  // [B, H, T, D]
    y = b_.Reshape(b_.Transpose(y, {0, 2, 1, 3}), {B, T, C});
    return Linear(y, Param(LayerName(i, "attn.c_proj.weight")), Bias(LayerName(i, "attn.c_proj.bias")));
  }

  // c_fc -> exact GELU 0.5 x (1 + erf(x / sqrt 2)) -> c_proj.
  ValueId Mlp(ValueId x, int64_t i) {
    ValueId h = Linear(x, Param(LayerName(i, "mlp.c_fc.weight")), Bias(LayerName(i, "mlp.c_fc.bias")));
    ValueId erf = b_.Erf(b_.BMul(h, b_.ScalarConstant(1.0 / std::sqrt(2.0))));
    ValueId one_plus = b_.BAdd(erf, b_.ScalarConstant(1.0));
    ValueId gelu = b_.Mul(b_.BMul(h, b_.ScalarConstant(0.5)), one_plus);
    return Linear(gelu, Param(LayerName(i, "mlp.c_proj.weight")), Bias(LayerName(i, "mlp.c_proj.bias")));
  }

  FunctionBuilder& b_;
  const GPTConfig& c_;
  int64_t batch_, len_;
};

bool EndsWith(const std::string& s, absl::string_view suffix) {
  return s.size() >= suffix.size() && absl::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

absl::StatusOr<std::vector<GptParamSpec>> GptParamSpecs(const GPTConfig& config) {
  PCP_RETURN_IF_ERROR(config.Validate());
  const int64_t C = config.n_embd;
  std::vector<GptParamSpec> specs;
  auto add = [&](std::string name, Shape shape) { specs.push_back({std::move(name), F32(std::move(shape))}); };
  auto bias = [&](std::string name, Shape shape) {
    if (config.bias) add(std::move(name), std::move(shape));
  };
  add("transformer.wte.weight", {config.vocab_size, C});
  add("transformer.wpe.weight", {config.block_size, C});
  for (int64_t i = 0; i < config.n_layer; ++i) {
    add(LayerName(i, "ln_1.weight"), {C});
    bias(LayerName(i, "ln_1.bias"), {C});
    add(LayerName(i, "attn.c_attn.weight"), {3 * C, C});
    bias(LayerName(i, "attn.c_attn.bias"), {3 * C});
    add(LayerName(i, "attn.c_proj.weight"), {C, C});
    bias(LayerName(i, "attn.c_proj.bias"), {C});
    add(LayerName(i, "ln_2.weight"), {C});
    bias(LayerName(i, "ln_2.bias"), {C});
    add(LayerName(i, "mlp.c_fc.weight"), {4 * C, C});
    bias(LayerName(i, "mlp.c_fc.bias"), {4 * C});
    add(LayerName(i, "mlp.c_proj.weight"), {C, 4 * C});
    bias(LayerName(i, "mlp.c_proj.bias"), {C});
  }
  add("transformer.ln_f.weight", {C});
  bias("transformer.ln_f.bias", {C});
  return specs;
}

absl::StatusOr<int64_t> GptNumParams(const GPTConfig& config, bool non_embedding) {
  PCP_ASSIGN_OR_RETURN(std::vector<GptParamSpec> specs, GptParamSpecs(config));
  int64_t n = 0;
  for (const GptParamSpec& s : specs) {
    if (non_embedding && s.name == "transformer.wpe.weight") continue;
    n += s.type.num_elements();
  }
  return n;
}

absl::StatusOr<Function> BuildGptForwardLoss(const GPTConfig& config, int64_t batch_size, int64_t block_len,
                                             const GptBuildOptions& options) {
  PCP_RETURN_IF_ERROR(ValidateSizes(config, batch_size, block_len), _ << "BuildGptForwardLoss");
  PCP_ASSIGN_OR_RETURN(std::vector<GptParamSpec> specs, GptParamSpecs(config));
  FunctionBuilder b("forward_loss");
  GptEmitter gpt(b, config, batch_size, block_len);
  gpt.DeclareParams(specs);
  ValueId tokens = b.Parameter(TensorType{DType::kI32, {batch_size, block_len}}, "tokens");
  ValueId targets = b.Parameter(TensorType{DType::kI32, {batch_size, block_len}}, "targets");
  ValueId logits = gpt.Logits(tokens);
  ValueId loss = gpt.CrossEntropy(logits, targets);
  if (options.return_logits) {
    b.Return({loss, logits}, {"loss", "logits"});
  } else {
    b.Return({loss}, {"loss"});
  }
  return b.Build();
}

absl::StatusOr<Function> BuildGptLogits(const GPTConfig& config, int64_t batch_size, int64_t block_len) {
  PCP_RETURN_IF_ERROR(ValidateSizes(config, batch_size, block_len), _ << "BuildGptLogits");
  PCP_ASSIGN_OR_RETURN(std::vector<GptParamSpec> specs, GptParamSpecs(config));
  FunctionBuilder b("logits");
  GptEmitter gpt(b, config, batch_size, block_len);
  gpt.DeclareParams(specs);
  ValueId tokens = b.Parameter(TensorType{DType::kI32, {batch_size, block_len}}, "tokens");
  b.Return({gpt.Logits(tokens)}, {"logits"});
  return b.Build();
}

absl::StatusOr<InitRecipe> GptInitRecipe(const GPTConfig& config, uint64_t seed) {
  PCP_ASSIGN_OR_RETURN(std::vector<GptParamSpec> specs, GptParamSpecs(config));
  const double proj_std = kInitStd / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  InitRecipe recipe{.seed = seed, .params = {}};
  for (const GptParamSpec& s : specs) {
    if (EndsWith(s.name, "c_proj.weight")) {
      recipe.params.push_back(ParamInit::Normal(proj_std));
    } else if (s.type.rank() == 2) {
      recipe.params.push_back(ParamInit::Normal(kInitStd));  // wte, wpe, c_attn, c_fc
    } else if (EndsWith(s.name, ".weight")) {
      recipe.params.push_back(ParamInit::Ones());  // LayerNorm gains
    } else {
      recipe.params.push_back(ParamInit::Zeros());  // biases
    }
  }
  return recipe;
}

absl::StatusOr<std::vector<NamedTensor>> InitGptParams(const GPTConfig& config, uint64_t seed) {
  PCP_ASSIGN_OR_RETURN(std::vector<GptParamSpec> specs, GptParamSpecs(config));
  PCP_ASSIGN_OR_RETURN(InitRecipe recipe, GptInitRecipe(config, seed));
  std::vector<Shape> shapes;
  for (const GptParamSpec& s : specs) shapes.push_back(s.type.shape);
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> values, DrawInit(recipe, shapes));
  std::vector<NamedTensor> params;
  params.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) params.push_back({specs[i].name, std::move(values[i])});
  return params;
}

}  // namespace pcp
