// Behaviour of backends beyond single ops (fusion, results over arguments, state kept on
// the device over many steps, argument checking), on every test backend, plus the CPU
// backend's own promises: its memory plan and identical results for any thread count.
#include "pcp/kernels/cpu_backend.h"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/testing/tensor_testing.h"
#include "test_backends.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;
using ::pcp::testing::TestBackends;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

// Buffers for one set of tensors on one backend.
struct Buffers {
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> ptrs;
};

absl::StatusOr<Buffers> Upload(Backend& backend, const std::vector<Tensor>& tensors) {
  Buffers b;
  for (const Tensor& t : tensors) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate({t.dtype(), t.shape()});
    if (!buf.ok()) return buf.status();
    if (absl::Status s = backend.CopyIn(t, **buf); !s.ok()) return s;
    b.ptrs.push_back(buf->get());
    b.owned.push_back(*std::move(buf));
  }
  return b;
}

absl::StatusOr<Buffers> AllocateResults(Backend& backend, const Function& f) {
  Buffers b;
  for (ValueId r : f.results) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate(f.type(r));
    if (!buf.ok()) return buf.status();
    b.ptrs.push_back(buf->get());
    b.owned.push_back(*std::move(buf));
  }
  return b;
}

std::vector<Tensor> Download(Backend& backend, const std::vector<Buffer*>& buffers) {
  std::vector<Tensor> out;
  for (Buffer* b : buffers) {
    absl::StatusOr<Tensor> t = backend.CopyOut(*b);
    EXPECT_TRUE(t.ok()) << t.status();
    out.push_back(t.ok() ? *t : Tensor());
  }
  return out;
}

// Compiles and runs `f` once on fresh buffers.
absl::StatusOr<std::vector<Tensor>> RunOnce(Backend& backend, const Function& f, const std::vector<Tensor>& args,
                                            std::unique_ptr<Executable>* keep = nullptr) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend.Compile(f);
  if (!exe.ok()) return exe.status();
  absl::StatusOr<Buffers> in = Upload(backend, args);
  if (!in.ok()) return in.status();
  absl::StatusOr<Buffers> out = AllocateResults(backend, f);
  if (!out.ok()) return out.status();
  if (absl::Status s = (*exe)->Run(in->ptrs, out->ptrs); !s.ok()) return s;
  std::vector<Tensor> results = Download(backend, out->ptrs);
  if (keep != nullptr) *keep = *std::move(exe);
  return results;
}

void ExpectAllNear(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected, double rtol, double atol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(TensorsNear(actual[i], expected[i], rtol, atol)) << "result " << i;
  }
}

const CpuExecutable* AsCpu(const std::unique_ptr<Executable>& exe) {
  return dynamic_cast<const CpuExecutable*>(exe.get());
}

// AdamW on a linear least-squares model: train(w, m, v, t, x, y) -> (w', m', v', t', loss).
absl::StatusOr<Function> LinearAdamW() {
  FunctionBuilder b("train");
  ValueId w = b.Parameter(F32({8, 4}), "w"), m = b.Parameter(F32({8, 4}), "m"), v = b.Parameter(F32({8, 4}), "v");
  ValueId t = b.Parameter(F32({}), "t"), x = b.Parameter(F32({32, 8}), "x"), y = b.Parameter(F32({32, 4}), "y");
  auto c = [&](double value) { return b.ScalarConstant(value); };
  ValueId diff = b.Sub(b.MatMul(x, w), y);
  ValueId loss = b.Mul(b.ReduceSum(b.Mul(diff, diff), {0, 1}), c(1.0 / 128));
  ValueId g = b.DotGeneral(x, b.BMul(diff, c(2.0 / 128)), {{}, {}, {0}, {0}});
  ValueId m2 = b.BAdd(b.BMul(m, c(0.9)), b.BMul(g, c(0.1)));
  ValueId v2 = b.BAdd(b.BMul(v, c(0.999)), b.BMul(b.Mul(g, g), c(0.001)));
  ValueId mhat = b.BDiv(m2, b.Sub(c(1.0), b.Pow(c(0.9), t)));
  ValueId vhat = b.BDiv(v2, b.Sub(c(1.0), b.Pow(c(0.999), t)));
  ValueId update = b.BAdd(b.Div(mhat, b.BAdd(b.Sqrt(vhat), c(1e-8))), b.BMul(w, c(0.01)));
  ValueId w2 = b.Sub(w, b.BMul(update, c(0.05)));
  b.Return({w2, m2, v2, b.Add(t, c(1.0)), loss}, {"w", "m", "v", "t", "loss"});
  return b.Build();
}

class BackendBehaviourTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    const auto& tb = TestBackends()[GetParam()];
    absl::StatusOr<std::unique_ptr<Backend>> b = tb.create();
    if (!b.ok()) GTEST_SKIP() << tb.name << " unavailable: " << b.status();
    backend_ = *std::move(b);
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(BackendBehaviourTest, FusedElementwiseChainMatchesInterpreter) {
  // GELU (tanh form) of x + bias: broadcasts, constants and ten elementwise ops.
  FunctionBuilder b("gelu");
  ValueId x = b.Parameter(F32({64, 130})), bias = b.Parameter(F32({130}));
  ValueId y = b.BAdd(x, bias);
  ValueId inner =
      b.BMul(b.BAdd(y, b.BMul(b.Mul(b.Mul(y, y), y), b.ScalarConstant(0.044715))), b.ScalarConstant(0.7978845608));
  ValueId out = b.BMul(b.Mul(y, b.BAdd(b.Tanh(inner), b.ScalarConstant(1.0))), b.ScalarConstant(0.5));
  b.Return({out});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<Tensor> args = {RandomTensor(F32({64, 130}), 1, -3, 3), RandomTensor(F32({130}), 2)};
  std::unique_ptr<Executable> exe;
  absl::StatusOr<std::vector<Tensor>> got = RunOnce(*backend_, *f, args, &exe);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectAllNear(*got, *Interpret(*f, args), 2e-6, 1e-6);
  if (const CpuExecutable* cpu = AsCpu(exe)) {
    EXPECT_EQ(cpu->stats().num_kernels, 1) << cpu->DescribeSchedule();
    EXPECT_EQ(cpu->stats().num_fused_instructions, 10) << cpu->DescribeSchedule();
  }
}

TEST_P(BackendBehaviourTest, LayerNormAndSoftmaxFuseReductions) {
  FunctionBuilder b("norms");
  const Shape s = {48, 128};
  ValueId x = b.Parameter(F32(s)), gamma = b.Parameter(F32({128}));
  ValueId mean = b.BMul(b.ReduceSum(x, {1}), b.ScalarConstant(1.0 / 128));
  ValueId xc = b.BSub(x, b.BroadcastInDim(mean, s, {0}));
  ValueId var = b.BMul(b.ReduceSum(b.Mul(xc, xc), {1}), b.ScalarConstant(1.0 / 128));
  ValueId rstd = b.Rsqrt(b.BAdd(var, b.ScalarConstant(1e-5)));
  ValueId ln = b.BMul(b.Mul(xc, b.BroadcastInDim(rstd, s, {0})), gamma);
  ValueId mx = b.ReduceMax(ln, {1});
  ValueId e = b.Exp(b.Sub(ln, b.BroadcastInDim(mx, s, {0})));
  ValueId softmax = b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {1}), s, {0}));
  b.Return({ln, softmax});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<Tensor> args = {RandomTensor(F32(s), 3, -2, 2), RandomTensor(F32({128}), 4)};
  std::unique_ptr<Executable> exe;
  absl::StatusOr<std::vector<Tensor>> got = RunOnce(*backend_, *f, args, &exe);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectAllNear(*got, *Interpret(*f, args), 1e-5, 1e-6);
  if (const CpuExecutable* cpu = AsCpu(exe)) {
    // sum(x); mean; [x - mean, square, sum]; rstd; [normalise, max]; [exp, sum]; divide.
    EXPECT_LE(cpu->stats().num_kernels, 8) << cpu->DescribeSchedule();
  }
}

TEST_P(BackendBehaviourTest, StateStaysOnDeviceOverManySteps) {
  absl::StatusOr<Function> f = LinearAdamW();
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<Tensor> state = {RandomTensor(F32({8, 4}), 5), Tensor(DType::kF32, {8, 4}), Tensor(DType::kF32, {8, 4}),
                               Tensor::Scalar<float>(1.0f)};
  const Tensor x = RandomTensor(F32({32, 8}), 6), y = RandomTensor(F32({32, 4}), 7);
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend_->Compile(*f);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<Tensor> args = state;
  args.push_back(x);
  args.push_back(y);
  absl::StatusOr<Buffers> in = Upload(*backend_, args);
  ASSERT_TRUE(in.ok()) << in.status();
  absl::StatusOr<std::unique_ptr<Buffer>> loss_buffer = backend_->Allocate(F32({}));
  ASSERT_TRUE(loss_buffer.ok());
  // w, m, v, t are updated in place: each result buffer is its argument's buffer.
  std::vector<Buffer*> results = {in->ptrs[0], in->ptrs[1], in->ptrs[2], in->ptrs[3], loss_buffer->get()};
  std::vector<Tensor> expected = args;
  Tensor expected_loss;
  for (int step = 0; step < 6; ++step) {
    ASSERT_TRUE((*exe)->Run(in->ptrs, results).ok());
    absl::StatusOr<std::vector<Tensor>> ref = Interpret(*f, expected);
    ASSERT_TRUE(ref.ok()) << ref.status();
    for (int i = 0; i < 4; ++i) expected[i] = (*ref)[i];
    expected_loss = (*ref)[4];
  }
  std::vector<Tensor> got = Download(*backend_, results);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(TensorsNear(got[i], expected[i], 1e-4, 1e-5)) << f->result_names[i];
  EXPECT_TRUE(TensorsNear(got[4], expected_loss, 1e-4, 1e-6));
  EXPECT_EQ(got[3].data<float>()[0], 7.0f);
  if (const CpuExecutable* cpu = AsCpu(*exe)) {
    // Every state result is written in place by the kernel computing it, no copy at the end.
    EXPECT_EQ(cpu->stats().num_direct_results, 5) << cpu->DescribeSchedule();
    EXPECT_TRUE(cpu->CheckMemoryPlan().ok());
  }
}

