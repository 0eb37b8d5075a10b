// Split reductions on the Vulkan backend (issue 34; ReduceSplitFor in
// libs/kernels/vulkan/src/kernel_plan.h): a reduction with few outputs and a long reduced extent
// runs as many work groups per output, each reducing a fixed slice, then a dispatch that combines
// the partials in slice order. Without a device: the splitting rule, the plan (a split reduction
// binds its scratch buffer within the device's limit, and is no row kernel's member), the
// generated sources compile, and the default job's train step reduces its gradient norm on many
// work groups. On the device at hand (lavapipe without a GPU): full sums and maxima over 2^20 and
// 3,000,001 elements, [4, 2^18] over either dimension, few outputs over a leading dimension, i32
// and i64, bf16 and f16 inputs, against the reference interpreter at the conformance suite's
// tolerance for reductions (rtol 1e-5, atol 2e-5), the same bits on a second run and from a
// second compilation, and more than one work group where the old kernel had one; reduction groups
// (independent split reductions in two dispatches; the default train step's sums of squares),
// each member with its bits alone. Device cases skip without a Vulkan device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_plan.h"     // libs/kernels/vulkan/src: the planner, without a device
#include "kernel_sources.h"  // libs/kernels/vulkan/src
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/tensor/convert.h"
#include "pcp/testing/tensor_testing.h"
#include "pcp/training/gpt_program.h"
#include "shader_compiler.h"  // libs/kernels/vulkan/src
#include "vulkan_compiled.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;

// The conformance suite's tolerance for f32 reductions of more than 5000 elements
// (conformance_cases.cc).
constexpr double kRtol = 1e-5, kAtol = 2e-5;

struct Case {
  std::string name;
  DType input = DType::kF32;  // bf16 / f16: converted to f32 inside the reduction
  Shape shape;
  std::vector<int64_t> dims;
  ReduceKind kind = ReduceKind::kSum;
};

Function Reduction(const Case& c) {
  FunctionBuilder b(c.name);
  ValueId x = b.Parameter({c.input, c.shape}, "x");
  if (c.input == DType::kF16 || c.input == DType::kBF16) x = b.Convert(x, DType::kF32);
  b.Return({c.kind == ReduceKind::kSum ? b.ReduceSum(x, c.dims) : b.ReduceMax(x, c.dims)});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : Function{};
}

Tensor Argument(const Case& c, uint64_t seed) {
  if (c.input == DType::kI32 || c.input == DType::kI64) return RandomTensor({c.input, c.shape}, seed, -1000, 1000);
  const Tensor x = RandomTensor({DType::kF32, c.shape}, seed);
  if (c.input == DType::kF32) return x;
  absl::StatusOr<Tensor> half = ConvertTensor(x, c.input);
  EXPECT_TRUE(half.ok()) << half.status();
  return half.ok() ? *std::move(half) : x;
}

const Instruction& ReduceOf(const Function& f) {
  for (const Instruction& inst : f.instructions) {
    if (inst.op == Op::kReduce) return inst;
  }
  ADD_FAILURE() << f.name << " has no reduce";
  return f.instructions.back();
}

TEST(VulkanReductionTest, SplitRuleDependsOnShapesOnly) {
  auto split = [](Shape shape, std::vector<int64_t> dims, DType d = DType::kF32) {
    const Function f = Reduction({"split", d, std::move(shape), std::move(dims)});
    return vulkan::ReduceSplitFor(f, ReduceOf(f));
  };
  // A full sum of 2^20: 256 slices of 4096.
  vulkan::ReduceSplit s = split({1 << 20}, {0});
  EXPECT_EQ(s.outputs, 1);
  EXPECT_EQ(s.extent, 1 << 20);
  EXPECT_EQ(s.slices, 256);
  EXPECT_EQ(s.slice, 4096);
  // Not a multiple of the slice: 733 slices of 4093, the last one shorter.
  s = split({3000001}, {0});
  EXPECT_EQ(s.slices, 733);
  EXPECT_EQ(s.slice, 4093);
  EXPECT_LT((s.slices - 1) * s.slice, s.extent);
  EXPECT_GE(s.slices * s.slice, s.extent);
  // Over several dimensions, and over the last of [4, 2^18]: 4 outputs of 64 slices.
  EXPECT_EQ(split({64, 128, 3}, {0, 1, 2}).slices, 6);
  s = split({4, 1 << 18}, {1});
  EXPECT_EQ(s.outputs, 4);
  EXPECT_EQ(s.slices, 64);
  // Enough outputs, or short rows: one work group per output as before.
  EXPECT_FALSE(split({4, 1 << 18}, {0}).split());
  EXPECT_FALSE(split({4096}, {0}).split());
  EXPECT_TRUE(split({4097}, {0}).split());
  EXPECT_TRUE(split({1023, 8192}, {1}).split());
  EXPECT_FALSE(split({1024, 8192}, {1}).split());
  // Integers split too; the slices are capped at 4096 per output.
  EXPECT_TRUE(split({3, 9000}, {1}, DType::kI32).split());
  EXPECT_TRUE(split({9000, 3}, {0}, DType::kI64).split());
  s = split({int64_t{1} << 26}, {0});
  EXPECT_EQ(s.slices, 4096);
  EXPECT_EQ(s.slice, 16384);
}

