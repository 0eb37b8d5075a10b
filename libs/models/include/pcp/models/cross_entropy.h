// The mean cross-entropy that the built-in GPT and the losses PCP forms for imported
// forwards (model.logits, stablehlo_model.h) both use, as PyTorch's F.cross_entropy computes
// it: log-softmax with the row maximum subtracted, each target's log-probability picked by a
// one-hot select, the mean over every position.
//
//   ValueId loss = MeanCrossEntropy(b, logits, targets);   // f32[B, T, V], i32[B, T] -> f32[]
#ifndef PCP_MODELS_CROSS_ENTROPY_H_
#define PCP_MODELS_CROSS_ENTROPY_H_

#include "pcp/autodiff/builder.h"

namespace pcp {

// `logits` f32[B, T, V], `targets` i32 or i64 [B, T]. A target outside [0, V) matches no class,
// so its position adds 0 to the sum (and still counts in the mean).
ValueId MeanCrossEntropy(FunctionBuilder& b, ValueId logits, ValueId targets);

}  // namespace pcp

#endif  // PCP_MODELS_CROSS_ENTROPY_H_