TEST_P(BackendBehaviourTest, ResultsOverArgumentsReadAsIfArgumentsWereReadFirst) {
  // (b + 1, a + 1, a^T + a): every result buffer is an argument buffer that other results read.
  FunctionBuilder b("swap");
  ValueId a = b.Parameter(F32({9, 9})), c = b.Parameter(F32({9, 9}));
  b.Parameter(F32({9, 9}));  // d: only its buffer is used, as a result
  ValueId one = b.Full(1.0, F32({9, 9}));
  b.Return({b.Add(c, one), b.Add(a, one), b.Add(b.Transpose(a, {1, 0}), a), c, a});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<Tensor> args = {RandomTensor(F32({9, 9}), 8), RandomTensor(F32({9, 9}), 9),
                              RandomTensor(F32({9, 9}), 10)};
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(*f, args);
  ASSERT_TRUE(expected.ok());
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend_->Compile(*f);
  ASSERT_TRUE(exe.ok()) << exe.status();
  for (int pattern = 0; pattern < 3; ++pattern) {
    absl::StatusOr<Buffers> in = Upload(*backend_, args);
    ASSERT_TRUE(in.ok());
    absl::StatusOr<Buffers> extra = AllocateResults(*backend_, *f);
    ASSERT_TRUE(extra.ok());
    std::vector<Buffer*> results = extra->ptrs;
    Buffer* A = in->ptrs[0];
    Buffer* C = in->ptrs[1];
    Buffer* D = in->ptrs[2];
    if (pattern == 0) results = {A, C, D, results[3], results[4]};  // c+1 over a, a+1 over c
    if (pattern == 1) results = {results[0], results[1], A, D, C};  // a^T+a over a, c over d, a over c
    if (pattern == 2) results = {D, results[1], C, A, results[4]};
    ASSERT_TRUE((*exe)->Run(in->ptrs, results).ok()) << "pattern " << pattern;
    ExpectAllNear(Download(*backend_, results), *expected, 1e-7, 0);
  }
}

TEST_P(BackendBehaviourTest, ResultsMayBeParametersConstantsViewsOrRepeated) {
  FunctionBuilder b("odd_results");
  ValueId p = b.Parameter(F32({3, 5}));
  ValueId twice = b.Add(p, p);
  b.Return({p, b.Transpose(p, {1, 0}), b.Constant(Tensor::FromVector<float>({2}, {4, 5})), twice, twice,
            b.Reshape(twice, {15})});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok());
  std::vector<Tensor> args = {RandomTensor(F32({3, 5}), 11)};
  absl::StatusOr<std::vector<Tensor>> got = RunOnce(*backend_, *f, args);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectAllNear(*got, *Interpret(*f, args), 0, 0);
}

TEST_P(BackendBehaviourTest, ZeroSizedTensors) {
  FunctionBuilder b("empty");
  ValueId x = b.Parameter(F32({0, 5})), w = b.Parameter(F32({5, 3}));
  b.Return({b.Add(x, x), b.ReduceSum(x, {0}), b.MatMul(x, w), b.ReduceMax(x, {1})});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<Tensor> args = {Tensor(DType::kF32, {0, 5}), RandomTensor(F32({5, 3}), 12)};
  absl::StatusOr<std::vector<Tensor>> got = RunOnce(*backend_, *f, args);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectAllNear(*got, *Interpret(*f, args), 0, 0);
}

// A Buffer no backend made.
class ForeignBuffer : public Buffer {
 public:
  const TensorType& type() const override { return type_; }
  TensorType type_ = F32({2});
};

TEST_P(BackendBehaviourTest, RejectsBadArguments) {
  FunctionBuilder b("neg");
  ValueId x = b.Parameter(F32({2}));
  b.Return({b.Neg(x)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok());
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend_->Compile(*f);
  ASSERT_TRUE(exe.ok());
  auto good = backend_->Allocate(F32({2}));
  auto other = backend_->Allocate(F32({2}));
  auto wrong = backend_->Allocate(F32({3}));
  ASSERT_TRUE(good.ok() && other.ok() && wrong.ok());
  ForeignBuffer foreign;
  std::vector<Buffer*> ok_args = {good->get()}, ok_results = {other->get()};
  EXPECT_EQ((*exe)->Run({}, ok_results).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*exe)->Run(std::vector<Buffer*>{wrong->get()}, ok_results).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*exe)->Run(ok_args, std::vector<Buffer*>{wrong->get()}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*exe)->Run(std::vector<Buffer*>{&foreign}, ok_results).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*exe)->Run(std::vector<Buffer*>{nullptr}, ok_results).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->CopyIn(Tensor(DType::kF32, {3}), **good).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->CopyIn(Tensor(DType::kF32, {2}), foreign).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*exe)->Run(ok_args, ok_results).ok());
  EXPECT_TRUE((*exe)->Run(ok_args, ok_args).ok());  // in place
}

