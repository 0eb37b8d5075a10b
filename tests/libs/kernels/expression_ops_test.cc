// The CPU backend's expression ops (src/expression_ops.h): every tree shape compiled in, and a
// GPT train step, give the same bits with expression ops as with one pass per op (NaN, ±inf,
// -0, subnormals and overflow included), and the trees do become single ops.
#include "expression_ops.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "cpu_run.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/models/gpt.h"
#include "pcp/testing/tensor_testing.h"
#include "train_step_args.h"

namespace pcp {
namespace {

using ::pcp::testing::TensorsNear;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

using RunResult = ::pcp::testing::CpuRun;
using ::pcp::testing::AllSameBitsOrBothNaN;
using ::pcp::testing::SameBitsOrBothNaN;

RunResult CompileAndRun(const Function& f, const std::vector<Tensor>& args, bool expression_ops, int threads = 2) {
  return ::pcp::testing::RunOnCpu(f, args, {.threads = threads, .expression_ops = expression_ops});
}

// Loop ops over all fused kernels of a schedule ("... ops N loads ...").
int CountOps(const std::string& schedule) {
  static const std::regex kOps(" ops ([0-9]+) ");
  int total = 0;
  for (auto it = std::sregex_iterator(schedule.begin(), schedule.end(), kOps); it != std::sregex_iterator(); ++it) {
    total += std::stoi((*it)[1]);
  }
  return total;
}

// Builds the function of a signature: each leaf a parameter of shape [n] (in leaf order).
class SignatureParser {
 public:
  SignatureParser(const std::string& sig, int64_t n) : sig_(sig), n_(n), b_("tree") {}

  absl::StatusOr<Function> Build() {
    // Parameters first (the builder's rule): one per leaf number.
    static const std::regex kLeaf("[0-9]+");
    int num_leaves = 0;
    for (auto it = std::sregex_iterator(sig_.begin(), sig_.end(), kLeaf); it != std::sregex_iterator(); ++it) {
      num_leaves = std::max(num_leaves, std::stoi(it->str()) + 1);
    }
    // A select's condition is an i1 leaf when not a compare.
    static const std::regex kCondition("select\\(([0-9]+),");
    predicates_.assign(static_cast<size_t>(num_leaves), false);
    for (auto it = std::sregex_iterator(sig_.begin(), sig_.end(), kCondition); it != std::sregex_iterator(); ++it) {
      predicates_[std::stoi((*it)[1])] = true;
    }
    for (int k = 0; k < num_leaves; ++k) {
      leaves_.push_back(b_.Parameter({predicates_[k] ? DType::kBool : DType::kF32, {n_}}));
    }
    ValueId root = Parse();
    if (pos_ != sig_.size()) return absl::InvalidArgumentError("trailing text in " + sig_);
    b_.Return({root});
    return b_.Build();
  }
  int num_leaves() const { return static_cast<int>(leaves_.size()); }
  bool is_predicate(int leaf) const { return predicates_[leaf]; }

 private:
  ValueId Parse() {
    if (std::isdigit(static_cast<unsigned char>(sig_[pos_]))) {
      size_t end = pos_;
      while (end < sig_.size() && std::isdigit(static_cast<unsigned char>(sig_[end]))) ++end;
      const size_t leaf = std::stoul(sig_.substr(pos_, end - pos_));
      pos_ = end;
      return leaves_[leaf];
    }
    const size_t open = sig_.find('(', pos_);
    const std::string name = sig_.substr(pos_, open - pos_);
    pos_ = open + 1;
    ValueId a = Parse();
    if (sig_[pos_] == ')') {
      ++pos_;
      if (name == "neg") return b_.Neg(a);
      if (name == "abs") return b_.Abs(a);
      if (name == "exp") return b_.Exp(a);
      if (name == "log") return b_.Log(a);
      if (name == "tanh") return b_.Tanh(a);
      if (name == "logistic") return b_.Logistic(a);
      if (name == "erf") return b_.Erf(a);
      if (name == "sqrt") return b_.Sqrt(a);
      return b_.Rsqrt(a);
    }
    ++pos_;  // ','
    ValueId c = Parse();
    if (name == "select") {
      ++pos_;  // ','
      ValueId e = Parse();
      ++pos_;  // ')'
      return b_.Select(a, c, e);
    }
    ++pos_;  // ')'
    const std::vector<std::pair<std::string, ComparisonDirection>> compares = {{"cmp_eq", ComparisonDirection::kEQ},
                                                                               {"cmp_ne", ComparisonDirection::kNE},
                                                                               {"cmp_lt", ComparisonDirection::kLT},
                                                                               {"cmp_le", ComparisonDirection::kLE},
                                                                               {"cmp_gt", ComparisonDirection::kGT},
                                                                               {"cmp_ge", ComparisonDirection::kGE}};
    for (const auto& [cmp, direction] : compares) {
      if (name == cmp) return b_.Compare(a, c, direction);
    }
    if (name == "add") return b_.Add(a, c);
    if (name == "sub") return b_.Sub(a, c);
    if (name == "mul") return b_.Mul(a, c);
    if (name == "div") return b_.Div(a, c);
    if (name == "max") return b_.Max(a, c);
    return b_.Min(a, c);
  }

