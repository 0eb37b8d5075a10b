#include "pcp/autodiff/train_step.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/base/status_macros.h"

namespace pcp {
namespace {

absl::Status CheckForward(const Function& f, const AdamWConfig& config) {
  if (f.params.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat("BuildTrainStep: '", f.name,
                                                   "' needs parameters (params..., tokens, targets), has ",
                                                   f.params.size()));
  }
  if (f.results.empty() || f.type(f.results[0]) != TensorType{DType::kF32, {}}) {
    return absl::InvalidArgumentError(
        absl::StrCat("BuildTrainStep: '", f.name, "' must return the f32 scalar loss as result 0"));
  }
  for (size_t i = 0; i + 2 < f.params.size(); ++i) {
    if (f.type(f.params[i]).dtype != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat("BuildTrainStep: model parameter ", i, " is ",
                                                     f.type(f.params[i]).ToString(), ", expected f32"));
    }
  }
  if (!(config.beta1 >= 0 && config.beta1 < 1) || !(config.beta2 >= 0 && config.beta2 < 1) || !(config.eps >= 0) ||
      !(config.weight_decay >= 0) || !(config.grad_clip >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BuildTrainStep: AdamW needs 0 <= beta1, beta2 < 1 and eps, weight_decay, grad_clip >= 0 (got beta1 ",
        config.beta1, ", beta2 ", config.beta2, ", eps ", config.eps, ", weight_decay ", config.weight_decay,
        ", grad_clip ", config.grad_clip, ")"));
  }
  return absl::OkStatus();
}

// A name for model parameter i (the forward's own, or "param<i>" when it has none).
std::string ParamName(const Function& f, size_t i) {
  return i >= f.param_names.size() || f.param_names[i].empty() ? absl::StrCat("param", i) : f.param_names[i];
}

// Broadcasts scalar `s` to `shape` (a no-op for scalars).
ValueId Splat(FunctionBuilder& b, ValueId s, const Shape& shape) {
  return shape.empty() ? s : b.BroadcastInDim(s, shape, {});
}

// 1 - beta^step for an f32 scalar `step`, accurate to f32 rounding even when the result is
// tiny (beta2 = 0.999 at step 1 gives 1e-3; 1 - powf(0.999f, 1) would carry a 3e-5 relative
// error from rounding beta alone). With x = step * ln(beta) <= 0 it is -expm1(x): a Taylor
// series for |x| < 0.1 (truncation < 2e-11 relative), 1 - exp(x) beyond (cancellation <= 10x).
ValueId OneMinusPow(FunctionBuilder& b, double beta, ValueId step) {
  if (beta == 0.0) return b.ScalarConstant(1.0);  // 0^step = 0 for step >= 1
  ValueId x = b.Mul(step, b.ScalarConstant(std::log(beta)));
  ValueId series = b.ScalarConstant(1.0 / 120.0);  // Horner: x (1 + x/2 (1 + x/3 (1 + x/4 (1 + x/5))))
  for (double k : {24.0, 6.0, 2.0, 1.0}) series = b.Add(b.Mul(series, x), b.ScalarConstant(1.0 / k));
  ValueId expm1_small = b.Mul(series, x);
  ValueId expm1_large = b.Sub(b.Exp(x), b.ScalarConstant(1.0));
  ValueId small = b.Compare(b.Abs(x), b.ScalarConstant(0.1), ComparisonDirection::kLT);
  return b.Neg(b.Select(small, expm1_small, expm1_large));
}

}  // namespace

