#include "attention_eval.h"

#include <cmath>
#include <limits>
#include <vector>

namespace pcp {
namespace {

const float* F32(const Tensor& t) { return static_cast<const float*>(t.raw_data()); }

}  // namespace

absl::StatusOr<Tensor> EvalAttention(const Instruction& inst, const TensorType& rt, absl::Span<const Tensor> in) {
  const Op op = inst.op;
  const Tensor& q = in[0];
  const Tensor& k = in[1];
  const int64_t r = q.rank();
  const int64_t T = q.shape()[r - 2], D = q.shape()[r - 1], S = k.shape()[r - 2];
  int64_t batches = 1;
  for (int64_t d = 0; d + 2 < r; ++d) batches *= q.shape()[d];
  // Operands by role (attention.h's order per op); nullptr where an op has none.
  const bool grad_qk = op == Op::kAttentionGradQ || op == Op::kAttentionGradK;
  const Tensor* v = op == Op::kAttention || grad_qk ? &in[2] : nullptr;
  const Tensor* lse = grad_qk ? &in[3] : op == Op::kAttentionGradV ? &in[2] : nullptr;
  const Tensor* delta = grad_qk ? &in[4] : nullptr;
  const Tensor* dout = grad_qk ? &in[5] : op == Op::kAttentionGradV ? &in[3] : nullptr;
  const int64_t E = v != nullptr ? v->shape()[r - 1] : dout != nullptr ? dout->shape()[r - 1] : 0;
  const double scale = inst.attrs.scale;
  const int64_t out_cols = rt.rank() == r ? rt.shape[r - 1] : 1;
  const int64_t out_rows = op == Op::kAttentionGradK || op == Op::kAttentionGradV ? S : T;
  std::vector<double> acc(static_cast<size_t>(batches * out_rows * out_cols), 0.0);
  std::vector<double> s(static_cast<size_t>(S));
  for (int64_t b = 0; b < batches; ++b) {
    const float* qb = F32(q) + b * T * D;
    const float* kb = F32(k) + b * S * D;
    for (int64_t i = 0; i < T; ++i) {
      const int64_t keys = inst.attrs.causal ? std::min(S, i + 1) : S;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(qb[i * D + d]) * kb[j * D + d];
        s[j] = scale * dot;
        max = std::max(max, s[j]);
      }
      double row_lse;
      if (lse != nullptr) {
        row_lse = F32(*lse)[b * T + i];
      } else {
        double sum = 0;
        for (int64_t j = 0; j < keys; ++j) sum += std::exp(s[j] - max);
        row_lse = max + std::log(sum);
      }
      double* out_b = acc.data() + b * out_rows * out_cols;
      if (op == Op::kAttentionLse) {
        out_b[i] = row_lse;
        continue;
      }
      for (int64_t j = 0; j < keys; ++j) {
        const double p = std::exp(s[j] - row_lse);
        if (op == Op::kAttention) {
          for (int64_t e = 0; e < E; ++e) out_b[i * E + e] += p * F32(*v)[(b * S + j) * E + e];
          continue;
        }
        const float* do_i = F32(*dout) + (b * T + i) * E;
        if (op == Op::kAttentionGradV) {
          for (int64_t e = 0; e < E; ++e) out_b[j * E + e] += p * do_i[e];
          continue;
        }
        double dp = 0;
        for (int64_t e = 0; e < E; ++e) dp += static_cast<double>(do_i[e]) * F32(*v)[(b * S + j) * E + e];
        const double ds = scale * p * (dp - F32(*delta)[b * T + i]);
        if (op == Op::kAttentionGradQ) {
          for (int64_t d = 0; d < D; ++d) out_b[i * D + d] += ds * kb[j * D + d];
        } else {
          for (int64_t d = 0; d < D; ++d) out_b[j * D + d] += ds * qb[i * D + d];
        }
      }
    }
  }
  Tensor out(DType::kF32, rt.shape);
  auto* o = static_cast<float*>(out.raw_data());
  for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<float>(acc[i]);
  return out;
}

}  // namespace pcp
