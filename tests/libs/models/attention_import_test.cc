// RaiseAttention (pcp/autodiff/attention.h) on exported models' attention: the example modules
// written as torch-mlir (nanoGPT: products on [B·H, T, D] reshapes, k transposed before its
// product, the mask negated) and JAX (Llama: q pre-scaled, rows >= cols) print it. Every
// layer's attention is raised, and the loss and its gradients stay those of the decomposed
// module (the reference interpreter, to f32 rounding).
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/base/file.h"
#include "pcp/models/stablehlo_model.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;

class AttentionImportTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AttentionImportTest, RaisesEveryLayerWithTheSameGradients) {
  const std::string path = std::string(PCP_SOURCE_DIR) + "/examples/stablehlo/" + GetParam();
  absl::StatusOr<std::string> text = ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedModel> model = ImportStableHloModel(*text, path, {});
  ASSERT_TRUE(model.ok()) << model.status();
  Function raised = model->forward;
  absl::StatusOr<int> n = RaiseAttention(raised);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2);  // both examples have two layers
  int ops = 0;
  for (const Instruction& inst : raised.instructions) ops += inst.op == Op::kAttention;
  EXPECT_EQ(ops, 2);

  std::vector<int> wrt;
  for (size_t i = 0; i < model->names.size(); ++i) wrt.push_back(static_cast<int>(i));
  absl::StatusOr<Function> g0 = BuildGradientFunction(model->forward, wrt);
  absl::StatusOr<Function> g1 = BuildGradientFunction(raised, wrt);
  ASSERT_TRUE(g0.ok() && g1.ok()) << g0.status() << g1.status();
  // Parameters as imported, then the frozen arguments and the tokens and targets (in [0, 8)).
  std::vector<Tensor> args = model->initial;
  for (size_t i = args.size(); i < model->forward.params.size(); ++i) {
    const TensorType& t = model->forward.type(model->forward.params[i]);
    args.push_back(IsFloat(t.dtype) ? RandomTensor(t, 50 + i) : RandomTensor(t, 50 + i, 0, 8));
  }
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*g0, args);
  absl::StatusOr<std::vector<Tensor>> got = Interpret(*g1, args);
  ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  ASSERT_EQ(want->size(), got->size());
  for (size_t r = 0; r < want->size(); ++r) {
    EXPECT_TRUE(TensorsNear((*got)[r], (*want)[r], 1e-3, 1e-6)) << "result " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, AttentionImportTest, ::testing::Values("nanogpt_2l.mlir", "llama_2l.mlir"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find('_'));
                         });

}  // namespace
}  // namespace pcp