  std::string sig_;
  int64_t n_;
  FunctionBuilder b_;
  size_t pos_ = 0;
  std::vector<ValueId> leaves_;
  std::vector<bool> predicates_;
};

// Values in [-3, 3] with special values mixed in: NaN, ±inf, ±0, subnormals, huge values (whose
// products overflow), tiny ones (whose quotients underflow).
Tensor MixedValues(int64_t n, uint32_t seed) {
  Tensor t(DType::kF32, {n});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            0.0f,
                            -0.0f,
                            1e-40f,
                            -3e-39f,
                            3e38f,
                            -2e38f,
                            1e-30f};
  const float common[] = {1.0f, -1.0f, 2.0f};  // so that compares of two leaves are sometimes equal
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t r = rng();
    t.data<float>()[i] = r % 4 == 0   ? specials[(r >> 8) % std::size(specials)]
                         : r % 4 == 1 ? common[(r >> 8) % std::size(common)]
                                      : uniform(rng);
  }
  return t;
}

// i1 values, 0 or 1.
Tensor Predicates(int64_t n, uint32_t seed) {
  Tensor t(DType::kBool, {n});
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 2);
  return t;
}

TEST(ExpressionOpsTest, EveryCompiledShapeMatchesOpByOpBitForBit) {
  const std::vector<std::string> signatures = cpu::ExpressionSignatures();
  ASSERT_GT(signatures.size(), 40u);
  const int64_t n = 3 * 512 + 77;  // whole blocks and a tail
  for (const std::string& sig : signatures) {
    SignatureParser parser(sig, n);
    absl::StatusOr<Function> f = parser.Build();
    ASSERT_TRUE(f.ok()) << sig << ": " << f.status();
    std::vector<Tensor> args;
    for (int k = 0; k < parser.num_leaves(); ++k) {
      args.push_back(parser.is_predicate(k) ? Predicates(n, 100 + k) : MixedValues(n, 100 + k));
    }
    const RunResult fused = CompileAndRun(*f, args, true);
    const RunResult separate = CompileAndRun(*f, args, false);
    ASSERT_EQ(fused.results.size(), 1u);
    ASSERT_EQ(separate.results.size(), 1u);
    EXPECT_TRUE(SameBitsOrBothNaN(fused.results[0], separate.results[0])) << sig;
    // The whole tree is one op (so the signature is written as the fusion pass writes it).
    EXPECT_EQ(CountOps(fused.schedule), 1) << sig << "\n" << fused.schedule;
    EXPECT_EQ(fused.fused_instructions, separate.fused_instructions) << sig;
    // And the one-pass-per-op result is the interpreter's (finite inputs only: NaN payloads and
    // signs may differ between implementations).
    std::vector<Tensor> finite;
    for (int k = 0; k < parser.num_leaves(); ++k) {
      finite.push_back(parser.is_predicate(k) ? Predicates(n, 7 + k)
                                              : ::pcp::testing::RandomTensor(F32({n}), 7 + k, 0.5, 2));
    }
    const RunResult fused_finite = CompileAndRun(*f, finite, true);
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(*f, finite);
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_TRUE(TensorsNear(fused_finite.results[0], (*expected)[0], 1e-6, 1e-6)) << sig;
  }
}

// Chains with no compiled shape of their own still fuse in pieces, with the same bits.
TEST(ExpressionOpsTest, LongerChainsFuseInPiecesWithTheSameBits) {
  FunctionBuilder b("chain");
  const int64_t n = 2000;
  ValueId x = b.Parameter(F32({n})), y = b.Parameter(F32({n})), z = b.Parameter(F32({n}));
  ValueId t = b.Sub(b.Div(b.Add(b.Mul(x, y), z), b.Sub(y, z)), b.Neg(b.Mul(b.Add(x, z), b.Max(y, x))));
  ValueId u = b.Exp(b.Mul(t, x));  // an op that is no node between two trees
  b.Return({b.Add(b.Mul(u, y), b.Div(u, z)), t});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  const std::vector<Tensor> args = {MixedValues(n, 1), MixedValues(n, 2), MixedValues(n, 3)};
  const RunResult fused = CompileAndRun(*f, args, true, 1);
  const RunResult separate = CompileAndRun(*f, args, false, 1);
  EXPECT_TRUE(AllSameBitsOrBothNaN(fused.results, separate.results));
  EXPECT_LT(CountOps(fused.schedule), CountOps(separate.schedule)) << fused.schedule;
  EXPECT_EQ(fused.fused_instructions, separate.fused_instructions);
}

// The GPT train step (forward, backward with its reductions and row kernels, AdamW): every
// result the same bits with and without expression ops, for one and two threads.
TEST(ExpressionOpsTest, GptTrainStepIsBitwiseIdentical) {
  absl::StatusOr<::pcp::testing::GptTrainStep> s = ::pcp::testing::SmallGptTrainStep();
  ASSERT_TRUE(s.ok()) << s.status();
  for (int threads : {1, 2}) {
    const RunResult fused = CompileAndRun(s->step, s->args, true, threads);
    const RunResult separate = CompileAndRun(s->step, s->args, false, threads);
    EXPECT_TRUE(AllSameBitsOrBothNaN(fused.results, separate.results)) << threads << " threads";
    EXPECT_EQ(fused.fused_instructions, separate.fused_instructions);
    EXPECT_LT(CountOps(fused.schedule), CountOps(separate.schedule) * 2 / 3) << fused.schedule;
  }
}

}  // namespace
}  // namespace pcp