// Plans `f` (lavapipe's limit of 32 bindings unless `max_bindings`), with or without split
// reductions, and generates every kernel's source.
struct Planned {
  vulkan::KernelPlan plan;
  std::vector<vulkan::KernelSource> sources;
};

Planned Plan(const Function& f, bool split, int max_bindings = 32) {
  Planned p;
  absl::StatusOr<vulkan::KernelPlan> plan =
      vulkan::PlanKernels(f, {.half_moves = true, .split_reductions = split, .max_bindings = max_bindings});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return p;
  p.plan = *std::move(plan);
  for (const vulkan::PlannedKernel& k : p.plan.kernels) {
    absl::StatusOr<vulkan::KernelSource> src = vulkan::KernelSourceFor(f, p.plan, k);
    EXPECT_TRUE(src.ok()) << src.status();
    if (src.ok()) p.sources.push_back(*std::move(src));
  }
  return p;
}

int64_t WorkGroups(const vulkan::KernelSource& s) {
  int64_t g = int64_t{s.groups[0]} * s.groups[1] * s.groups[2];
  if (s.split()) g += int64_t{s.finish_groups[0]} * s.finish_groups[1] * s.finish_groups[2];
  return g;
}

TEST(VulkanReductionTest, FullSumPlansTwoPassesThatCompile) {
  const Function f = Reduction({"sum", DType::kF32, {1 << 20}, {0}});
  const Planned split = Plan(f, true), plain = Plan(f, false);
  ASSERT_EQ(split.sources.size(), 1u);
  ASSERT_EQ(plain.sources.size(), 1u);
  EXPECT_EQ(split.plan.kernels[0].kind, vulkan::KernelKind::kSplitReduce);
  EXPECT_EQ(plain.plan.kernels[0].kind, vulkan::KernelKind::kReduce);
  const vulkan::KernelSource& s = split.sources[0];
  ASSERT_TRUE(s.split());
  EXPECT_EQ(s.groups[0], 256u);
  EXPECT_EQ(s.finish_groups[0], 1u);
  EXPECT_EQ(s.scratch_bytes, 256 * 4);
  EXPECT_EQ(s.bindings(1), 3u);  // the input, the output, the scratch buffer
  EXPECT_FALSE(plain.sources[0].split());
  EXPECT_EQ(WorkGroups(plain.sources[0]), 1);
  EXPECT_EQ(WorkGroups(s), 257);
  // Both passes compile with this machine's shaderc (no device needed), as do the other types'.
  vulkan::ShaderCompiler compiler("");
  for (const Case& c :
       {Case{"sum_f32", DType::kF32, {1 << 20}, {0}}, Case{"max_f32", DType::kF32, {9000, 3}, {0}, ReduceKind::kMax},
        Case{"sum_i32", DType::kI32, {3, 9000}, {1}}, Case{"max_i64", DType::kI64, {5000}, {0}, ReduceKind::kMax},
        Case{"sum_bf16", DType::kBF16, {2, 5000}, {1}}}) {
    const Function g = Reduction(c);
    const Planned p = Plan(g, true);
    ASSERT_EQ(p.sources.size(), 1u) << c.name;
    ASSERT_TRUE(p.sources[0].split()) << c.name;
    EXPECT_TRUE(compiler.Compile(p.sources[0].glsl, c.name).ok()) << c.name << ":\n" << p.sources[0].glsl;
    EXPECT_TRUE(compiler.Compile(p.sources[0].finish_glsl, c.name + "_finish").ok()) << c.name << ":\n"
                                                                                     << p.sources[0].finish_glsl;
  }
}