TEST_P(BackendBehaviourTest, RejectsDuplicateResultBuffers) {
  FunctionBuilder b("two");
  ValueId x = b.Parameter(F32({2}));
  b.Return({b.Neg(x), b.Abs(x)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok());
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend_->Compile(*f);
  ASSERT_TRUE(exe.ok());
  auto in = backend_->Allocate(F32({2}));
  auto out = backend_->Allocate(F32({2}));
  ASSERT_TRUE(in.ok() && out.ok());
  EXPECT_EQ((*exe)->Run(std::vector<Buffer*>{in->get()}, std::vector<Buffer*>{out->get(), out->get()}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(BackendBehaviourTest, RejectsInvalidFunctions) {
  Function f;  // a result that is not a value
  f.name = "broken";
  f.results = {3};
  f.result_names = {""};
  EXPECT_FALSE(backend_->Supports(f).ok());
  EXPECT_FALSE(backend_->Compile(f).ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendBehaviourTest, ::testing::Range(0, static_cast<int>(TestBackends().size())),
                         [](const ::testing::TestParamInfo<int>& info) { return TestBackends()[info.param].name; });

// ---- CPU backend specifics --------------------------------------------------------------

TEST(CpuBackendTest, HalfPrecisionMovesButDoesNotCompute) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 2});
  FunctionBuilder b("half");
  ValueId x = b.Parameter({DType::kBF16, {3, 4}});
  b.Return({b.Transpose(x, {1, 0})});
  absl::StatusOr<Function> moves = b.Build();
  ASSERT_TRUE(moves.ok());
  EXPECT_TRUE(cpu->Supports(*moves).ok());
  Tensor t(DType::kBF16, {3, 4});
  for (int i = 0; i < 12; ++i) static_cast<uint16_t*>(t.raw_data())[i] = static_cast<uint16_t>(0x3f80 + i);
  absl::StatusOr<std::vector<Tensor>> got = RunOnce(*cpu, *moves, {t});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(BitwiseEqual((*got)[0], (*Interpret(*moves, {t}))[0]));

  FunctionBuilder c("half_add");
  ValueId y = c.Parameter({DType::kF16, {3}});
  c.Return({c.Add(y, y)});
  absl::StatusOr<Function> computes = c.Build();
  ASSERT_TRUE(computes.ok());
  EXPECT_EQ(cpu->Supports(*computes).code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(cpu->Compile(*computes).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(CpuBackendTest, BackwardRecomputesCheapForwardValuesInsteadOfStoringThem) {
  // A gelu-like forward h * erf(h) feeds five layers, and a "backward" at the end needs
  // exp(-h^2) of the same h: that chain is recomputed there from x and b, not stored.
  FunctionBuilder b("recompute");
  const Shape s = {64, 300};
  ValueId x = b.Parameter(F32(s)), bias = b.Parameter(F32({300})), w = b.Parameter(F32({300, 300}));
  ValueId h = b.BAdd(x, bias);
  ValueId pdf = b.Exp(b.Neg(b.Mul(h, h)));
  ValueId a = b.Mul(h, b.Erf(h));
  for (int i = 0; i < 5; ++i) a = b.Tanh(b.MatMul(a, w));
  b.Return({b.Mul(a, pdf)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<Tensor> args = {RandomTensor(F32(s), 1), RandomTensor(F32({300}), 2),
                              RandomTensor(F32({300, 300}), 3, -0.1, 0.1)};
  // On OpenBLAS: the own sgemm's products would each add a temporary, the packed operand
  // their blocks share, to the count of arena bytes.
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 2, .gemm = CpuBackendOptions::Gemm::kOpenBlas});
  std::unique_ptr<Executable> exe;
  absl::StatusOr<std::vector<Tensor>> got = RunOnce(*cpu, *f, args, &exe);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectAllNear(*got, *Interpret(*f, args), 1e-5, 1e-5);
  // Stored: h * erf(h), five products, four tanh (the fifth is fused into the result) and
  // the result; not exp(-h^2).
  EXPECT_EQ(AsCpu(exe)->stats().intermediate_bytes, 11 * 64 * 300 * 4) << AsCpu(exe)->DescribeSchedule();
}

// Compiles and runs the forward pass of an MLP of `layers` tanh(h · w) layers on [rows, width]
// inputs (weights uniform in ±weight_scale), summed over `sum_dims`, on 2 threads; checks the
// result against the interpreter and leaves the executable in *exe.
void RunTanhMlp(int64_t rows, int64_t width, int layers, std::vector<int64_t> sum_dims, double weight_scale,
                std::unique_ptr<Executable>* exe) {
  FunctionBuilder b("mlp");
  ValueId h = b.Parameter(F32({rows, width}));
  std::vector<ValueId> weights;
  for (int i = 0; i < layers; ++i) weights.push_back(b.Parameter(F32({width, width})));
  for (ValueId w : weights) h = b.Tanh(b.MatMul(h, w));
  b.Return({b.ReduceSum(h, std::move(sum_dims))});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok());
  std::vector<Tensor> args = {RandomTensor(F32({rows, width}), 7)};
  for (int i = 0; i < layers; ++i)
    args.push_back(RandomTensor(F32({width, width}), 100 + i, -weight_scale, weight_scale));
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 2});
  absl::StatusOr<std::vector<Tensor>> got = RunOnce(*cpu, *f, args, exe);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectAllNear(*got, *Interpret(*f, args), 1e-4, 1e-4);
}

// An arena of 2 MiB or more is allocated in huge pages where the OS offers them
// (cpu_executable.cc): the same results as any other arena.
TEST(CpuBackendTest, AnArenaOfSeveralMegabytesGivesTheInterpretersResults) {
  // 1.5 MiB activations, two live at a time.
  std::unique_ptr<Executable> exe;
  ASSERT_NO_FATAL_FAILURE(RunTanhMlp(1536, 256, 3, {0}, 0.1, &exe));
  const CpuExecutable* e = AsCpu(exe);
  ASSERT_NE(e, nullptr);
  EXPECT_GE(e->stats().arena_bytes, int64_t{2} << 20) << e->DescribeSchedule();
  EXPECT_TRUE(e->CheckMemoryPlan().ok());
}

TEST(CpuBackendTest, MemoryPlanSharesMemoryAndNeverOverlapsLiveBuffers) {
  // A 12-layer MLP's forward pass: most activations die quickly.
  std::unique_ptr<Executable> exe;
  ASSERT_NO_FATAL_FAILURE(RunTanhMlp(64, 96, 12, {0, 1}, 0.2, &exe));
  const CpuExecutable* e = AsCpu(exe);
  ASSERT_NE(e, nullptr);
  const CpuExecutableStats st = e->stats();
  EXPECT_LT(st.arena_bytes, st.intermediate_bytes / 4) << e->DescribeSchedule();
  EXPECT_GE(st.arena_bytes, 2 * 64 * 96 * 4);  // a layer's input and output are live together
  EXPECT_TRUE(e->CheckMemoryPlan().ok());
  // The same check, independently: blocks alive at the same time never share bytes.
  const std::vector<ArenaBlock> blocks = e->arena_blocks();
  ASSERT_FALSE(blocks.empty());
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_LE(blocks[i].offset + blocks[i].size, st.arena_bytes);
    for (size_t j = 0; j < i; ++j) {
      const ArenaBlock& x = blocks[i];
      const ArenaBlock& y = blocks[j];
      const bool live_together = x.first <= y.last && y.first <= x.last;
      const bool overlap = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      EXPECT_FALSE(live_together && overlap) << x.what << " and " << y.what;
    }
  }
}

TEST(CpuBackendTest, OneAndTwoThreadsGiveIdenticalResults) {
  FunctionBuilder b("mixed");
  const Shape s = {300, 257};
  ValueId x = b.Parameter(F32(s)), w = b.Parameter(F32({257, 64})), bias = b.Parameter(F32({257}));
  ValueId y = b.Tanh(b.BMul(b.BAdd(x, bias), b.Exp(x)));
  b.Return({y, b.ReduceSum(y, {1}), b.ReduceSum(y, {0}), b.ReduceMax(y, {0, 1}), b.ReduceSum(b.Mul(y, y), {0, 1}),
            b.MatMul(y, w)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok());
  std::vector<Tensor> args = {RandomTensor(F32(s), 1), RandomTensor(F32({257, 64}), 2), RandomTensor(F32({257}), 3)};
  std::unique_ptr<Backend> one = CreateCpuBackend({.threads = 1});
  std::unique_ptr<Backend> two = CreateCpuBackend({.threads = 2});
  absl::StatusOr<std::vector<Tensor>> a = RunOnce(*one, *f, args);
  absl::StatusOr<std::vector<Tensor>> c = RunOnce(*two, *f, args);
  ASSERT_TRUE(a.ok() && c.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_TRUE(BitwiseEqual((*a)[i], (*c)[i])) << "result " << i << " differs between 1 and 2 threads";
  }
  ExpectAllNear(*c, *Interpret(*f, args), 1e-4, 1e-4);
}

// Products are split into blocks by their shape, never by the thread count, so that each
// output element comes from the same sgemm call whatever the number of threads: bitwise
// equality then holds on any CPU, whichever kernels OpenBLAS picks for it.
TEST(CpuBackendTest, ProductsAreBitwiseIdenticalForEveryThreadCount) {
  struct Product {
    const char* name;
    Shape lhs, rhs;
    DotDims dims;
  };
  const std::vector<Product> products = {
      {"rows_split", {300, 257}, {257, 64}, {{}, {}, {1}, {0}}},
      {"columns_split", {48, 200}, {200, 777}, {{}, {}, {1}, {0}}},
      {"lhs_transposed", {130, 517}, {130, 96}, {{}, {}, {0}, {0}}},
      {"rhs_transposed", {1000, 64}, {65, 64}, {{}, {}, {1}, {1}}},
      {"few_batches", {3, 300, 70}, {3, 70, 90}, {{0}, {0}, {2}, {1}}},
      {"many_batches", {24, 64, 32}, {24, 32, 64}, {{0}, {0}, {2}, {1}}},
      {"long_contraction", {100, 2000}, {2000, 40}, {{}, {}, {1}, {0}}},
      {"narrow_halves", {768, 128}, {768, 128}, {{}, {}, {0}, {0}}},  // 2 row halves of 64
      {"narrow_column_halves", {768, 65}, {768, 150}, {{}, {}, {0}, {0}}},
  };
  // On OpenBLAS's sgemm and on the backend's own (on a CPU without AVX2+FMA both are OpenBLAS).
  for (CpuBackendOptions::Gemm gemm : {CpuBackendOptions::Gemm::kOpenBlas, CpuBackendOptions::Gemm::kOwn}) {
    const char* path = gemm == CpuBackendOptions::Gemm::kOwn ? " (own sgemm)" : " (OpenBLAS)";
    for (const Product& p : products) {
      FunctionBuilder b(p.name);
      ValueId x = b.Parameter(F32(p.lhs)), y = b.Parameter(F32(p.rhs));
      b.Return({b.DotGeneral(x, y, p.dims)});
      absl::StatusOr<Function> f = b.Build();
      ASSERT_TRUE(f.ok()) << p.name << ": " << f.status();
      const std::vector<Tensor> args = {RandomTensor(F32(p.lhs), 7), RandomTensor(F32(p.rhs), 8)};
      absl::StatusOr<std::vector<Tensor>> one = RunOnce(*CreateCpuBackend({.threads = 1, .gemm = gemm}), *f, args);
      ASSERT_TRUE(one.ok()) << p.name << path << ": " << one.status();
      ExpectAllNear(*one, *Interpret(*f, args), 1e-4, 1e-4);
      for (int threads : {2, 3, 4}) {
        absl::StatusOr<std::vector<Tensor>> got =
            RunOnce(*CreateCpuBackend({.threads = threads, .gemm = gemm}), *f, args);
        ASSERT_TRUE(got.ok()) << p.name << path << ": " << got.status();
        EXPECT_TRUE(BitwiseEqual((*one)[0], (*got)[0]))
            << p.name << path << " differs between 1 and " << threads << " threads";
      }
    }
  }
}

// A linear layer's bias add that nothing elementwise follows (the product then goes to
// slices, as q, k, v do) is done by the product's kernel, block by block: one kernel less, and
// the same bits as a separate add (forced here by also returning the product itself). On
// OpenBLAS, shallow products (K <= 128) start from the bias (sgemm with beta = 1), deeper ones
// add it after the call; the own sgemm adds it in registers after the last depth slice; odd
// depths and widths, one block and several, 1 and 2 threads, both product paths.
TEST(CpuBackendTest, ProductKernelAddsALinearLayersBias) {
  struct Case {
    int64_t rows, k, n;
  };
  auto build = [&](const Case& c, bool return_product, bool row_bias) {
    FunctionBuilder b("linear");
    const int64_t n = c.n;
    ValueId x = b.Parameter(F32({3, c.rows, c.k})), w = b.Parameter(F32({n, c.k}));
    ValueId bias = b.Parameter(F32({row_bias ? n : c.rows}));
    ValueId y = b.DotGeneral(x, w, {{}, {}, {2}, {1}});  // [3, rows, n]
    ValueId with_bias = b.Add(y, b.BroadcastInDim(bias, {3, c.rows, n}, {row_bias ? int64_t{2} : int64_t{1}}));
    std::vector<ValueId> results = {b.Slice(with_bias, {0, 0, n / 3}, {3, c.rows, n}),
                                    b.Slice(with_bias, {0, 0, 0}, {3, c.rows, n / 3})};
    if (return_product) results.push_back(y);
    b.Return(results);
    return b.Build();
  };
  {
    // A bias computed after the product (here a reduction of a later input) is added by a
    // kernel of its own.
    FunctionBuilder b("late_bias");
    ValueId x = b.Parameter(F32({100, 64})), w = b.Parameter(F32({64, 96})), z = b.Parameter(F32({5, 96}));
    ValueId y = b.MatMul(x, w);
    ValueId bias = b.ReduceSum(b.Mul(z, z), {0});
    ValueId with_bias = b.Add(y, b.BroadcastInDim(bias, {100, 96}, {1}));
    b.Return({b.Slice(with_bias, {0, 0}, {100, 32})});
    absl::StatusOr<Function> f = b.Build();
    ASSERT_TRUE(f.ok()) << f.status();
    const std::vector<Tensor> args = {RandomTensor(F32({100, 64}), 4), RandomTensor(F32({64, 96}), 5),
                                      RandomTensor(F32({5, 96}), 6)};
    absl::StatusOr<std::vector<Tensor>> got = RunOnce(*CreateCpuBackend({.threads = 2}), *f, args);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectAllNear(*got, *Interpret(*f, args), 1e-4, 1e-4);
  }
  for (const Case& c : {Case{100, 64, 96}, Case{67, 77, 97}, Case{100, 128, 33}, Case{5, 1, 17}, Case{67, 129, 96},
                        Case{67, 600, 40}, Case{100, 300, 50}}) {
    for (bool row_bias : {true, false}) {
      SCOPED_TRACE(
          ::testing::Message() << "[3, " << c.rows << ", " << c.k << "] x [" << c.n << ", " << c.k << "], "
                               << (row_bias ? "bias along columns" : "bias along rows (not a linear layer's)"));
      absl::StatusOr<Function> fused = build(c, false, row_bias), separate = build(c, true, row_bias);
      ASSERT_TRUE(fused.ok() && separate.ok());
      const std::vector<Tensor> args = {RandomTensor(F32({3, c.rows, c.k}), 1), RandomTensor(F32({c.n, c.k}), 2),
                                        RandomTensor(F32({row_bias ? c.n : c.rows}), 3)};
      for (int run = 0; run < 4; ++run) {
        const int threads = 1 + run % 2;
        const auto gemm = run < 2 ? CpuBackendOptions::Gemm::kOpenBlas : CpuBackendOptions::Gemm::kOwn;
        SCOPED_TRACE(::testing::Message()
                     << threads << " threads, " << (run < 2 ? "OpenBLAS" : "own sgemm (OpenBLAS without AVX2+FMA)"));
        // Without epilogues, so that the separate add stays a kernel of its own (a loop run
        // inside the product's kernel: LoopsAfterAProductRunOverItsBlocks).
        std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = threads, .epilogues = false, .gemm = gemm});
        std::unique_ptr<Executable> fused_exe, separate_exe;
        absl::StatusOr<std::vector<Tensor>> a = RunOnce(*cpu, *fused, args, &fused_exe);
        absl::StatusOr<std::vector<Tensor>> sep = RunOnce(*cpu, *separate, args, &separate_exe);
        ASSERT_TRUE(a.ok()) << a.status();
        ASSERT_TRUE(sep.ok()) << sep.status();
        ExpectAllNear(*a, *Interpret(*fused, args), 1e-4, 1e-4);
        for (int i = 0; i < 2; ++i) EXPECT_TRUE(BitwiseEqual((*a)[i], (*sep)[i])) << "result " << i;
        const std::string schedule = AsCpu(fused_exe)->DescribeSchedule();
        EXPECT_EQ(schedule.find("+ bias") != std::string::npos, row_bias) << schedule;
        EXPECT_EQ(AsCpu(fused_exe)->stats().num_kernels + (row_bias ? 1 : 0), AsCpu(separate_exe)->stats().num_kernels)
            << schedule << "\nvs\n"
            << AsCpu(separate_exe)->DescribeSchedule();
      }
    }
  }
}

