#include "pcp/tensor/init_recipe.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "normal_stream.h"

namespace pcp {

absl::StatusOr<std::vector<Tensor>> DrawInit(const InitRecipe& recipe, const std::vector<Shape>& shapes) {
  if (recipe.params.size() != shapes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the init recipe has ", recipe.params.size(), " rules for ", shapes.size(), " parameters"));
  }
  tensor_internal::NormalStream normals(recipe.seed);
  std::vector<Tensor> theta;
  theta.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ParamInit& rule = recipe.params[i];
    Tensor t(DType::kF32, shapes[i]);  // zero-filled
    switch (rule.kind) {
      case ParamInit::Kind::kZeros: break;
      case ParamInit::Kind::kOnes: {
        float* p = t.data<float>();
        for (int64_t e = 0; e < t.num_elements(); ++e) p[e] = 1.0f;
        break;
      }
      case ParamInit::Kind::kNormal:
        if (!std::isfinite(rule.std) || rule.std < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("init recipe rule ", i, ": normal std ", rule.std, " (finite and >= 0 expected)"));
        }
        normals.Fill(rule.std, t);
        break;
      default: return absl::InvalidArgumentError(absl::StrCat("init recipe rule ", i, ": unknown kind"));
    }
    theta.push_back(std::move(t));
  }
  return theta;
}

}  // namespace pcp
