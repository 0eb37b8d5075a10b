// Fused scaled-dot-product attention in the IR: what the pcp.attention ops compute, the pass
// that makes them from the decomposed attention a model (or an exporter) writes, and the pass
// that turns them back into StableHLO.
//
//   PCP_ASSIGN_OR_RETURN(int fused, RaiseAttention(forward));   // before BuildTrainStep
//   ... BuildTrainStep(forward, ...) ...                        // attention's VJP rule: grad ops
//   PCP_ASSIGN_OR_RETURN(int expanded, ExpandAttention(step));  // for a backend without kernels
//
// The ops (op_list.h; every operand and result f32; leading "batch" dimensions B... shared by
// all operands; attributes scale (f64) and causal (bool)):
//   s[b, i, j] = scale * Σ_d q[b, i, d] k[b, j, d] where allowed(i, j), -inf elsewhere;
//                allowed(i, j) = !causal || j <= i (PyTorch's is_causal, top-left aligned)
//   lse[b, i]  = log Σ_j exp(s[b, i, j]);  P[b, i, j] = exp(s[b, i, j] - lse[b, i])
//   pcp.attention(q [B..., T, D], k [B..., S, D], v [B..., S, E])      -> o = P v [B..., T, E]
//   pcp.attention_lse(q, k)                                             -> lse [B..., T]
// and the gradient's parts, given lse (as above) and delta[b, i] = Σ_e do[b, i, e] o[b, i, e]:
//   ds[b, i, j] = P[b, i, j] (Σ_e do[b, i, e] v[b, j, e] - delta[b, i])
//   pcp.attention_grad_q(q, k, v, lse, delta, do [B..., T, E]) -> dq = scale ds k   [B..., T, D]
//   pcp.attention_grad_k(q, k, v, lse, delta, do)              -> dk = scale dsᵀ q  [B..., S, D]
//   pcp.attention_grad_v(q, k, lse, do)                         -> dv = Pᵀ do        [B..., S, E]
// These are FlashAttention's forward and backward (Dao 2022, 2023): a backend with attention
// kernels computes them without ever storing a T x S tensor; s and P are recomputed from q, k
// and lse wherever needed. With causal = true every query row has at least one allowed key
// (j = 0); without it S >= 1 is required. The VJP of pcp.attention emits attention_lse,
// delta (a reduce) and the three grad ops; the lse and grad ops have no VJP (no second
// derivatives through attention).
#ifndef PCP_AUTODIFF_ATTENTION_H_
#define PCP_AUTODIFF_ATTENTION_H_

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// How a job's programs compute attention (training.attention): as the model writes it
// (decomposed StableHLO, the default: unchanged bits) or raised into pcp.attention ops.
enum class AttentionMode { kDecomposed, kFused };
inline constexpr std::pair<AttentionMode, absl::string_view> kAttentionModeNames[] = {
    {AttentionMode::kDecomposed, "decomposed"},
    {AttentionMode::kFused, "fused"},
};

// Replaces each decomposed attention, softmax(mask(scale * q kᵀ)) v, by one pcp.attention,
// where the intermediate values (scores, softmax) have no other readers. Matched:
// dot_general(q, k) contracting the last dimensions with the leading ones batched; an
// optional multiply by (or divide by) a broadcast scalar constant (the scale; q or k scaled
// before the product is left as it is); an optional causal mask over the last two dimensions,
// select(j <= i, s, -inf) or select(j > i, -inf, s) with the predicate an iota comparison, its
// negation or a constant, or s + M with M a constant 0 / -inf (or below -1e30) causal mask;
// the products may work on reshapes merging the leading dimensions and on k transposed (as
// torch-mlir prints them), and the result is reshaped back; the max-subtracted softmax
// exp(s - broadcast(reduce_max(s))) / broadcast(reduce_sum(...)) over the last dimension; and
// dot_general(P, v) contracting it. Returns how many were replaced; the function is verified
// and dead values are removed.
absl::StatusOr<int> RaiseAttention(Function& function);

// Whether `function` has a pcp.attention* op.
bool HasAttentionOps(const Function& function);

// Replaces every pcp.attention* op by StableHLO that computes the definitions above
// (materialising s and P), for backends without attention kernels and for the reference
// interpreter's cross-check. Returns how many ops were expanded; the function is verified.
absl::StatusOr<int> ExpandAttention(Function& function);

}  // namespace pcp

#endif  // PCP_AUTODIFF_ATTENTION_H_