// A softmax over the last dimension (masked and scaled, as attention's) is one row kernel:
// max, exp, sum and divide in one pass over blocks of whole rows, the row results stored one
// per row. Rows of 64 (8 per block), 65 (7 per block, a block not a power of two), 700 and
// 1024 (longer than kBlock: one row per block, GPT-2's attention), and 5000 (longer than
// kMaxRowLength: separate kernels); every thread count gives the same bits.
TEST(CpuBackendTest, SoftmaxOverRowsIsOneRowKernel) {
  for (int64_t row : {64, 65, 700, 1024, 5000}) {
    SCOPED_TRACE(::testing::Message() << "rows of " << row);
    FunctionBuilder b("softmax");
    const Shape s = {3, 37, row};
    ValueId x = b.Parameter(F32(s)), keep = b.Parameter({DType::kBool, {37, row}});
    ValueId scaled = b.BMul(x, b.ScalarConstant(0.125));
    ValueId att = b.Select(b.BroadcastInDim(keep, s, {1, 2}), scaled, b.Full(-1e30, F32(s)));
    ValueId mx = b.ReduceMax(att, {2});
    ValueId e = b.Exp(b.Sub(att, b.BroadcastInDim(mx, s, {0, 1})));
    ValueId sum = b.ReduceSum(e, {2});
    b.Return({b.Div(e, b.BroadcastInDim(sum, s, {0, 1})), mx, sum});
    absl::StatusOr<Function> f = b.Build();
    ASSERT_TRUE(f.ok()) << f.status();
    Tensor mask(DType::kBool, {37, row});
    for (int64_t i = 0; i < mask.num_elements(); ++i) mask.data<uint8_t>()[i] = (i * 7919) % 5 != 0 ? 1 : 0;
    const std::vector<Tensor> args = {RandomTensor(F32(s), 9, -20, 20), mask};
    std::unique_ptr<Executable> exe;
    absl::StatusOr<std::vector<Tensor>> one = RunOnce(*CreateCpuBackend({.threads = 1}), *f, args, &exe);
    ASSERT_TRUE(one.ok()) << one.status();
    ExpectAllNear(*one, *Interpret(*f, args), 1e-5, 1e-7);
    const std::string schedule = AsCpu(exe)->DescribeSchedule();
    if (row <= 4096) {
      EXPECT_EQ(AsCpu(exe)->stats().num_kernels, 1) << schedule;
      EXPECT_NE(schedule.find(absl::StrCat("rows of ", row)), std::string::npos) << schedule;
    } else {
      EXPECT_EQ(schedule.find("rows of"), std::string::npos) << schedule;
    }
    for (int threads : {2, 3}) {
      absl::StatusOr<std::vector<Tensor>> got = RunOnce(*CreateCpuBackend({.threads = threads}), *f, args);
      ASSERT_TRUE(got.ok()) << got.status();
      for (size_t i = 0; i < got->size(); ++i) {
        EXPECT_TRUE(BitwiseEqual((*one)[i], (*got)[i])) << "result " << i << ", " << threads << " threads";
      }
    }
  }
}