absl::StatusOr<Function> BuildTrainStep(const Function& forward_loss, const AdamWConfig& config,
                                        const TrainStepOptions& options) {
  const Function& f = forward_loss;
  PCP_RETURN_IF_ERROR(CheckForward(f, config));
  const double scale = options.loss_scale;
  int exponent = 0;
  if (!(scale > 0) || !std::isfinite(scale) || std::frexp(scale, &exponent) != 0.5) {
    return absl::InvalidArgumentError(
        absl::StrCat("BuildTrainStep: loss_scale must be a positive power of two, got ", scale));
  }
  const bool scaled = scale != 1.0;
  const size_t n = static_cast<size_t>(NumModelParams(static_cast<int>(f.params.size())));

  FunctionBuilder b("train_step");
  std::vector<ValueId> params(n), m(n), v(n);
  for (size_t i = 0; i < n; ++i) params[i] = b.Parameter(f.type(f.params[i]), ParamName(f, i));
  for (size_t i = 0; i < n; ++i) m[i] = b.Parameter(f.type(f.params[i]), "m." + ParamName(f, i));
  for (size_t i = 0; i < n; ++i) v[i] = b.Parameter(f.type(f.params[i]), "v." + ParamName(f, i));
  const TensorType scalar{DType::kF32, {}};
  ValueId step = b.Parameter(scalar, "step");
  ValueId lr = b.Parameter(scalar, "lr");
  ValueId tokens = b.Parameter(f.type(f.params[n]), "tokens");
  ValueId targets = b.Parameter(f.type(f.params[n + 1]), "targets");

  // Inline the forward pass: its values map onto this function's.
  std::vector<ValueId> map(static_cast<size_t>(f.num_values()), kNoValue);
  for (size_t i = 0; i < n; ++i) map[static_cast<size_t>(f.params[i])] = params[i];
  map[static_cast<size_t>(f.params[n])] = tokens;
  map[static_cast<size_t>(f.params[n + 1])] = targets;
  for (const Instruction& inst : f.instructions) {
    std::vector<ValueId> operands;
    operands.reserve(inst.operands.size());
    for (ValueId o : inst.operands) operands.push_back(map[static_cast<size_t>(o)]);
    map[static_cast<size_t>(inst.result)] = b.Emit(inst.op, std::move(operands), inst.attrs, &f.type(inst.result));
  }
  PCP_RETURN_IF_ERROR(b.status(), _ << "BuildTrainStep: inlining '" << f.name << "'");
  ValueId loss = map[static_cast<size_t>(f.results[0])];

  ValueId seed = scaled ? b.Mul(loss, b.ScalarConstant(scale)) : loss;
  PCP_ASSIGN_OR_RETURN(std::vector<ValueId> grads, AppendGradients(b, seed, params),
                       _ << "BuildTrainStep: differentiating '" << f.name << "'");
  if (scaled) {
    ValueId inverse = b.ScalarConstant(1.0 / scale);
    for (ValueId& g : grads) {
      const Shape shape = b.type(g).shape;
      g = b.Mul(g, Splat(b, inverse, shape));
    }
  }

  ValueId sum_sq = kNoValue;  // of all gradients: for clipping and the finiteness check
  if (config.grad_clip > 0 || scaled) {
    for (ValueId g : grads) {
      std::vector<int64_t> all(static_cast<size_t>(b.type(g).rank()));
      for (size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int64_t>(d);
      ValueId sq = b.Mul(g, g);
      ValueId s = all.empty() ? sq : b.ReduceSum(sq, std::move(all));
      sum_sq = sum_sq == kNoValue ? s : b.Add(sum_sq, s);
    }
  }
  // finite: sum_sq <= FLT_MAX (false for inf and NaN).
  ValueId finite =
      scaled ? b.Compare(sum_sq, b.ScalarConstant(std::numeric_limits<float>::max()), ComparisonDirection::kLE)
             : kNoValue;

  // torch.nn.utils.clip_grad_norm_: total = ||all grads||_2; g *= min(clip / (total + 1e-6), 1).
  if (config.grad_clip > 0) {
    ValueId total_norm = b.Sqrt(sum_sq);
    ValueId coef = b.Div(b.ScalarConstant(config.grad_clip), b.Add(total_norm, b.ScalarConstant(1e-6)));
    coef = b.Min(coef, b.ScalarConstant(1.0));
    for (ValueId& g : grads) {
      const Shape shape = b.type(g).shape;
      g = b.Mul(g, Splat(b, coef, shape));
    }
  }

  // torch.optim.AdamW (single-tensor path), with the bias corrections computed from `step`.
  ValueId one = b.ScalarConstant(1.0);
  ValueId bc1 = OneMinusPow(b, config.beta1, step);
  ValueId bc2 = OneMinusPow(b, config.beta2, step);
  ValueId neg_step_size = b.Neg(b.Div(lr, bc1));
  ValueId bc2_sqrt = b.Sqrt(bc2);
  ValueId decay = kNoValue;  // 1 - lr * weight_decay
  if (config.weight_decay > 0) decay = b.Sub(one, b.Mul(lr, b.ScalarConstant(config.weight_decay)));

  std::vector<ValueId> new_p(n), new_m(n), new_v(n);
  for (size_t i = 0; i < n; ++i) {
    const TensorType type = b.type(params[i]);  // a copy: emitting reallocates the type table
    const Shape& shape = type.shape;
    auto splat = [&](ValueId s) { return Splat(b, s, shape); };
    auto constant = [&](double c) { return b.Full(c, type); };
    ValueId g = grads[i];
    ValueId p = params[i];
    if (decay != kNoValue && shape.size() >= 2) p = b.Mul(p, splat(decay));
    new_m[i] = b.Add(b.Mul(m[i], constant(config.beta1)), b.Mul(g, constant(1.0 - config.beta1)));
    new_v[i] = b.Add(b.Mul(v[i], constant(config.beta2)), b.Mul(b.Mul(g, g), constant(1.0 - config.beta2)));
    ValueId denom = b.Add(b.Div(b.Sqrt(new_v[i]), splat(bc2_sqrt)), constant(config.eps));
    new_p[i] = b.Add(p, b.Mul(splat(neg_step_size), b.Div(new_m[i], denom)));
    if (finite != kNoValue) {  // an overflowed step changes nothing
      ValueId keep = shape.empty() ? finite : b.BroadcastInDim(finite, shape, {});
      new_p[i] = b.Select(keep, new_p[i], params[i]);
      new_m[i] = b.Select(keep, new_m[i], m[i]);
      new_v[i] = b.Select(keep, new_v[i], v[i]);
    }
  }

  std::vector<ValueId> results;
  std::vector<std::string> names;
  results.reserve(3 * n + 1);
  names.reserve(3 * n + 1);
  for (size_t i = 0; i < n; ++i) results.push_back(new_p[i]), names.push_back(ParamName(f, i));
  for (size_t i = 0; i < n; ++i) results.push_back(new_m[i]), names.push_back("m." + ParamName(f, i));
  for (size_t i = 0; i < n; ++i) results.push_back(new_v[i]), names.push_back("v." + ParamName(f, i));
  results.push_back(loss);
  names.push_back("loss");
  b.Return(std::move(results), std::move(names));
  PCP_ASSIGN_OR_RETURN(Function step_fn, b.Build(), _ << "BuildTrainStep");
  return step_fn;
}

}  // namespace pcp
