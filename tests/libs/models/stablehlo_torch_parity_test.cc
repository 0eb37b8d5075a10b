// "Bring your own model" end to end on the example modules: examples/stablehlo/nanogpt_2l.mlir
// and llama_2l.mlir (written by gen_models.py the way torch-mlir / JAX exports look) are parsed
// with ParseModule, differentiated by PCP's autodiff and run by the reference interpreter and
// the CPU backend; loss and the gradient of every trainable argument must match independent
// PyTorch models of the same architectures (examples/stablehlo/models_torch.py, float64,
// loading the parameters by name with strict=True) to a relative error of 1e-4 per tensor
// (max |a - b| / max |b|). Llama's rope.cos / rope.sin are inputs: no gradient is compared.
// Skips with a reason when /usr/bin/python3 cannot import torch. A second test checks that the
// committed example files are what gen_models.py writes.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "function_runners.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/base/status_macros.h"
#include "pcp/tensor/safetensors.h"
#include "pcp/testing/tensor_testing.h"
#include "torch_oracle.h"

namespace pcp {
namespace {

using ::pcp::testing::kPython;
using ::pcp::testing::PythonCanImport;
using ::pcp::testing::RandomTensor;

constexpr int64_t kVocab = 65;

std::string ExamplePath(const std::string& file) { return std::string(PCP_SOURCE_DIR) + "/examples/stablehlo/" + file; }

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One example: its module, its non-data arguments' names, and which of those are inputs.
struct Example {
  std::string kind;  // models_torch.py's name for it
  std::string mlir;
  std::vector<std::string> names;         // one per non-data argument, in argument order
  std::vector<NamedTensor> fixed_inputs;  // values for the frozen arguments (rope tables)
};

absl::StatusOr<Example> LoadExample(const std::string& kind) {
  Example ex{.kind = kind};
  if (kind == "nanogpt") {
    ex.mlir = ExamplePath("nanogpt_2l.mlir");
    PCP_ASSIGN_OR_RETURN(std::string names, ReadText(ExamplePath("nanogpt_2l.names.txt")));
    ex.names = absl::StrSplit(names, '\n', absl::SkipWhitespace());
    return ex;
  }
  ex.mlir = ExamplePath("llama_2l.mlir");
  PCP_ASSIGN_OR_RETURN(SafetensorsContents params, ReadSafetensorsFile(ExamplePath("llama_2l.safetensors")));
  for (NamedTensor& t : params.tensors) {
    ex.names.push_back(t.name);
    if (t.name.starts_with("rope.")) ex.fixed_inputs.push_back(std::move(t));
  }
  return ex;
}

// Parameters at init-like scales but spread out, so attention is far from uniform and norm
// gains and biases matter: matrices uniform in +-sqrt(3 / fan_in) (std 1 / sqrt(fan_in)),
// gains in [0.8, 1.2), biases in +-0.1.
Tensor TestParam(const std::string& name, const TensorType& type, uint64_t seed) {
  if (type.rank() == 2) {
    const double bound = std::sqrt(3.0 / static_cast<double>(type.shape[1]));
    return RandomTensor(type, seed, -bound, bound);
  }
  if (name.ends_with(".bias")) return RandomTensor(type, seed, -0.1, 0.1);
  return RandomTensor(type, seed, 0.8, 1.2);
}

absl::StatusOr<SafetensorsContents> RunTorch(const std::string& kind, const std::vector<NamedTensor>& inputs) {
  return ::pcp::testing::RunPythonOracle(ExamplePath("models_torch.py"), absl::StrCat("grad ", kind), inputs);
}

class StablehloTorchParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!PythonCanImport("torch")) GTEST_SKIP() << kPython << " cannot import torch (install python3-torch)";
  }
};