// A full sum over a sum of many parameters: with its scratch buffer, no kernel binds more than
// the limit (4 is Vulkan's minimum); the init read from a parameter takes a binding too.
TEST(VulkanReductionTest, SplitReductionKeepsWithinBindingLimit) {
  FunctionBuilder b("sum_of_many");
  std::vector<ValueId> p;
  for (int i = 0; i < 12; ++i) p.push_back(b.Parameter({DType::kF32, {3, 3000}}, "p" + std::to_string(i)));
  const ValueId init = b.Parameter({DType::kF32, {}}, "init");
  ValueId s = p[0];
  for (int i = 1; i < 12; ++i) s = b.Add(s, p[static_cast<size_t>(i)]);
  Attributes a;
  a.dims = {0, 1};
  a.reduce_kind = ReduceKind::kSum;
  b.Return({b.Emit(Op::kReduce, {s, init}, a)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  for (int limit : {4, 5, 8, 32}) {
    SCOPED_TRACE(::testing::Message() << "limit " << limit);
    const Planned p = Plan(*f, true, limit);
    int split = 0;
    for (size_t i = 0; i < p.sources.size(); ++i) {
      EXPECT_LE(p.sources[i].bindings(vulkan::OutputsOf(p.plan.kernels[i]).size()), static_cast<size_t>(limit))
          << p.sources[i].name;
      split += p.sources[i].split() ? 1 : 0;
    }
    EXPECT_EQ(split, 1);
  }
}

// The default job's programs (config/jobs/shakespeare_char.yaml: 4 layers x 4 heads x 128,
// block 64, batch 12, vocab 65, no biases; AdamW clipping at 1).
absl::StatusOr<GptProgram> DefaultJobProgram() {
  const GPTConfig model{.vocab_size = 65, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128, .bias = false};
  return BuildGptProgram(model, 12,
                         AdamWConfig{.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0});
}

// The default job's train step (config/jobs/shakespeare_char.yaml: 4 layers x 4 heads x 128,
// block 64, batch 12, vocab 65, no biases; clipping at 1): each sum of squares of the gradient
// norm over more than 4096 elements runs on more than one work group; without the split each
// had one (in a reduce kernel or a one-row row kernel).
TEST(VulkanReductionTest, DefaultTrainStepGradientNormUsesManyWorkGroups) {
  absl::StatusOr<GptProgram> program = DefaultJobProgram();
  ASSERT_TRUE(program.ok()) << program.status();
  const Function& f = program->train_step;
  struct Count {
    int dispatches = 0, norm_kernels = 0, norm_dispatches = 0;
    int64_t work_groups = 0, norm_work_groups = 0, min_norm_groups = 0;
  };
  auto count = [&](bool split) {
    const Planned p = Plan(f, split);
    Count c;
    for (size_t i = 0; i < p.sources.size(); ++i) {
      const vulkan::PlannedKernel& k = p.plan.kernels[i];
      const vulkan::KernelSource& s = p.sources[i];
      c.dispatches += s.split() ? 2 : 1;
      c.work_groups += WorkGroups(s);
      std::vector<int> insts = k.members.empty() ? std::vector<int>{k.instruction} : k.members;
      bool norm = false;
      for (int m : insts) {
        const Instruction& inst = f.instructions[static_cast<size_t>(m)];
        norm |= inst.op == Op::kReduce && f.type(inst.result).num_elements() == 1 &&
                f.type(inst.operands[0]).num_elements() > vulkan::kSplitSliceElements;
      }
      if (!norm) continue;
      ++c.norm_kernels;
      c.norm_dispatches += s.split() ? 2 : 1;
      c.norm_work_groups += WorkGroups(s);
      c.min_norm_groups = c.min_norm_groups == 0 ? WorkGroups(s) : std::min(c.min_norm_groups, WorkGroups(s));
    }
    return c;
  };
  const Count before = count(false), after = count(true);
  std::printf(
      "default train step: %d dispatches, %lld work groups without split reductions; %d dispatches, %lld work "
      "groups with them\n  gradient norm's long sums of squares: %d kernels, %d dispatches, %lld work groups "
      "(at least %lld per kernel) without; %d kernels, %d dispatches, %lld work groups (at least %lld) with\n",
      before.dispatches, static_cast<long long>(before.work_groups), after.dispatches,
      static_cast<long long>(after.work_groups), before.norm_kernels, before.norm_dispatches,
      static_cast<long long>(before.norm_work_groups), static_cast<long long>(before.min_norm_groups),
      after.norm_kernels, after.norm_dispatches, static_cast<long long>(after.norm_work_groups),
      static_cast<long long>(after.min_norm_groups));
  EXPECT_GT(after.norm_kernels, 0);
  EXPECT_EQ(before.min_norm_groups, 1);
  EXPECT_GT(after.min_norm_groups, 2);
}

// Reduction groups: the default train step's sums of squares, one per parameter with more than
// 4096 elements, share two dispatches (a GPU's binding limit), or as few groups as lavapipe's
// limit of 32 allows (each member binds its gradient and its output); none without them.
TEST(VulkanReductionTest, DefaultTrainStepSumsOfSquaresFormReductionGroups) {
  absl::StatusOr<GptProgram> program = DefaultJobProgram();
  ASSERT_TRUE(program.ok()) << program.status();
  const Function& f = program->train_step;
  struct Split {
    int kernels = 0, members = 0;
  };
  auto split = [&](int limit, bool groups) {
    absl::StatusOr<vulkan::KernelPlan> plan =
        vulkan::PlanKernels(f, {.half_moves = true, .reduction_groups = groups, .max_bindings = limit});
    EXPECT_TRUE(plan.ok()) << plan.status();
    Split s;
    for (const vulkan::PlannedKernel& k : plan.ok() ? plan->kernels : std::vector<vulkan::PlannedKernel>{}) {
      if (k.kind != vulkan::KernelKind::kSplitReduce) continue;
      ++s.kernels;
      s.members += k.members.empty() ? 1 : static_cast<int>(k.members.size());
      absl::StatusOr<vulkan::KernelSource> src = vulkan::KernelSourceFor(f, *plan, k);
      EXPECT_TRUE(src.ok()) << src.status();
      if (src.ok()) {
        EXPECT_LE(src->bindings(vulkan::OutputsOf(k).size()), static_cast<size_t>(limit)) << src->name;
      }
    }
    return s;
  };
  const Split alone = split(32, false), gpu = split(1 << 20, true), lavapipe = split(32, true);
  EXPECT_EQ(alone.kernels, 19);
  EXPECT_EQ(gpu.kernels, 1);
  EXPECT_EQ(gpu.members, 19);
  EXPECT_EQ(lavapipe.kernels, 2);
  EXPECT_EQ(lavapipe.members, 19);
}

// Group members: a sum of squares, a maximum, a sum with 3 outputs and a plain sum, all split;
// their results feed one more value. A reduction that reads another's result joins no group
// with it.
Function IndependentReductions() {
  FunctionBuilder b("independent_reductions");
  const ValueId a = b.Parameter({DType::kF32, {5000}}, "a");
  const ValueId m = b.Parameter({DType::kF32, {70001}}, "m");
  const ValueId c = b.Parameter({DType::kF32, {3, 9000}}, "c");
  const ValueId d = b.Parameter({DType::kF32, {9000}}, "d");
  const ValueId squares = b.ReduceSum(b.Mul(a, a), {0});
  const ValueId d_sum = b.ReduceSum(d, {0});
  b.Return({squares, b.ReduceMax(m, {0}), b.ReduceSum(c, {1}), d_sum, b.Add(squares, d_sum)});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : Function{};
}

TEST(VulkanReductionTest, OnlyIndependentSplitReductionsShareAKernel) {
  const Function f = IndependentReductions();
  absl::StatusOr<vulkan::KernelPlan> plan = vulkan::PlanKernels(f, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 2u);  // the group, then the sum of two of its results
  EXPECT_EQ(plan->kernels[0].kind, vulkan::KernelKind::kSplitReduce);
  EXPECT_EQ(plan->kernels[0].members.size(), 4u);
  EXPECT_EQ(plan->kernels[0].outputs.size(), 4u);

  FunctionBuilder b("dependent_reductions");
  const ValueId x = b.Parameter({DType::kF32, {9000}}, "x");
  const ValueId s1 = b.ReduceSum(b.Mul(x, x), {0});
  const ValueId s2 = b.ReduceSum(b.Mul(x, b.BroadcastTo(s1, {9000})), {0});
  b.Return({s1, s2});
  absl::StatusOr<Function> g = b.Build();
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<vulkan::KernelPlan> apart = vulkan::PlanKernels(*g, {});
  ASSERT_TRUE(apart.ok()) << apart.status();
  ASSERT_EQ(apart->kernels.size(), 2u);
  for (const vulkan::PlannedKernel& k : apart->kernels) {
    EXPECT_EQ(k.kind, vulkan::KernelKind::kSplitReduce);
    EXPECT_TRUE(k.members.empty());
  }
}

// Runs `exe` on `backend`; the results.
std::vector<Tensor> RunOn(Backend& backend, Executable& exe, const std::vector<Tensor>& args) {
  std::vector<Tensor> out;
  const Function& f = exe.function();
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in, res;
  for (const Tensor& a : args) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate({a.dtype(), a.shape()});
    EXPECT_TRUE(buf.ok() && backend.CopyIn(a, **buf).ok());
    if (!buf.ok()) return out;
    in.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  for (ValueId r : f.results) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate(f.type(r));
    EXPECT_TRUE(buf.ok()) << buf.status();
    if (!buf.ok()) return out;
    res.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  const absl::Status s = exe.Run(in, res);
  EXPECT_TRUE(s.ok()) << f.name << ": " << s;
  for (Buffer* b : res) {
    absl::StatusOr<Tensor> t = backend.CopyOut(*b);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) out.push_back(*std::move(t));
  }
  return out;
}

double MaxAbsError(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = ::pcp::testing::ToDoubles(got), w = ::pcp::testing::ToDoubles(want);
  double e = 0;
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) e = std::max(e, std::abs(g[i] - w[i]));
  return e;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.byte_size() == b.byte_size() && std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

// Each case against the interpreter, twice from one executable and once from a second
// compilation (the same bits), and against the backend without split reductions (near).
TEST(VulkanReductionTest, SplitReductionsMatchTheInterpreterAndRepeatBitForBit) {
  absl::StatusOr<std::unique_ptr<Backend>> split = CreateVulkanBackend({});
  if (!split.ok()) GTEST_SKIP() << "no Vulkan device: " << split.status();
  absl::StatusOr<std::unique_ptr<Backend>> plain = CreateVulkanBackend({.split_reductions = false});
  ASSERT_TRUE(plain.ok()) << plain.status();
  const std::vector<Case> cases = {
      {"sum_2p20", DType::kF32, {1 << 20}, {0}},
      {"max_2p20", DType::kF32, {1 << 20}, {0}, ReduceKind::kMax},
      {"sum_3000001", DType::kF32, {3000001}, {0}},
      {"max_3000001", DType::kF32, {3000001}, {0}, ReduceKind::kMax},
      {"sum_4x2p18_over_1", DType::kF32, {4, 1 << 18}, {1}},
      {"max_4x2p18_over_1", DType::kF32, {4, 1 << 18}, {1}, ReduceKind::kMax},
      {"sum_4x2p18_over_0", DType::kF32, {4, 1 << 18}, {0}},
      {"sum_65539x5_over_0", DType::kF32, {65539, 5}, {0}},
      {"sum_7x300x41_over_02", DType::kF32, {7, 300, 41}, {0, 2}},
      {"sum_i32_3000001", DType::kI32, {3000001}, {0}},
      {"max_i64_5x70001", DType::kI64, {5, 70001}, {1}, ReduceKind::kMax},
      {"sum_bf16_1000003", DType::kBF16, {1000003}, {0}},
      {"sum_f16_2x300007", DType::kF16, {2, 300007}, {1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.name);
    const Function f = Reduction(c);
    if (absl::Status s = (*split)->Supports(f); !s.ok()) {
      std::printf("%s: skipped (%s)\n", c.name.c_str(), s.ToString().c_str());
      continue;
    }
    const std::vector<Tensor> args = {Argument(c, 100 + i)};
    absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
    ASSERT_TRUE(want.ok()) << want.status();
    const Compiled a = CompileOn(**split, f), b = CompileOn(**split, f), old = CompileOn(**plain, f);
    ASSERT_TRUE(a.exe != nullptr && b.exe != nullptr && old.exe != nullptr);
    const std::vector<Tensor> first = RunOn(**split, *a.exe, args), second = RunOn(**split, *a.exe, args);
    const std::vector<Tensor> other = RunOn(**split, *b.exe, args), unsplit = RunOn(**plain, *old.exe, args);
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(second.size(), 1u);
    ASSERT_EQ(other.size(), 1u);
    ASSERT_EQ(unsplit.size(), 1u);
    const bool exact = c.input == DType::kI32 || c.input == DType::kI64;
    EXPECT_TRUE(TensorsNear(first[0], (*want)[0], exact ? 0 : kRtol, exact ? 0 : kAtol));
    // The unsplit kernel is not held to the tolerance: its 64 lanes each sum 2^14 elements of
    // sum_2p20 in turn, which misses it (8e-4 off 76.68 here).
    if (exact) {
      EXPECT_TRUE(TensorsNear(unsplit[0], (*want)[0], 0, 0));
    }
    EXPECT_TRUE(SameBits(first[0], second[0])) << "a second run gave other bits";
    EXPECT_TRUE(SameBits(first[0], other[0])) << "a second compilation gave other bits";
    const vulkan::ReduceSplit rule = vulkan::ReduceSplitFor(f, ReduceOf(f));
    EXPECT_EQ(a.schedule.split_reductions, rule.split() ? 1 : 0);
    EXPECT_EQ(old.schedule.split_reductions, 0);
    if (rule.split()) {
      EXPECT_EQ(a.schedule.dispatches, 2);
      EXPECT_EQ(a.schedule.work_groups, rule.outputs * rule.slices + rule.outputs);
      EXPECT_EQ(old.schedule.work_groups, rule.outputs);
      EXPECT_LE(a.schedule.max_bindings, a.schedule.binding_limit);
    } else {
      EXPECT_EQ(a.schedule.work_groups, old.schedule.work_groups);
    }
    std::printf(
        "%s: %d dispatches, %lld work groups, max error %.3g (without split reductions: %lld work groups, %.3g)\n",
        c.name.c_str(), a.schedule.dispatches, static_cast<long long>(a.schedule.work_groups),
        MaxAbsError(first[0], (*want)[0]), static_cast<long long>(old.schedule.work_groups),
        MaxAbsError(unsplit[0], (*want)[0]));
  }
}

// A reduction group gives each member the bits it has alone, in 2 dispatches instead of 2 each,
// near the interpreter.
TEST(VulkanReductionTest, ReductionGroupGivesEachMemberItsBitsAlone) {
  absl::StatusOr<std::unique_ptr<Backend>> grouped = CreateVulkanBackend({});
  if (!grouped.ok()) GTEST_SKIP() << "no Vulkan device: " << grouped.status();
  absl::StatusOr<std::unique_ptr<Backend>> alone = CreateVulkanBackend({.reduction_groups = false});
  ASSERT_TRUE(alone.ok()) << alone.status();
  const Function f = IndependentReductions();
  std::vector<Tensor> args;
  for (ValueId p : f.params) args.push_back(RandomTensor(f.type(p), 300 + static_cast<uint64_t>(p)));
  absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
  ASSERT_TRUE(want.ok()) << want.status();
  const Compiled g = CompileOn(**grouped, f), a = CompileOn(**alone, f);
  ASSERT_TRUE(g.exe != nullptr && a.exe != nullptr);
  EXPECT_EQ(g.schedule.reduction_groups, 1);
  EXPECT_EQ(g.schedule.dispatches, 3);  // the group's two passes and the sum
  EXPECT_EQ(a.schedule.reduction_groups, 0);
  EXPECT_EQ(a.schedule.dispatches, 9);
  EXPECT_EQ(g.schedule.work_groups, a.schedule.work_groups);  // the same partials and outputs
  const std::vector<Tensor> got = RunOn(**grouped, *g.exe, args), got_alone = RunOn(**alone, *a.exe, args);
  ASSERT_EQ(got.size(), want->size());
  ASSERT_EQ(got_alone.size(), want->size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(f.result_names[i]);
    EXPECT_TRUE(SameBits(got[i], got_alone[i]));
    EXPECT_TRUE(TensorsNear(got[i], (*want)[i], kRtol, kAtol));
  }
}

}  // namespace
}  // namespace pcp