TEST(CpuBackendTest, ExecutablesOfOneBackendMayRunFromTwoThreads) {
  // Each executable is used by one thread at a time; the backend's pool is shared by both.
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 2});
  FunctionBuilder b1("one"), b2("two");
  ValueId x1 = b1.Parameter(F32({300, 200}));
  b1.Return({b1.ReduceSum(b1.Exp(x1), {1})});
  ValueId x2 = b2.Parameter(F32({200, 300}));
  b2.Return({b2.MatMul(b2.Tanh(x2), b2.Transpose(x2, {1, 0}))});
  std::vector<Function> fs = {*b1.Build(), *b2.Build()};
  std::vector<std::vector<Tensor>> args = {{RandomTensor(F32({300, 200}), 1)}, {RandomTensor(F32({200, 300}), 2)}};
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<std::unique_ptr<Executable>> exe = cpu->Compile(fs[t]);
      absl::StatusOr<Buffers> in = Upload(*cpu, args[t]);
      absl::StatusOr<Buffers> out = AllocateResults(*cpu, fs[t]);
      if (!exe.ok() || !in.ok() || !out.ok()) {
        errors[t] = "setup failed";
        return;
      }
      for (int i = 0; i < 40 && errors[t].empty(); ++i) {
        if (absl::Status s = (*exe)->Run(in->ptrs, out->ptrs); !s.ok()) errors[t] = s.ToString();
      }
      absl::StatusOr<Tensor> got = cpu->CopyOut(*out->ptrs[0]);
      absl::StatusOr<std::vector<Tensor>> want = Interpret(fs[t], args[t]);
      if (!got.ok() || !want.ok() || !TensorsNear(*got, (*want)[0], 1e-4, 1e-4)) errors[t] = "wrong result";
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