TEST_P(StablehloTorchParityTest, LossAndEveryGradient) {
  absl::StatusOr<Example> ex = LoadExample(GetParam());
  ASSERT_TRUE(ex.ok()) << ex.status();
  absl::StatusOr<std::string> text = ReadText(ex->mlir);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Module> module = ParseModule(*text, ex->mlir);
  ASSERT_TRUE(module.ok()) << module.status();
  const Function* main = module->Find("main");
  ASSERT_NE(main, nullptr) << ex->mlir << " has no @main";

  // Arguments: the named ones, then tokens and targets (integers [B, T]); one f32 loss.
  const size_t n_args = main->params.size();
  ASSERT_EQ(n_args, ex->names.size() + 2) << "one name per non-data argument";
  ASSERT_EQ(main->results.size(), 1u);
  EXPECT_EQ(main->type(main->results[0]), (TensorType{DType::kF32, {}}));
  const TensorType data_type = main->type(main->params[n_args - 1]);
  ASSERT_EQ(data_type.rank(), 2);
  EXPECT_EQ(main->type(main->params[n_args - 2]), data_type);

  std::vector<NamedTensor> inputs;
  std::vector<int> wrt;
  for (size_t i = 0; i < ex->names.size(); ++i) {
    const std::string& name = ex->names[i];
    const TensorType type = main->type(main->params[i]);
    Tensor value = TestParam(name, type, 1000 + i);
    bool trainable = true;
    for (const NamedTensor& f : ex->fixed_inputs) {
      if (f.name == name) value = f.tensor, trainable = false;
    }
    ASSERT_EQ(value.shape(), type.shape) << name;
    inputs.push_back({name, value});
    if (trainable) wrt.push_back(static_cast<int>(i));
  }
  inputs.push_back({"tokens", RandomTensor(data_type, 101, 0, kVocab)});
  inputs.push_back({"targets", RandomTensor(data_type, 102, 0, kVocab)});
  std::vector<Tensor> args;
  for (const NamedTensor& t : inputs) args.push_back(t.tensor);

  // As a job prepares an imported module: the standard passes fold the f64 scale constants in
  // double, then LowerF64ToF32 finds nothing left in f64 (no value computed in lower precision).
  Function prepared = *main;
  ASSERT_TRUE(RunStandardPasses(prepared).ok());
  std::string first_f64;
  absl::StatusOr<int> lowered = LowerF64ToF32(prepared, &first_f64);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(*lowered, 0) << "f64 survives folding at " << first_f64;
  absl::StatusOr<Function> grad_fn = BuildGradientFunction(prepared, wrt);
  ASSERT_TRUE(grad_fn.ok()) << grad_fn.status();
  ASSERT_TRUE(Verify(*grad_fn).ok()) << Verify(*grad_fn);
  // The exported softmax and log-softmax are recognised (autodiff's shift_invariance.h): the
  // gradient adds no equality compare, which reduce max's VJP would (ReLU's adds GE ones).
  auto compares = [](const Function& f) {
    return std::count_if(f.instructions.begin(), f.instructions.end(), [](const Instruction& i) {
      return i.op == Op::kCompare && i.attrs.comparison == ComparisonDirection::kEQ;
    });
  };
  EXPECT_EQ(compares(*grad_fn), compares(prepared));
  // The module as parsed, f64 constants and all, differentiated directly (interpreter only:
  // backends take no f64).
  absl::StatusOr<Function> raw_grad_fn = BuildGradientFunction(*main, wrt);
  ASSERT_TRUE(raw_grad_fn.ok()) << raw_grad_fn.status();

  absl::StatusOr<SafetensorsContents> ref = RunTorch(ex->kind, inputs);
  ASSERT_TRUE(ref.ok()) << ref.status();
  // Every trainable argument has a gradient in torch (names checked by strict loading), and
  // none is zero: a test of a gradient that is identically zero could not fail.
  for (int i : wrt) {
    const Tensor* g = ref->Find("grad." + ex->names[static_cast<size_t>(i)]);
    ASSERT_NE(g, nullptr) << ex->names[static_cast<size_t>(i)];
    double scale = 0;
    for (double x : ::pcp::testing::ToDoubles(*g)) scale = std::max(scale, std::abs(x));
    EXPECT_GT(scale, 1e-7) << "torch's gradient of " << ex->names[static_cast<size_t>(i)] << " vanishes";
  }
  EXPECT_EQ(ref->tensors.size(), wrt.size() + 1) << "torch has trainable parameters the module lacks";

  std::vector<std::pair<std::string, ::pcp::testing::Runner>> runners = ::pcp::testing::Runners();
  runners.insert(runners.begin(), {"interpreter, as parsed", [&](const Function&, const std::vector<Tensor>& a) {
                                     return Interpret(*raw_grad_fn, a);
                                   }});
  for (const auto& [runner_name, run] : runners) {
    SCOPED_TRACE(runner_name);
    absl::StatusOr<std::vector<Tensor>> ours = run(*grad_fn, args);
    ASSERT_TRUE(ours.ok()) << ours.status();
    ASSERT_EQ(ours->size(), wrt.size() + 1);
    ::pcp::testing::ErrorLog log;
    log.Check("loss", (*ours)[0], ref->Find("loss"));
    for (size_t j = 0; j < wrt.size(); ++j) {
      const std::string name = "grad." + ex->names[static_cast<size_t>(wrt[j])];
      log.Check(name, (*ours)[j + 1], ref->Find(name));
    }
    std::cout << "[parity] " << ex->kind << " " << runner_name << ": loss " << (*ours)[0].data<float>()[0]
              << " vs torch " << ref->Find("loss")->data<float>()[0] << "; max relative error over loss and "
              << wrt.size() << " gradients " << log.max_error << " (" << log.worst << ")\n";
  }
}

// The committed examples are what gen_models.py writes (it needs numpy, not torch).
TEST(StablehloExamplesTest, CommittedFilesAreWhatTheGeneratorWrites) {
  if (!PythonCanImport("numpy")) {
    GTEST_SKIP() << kPython << " cannot import numpy (install python3-numpy)";
  }
  ::pcp::testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string cmd = absl::StrCat(kPython, " ", ExamplePath("gen_models.py"), " --out ", dir.path());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char* file :
       {"nanogpt_2l.mlir", "nanogpt_2l.names.txt", "llama_2l.mlir", "llama_2l.safetensors", "llama_2l_forward.mlir"}) {
    absl::StatusOr<std::string> committed = ReadText(ExamplePath(file));
    absl::StatusOr<std::string> generated = ReadText(dir.path() + "/" + file);
    ASSERT_TRUE(committed.ok()) << committed.status();
    ASSERT_TRUE(generated.ok()) << generated.status();
    EXPECT_TRUE(*committed == *generated) << file << " differs from gen_models.py's output: rerun "
                                          << "/usr/bin/python3 examples/stablehlo/gen_models.py";
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, StablehloTorchParityTest, ::testing::Values("nanogpt", "llama"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace pcp
