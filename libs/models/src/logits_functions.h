// Private to stablehlo_model.cc: an imported module's logits function (model.logits) turned
// into the loss PCP forms for a forward-only export, and into the sampler's logits function.
#ifndef PCP_MODELS_SRC_LOGITS_FUNCTIONS_H_
#define PCP_MODELS_SRC_LOGITS_FUNCTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/ir.h"

namespace pcp::models_internal {

// Appends `from`'s instructions to `to`; `map` holds the value in `to` of each of `from`'s
// values (its parameters' entries must be set) and gets the instructions' results.
void CopyInstructions(const Function& from, std::vector<ValueId>& map, Function* to);

// loss(g's arguments..., targets) = the mean cross-entropy (cross_entropy.h) of g's first
// result, logits [B, T, V] or [B*T, V] f32, against `targets`, a new last argument of the
// type of g's last argument (the tokens, i32 or i64 [B, T]). `place` prefixes errors.
absl::StatusOr<Function> FormLossFromLogits(const Function& g, absl::string_view place);

// The sampler's (trainable..., tokens i32[1, T]) -> logits f32[1, T, V] from g, whose
// arguments are the loss function's arguments without the targets (data[1]), in order:
// `trainable` and `frozen` index the loss function's arguments, `names` name the trainable
// ones; the one sequence is copied to the export's `batch` rows and row 0's logits returned.
// Errors start with "model.logits: ".
absl::StatusOr<Function> BuildImportedSampleLogits(const Function& g, const Function& loss,
                                                   const std::vector<int>& trainable,
                                                   const std::vector<std::string>& names,
                                                   const std::map<int, Tensor>& frozen, const int data[2],
                                                   int64_t batch, int64_t block);

}  // namespace pcp::models_internal

#endif  // PCP_MODELS_SRC_LOGITS_FUNCTIONS_H_