TEST(CpuBackendTest, DescribesItself) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 2});
  EXPECT_EQ(cpu->Name(), "cpu");
  EXPECT_NE(cpu->DeviceDescription().find("2 threads"), std::string::npos) << cpu->DeviceDescription();
}

// The OpenBLAS kernels follow the CPU's features, not its vendor or model: AVX-512 gets a
// SkylakeX-class core and AVX2+FMA at least Haswell's, Intel and AMD alike.
TEST(CpuBackendTest, OpenBlasCoreMatchesTheCpuFeatures) {
  const std::string d = CreateCpuBackend({.threads = 1})->DeviceDescription();
  std::printf("%s\n", d.c_str());  // what this machine got, for the test log
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    EXPECT_NE(d.find("from the environment"), std::string::npos) << d;
    return;  // the user's choice stands, whatever it is
  }
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  auto uses = [&](std::initializer_list<const char*> cores) {
    for (const char* core : cores) {
      if (d.find(absl::StrCat("core ", core, " (")) != std::string::npos) return true;
    }
    return false;
  };
  if (avx512) {
    EXPECT_TRUE(uses({"SkylakeX", "Cooperlake", "SapphireRapids"})) << d;
    EXPECT_NE(d.find("AVX-512"), std::string::npos) << d;
  } else if (avx2) {
    EXPECT_TRUE(uses({"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})) << d;
  }
  EXPECT_NE(d.find(" family 0x"), std::string::npos) << d;  // the CPU is named in the log
}

}  // namespace
}  // namespace pcp
