// Micro benchmarks of the CPU backend's kernels, each a compiled one-op (or one fused
// group) function run through the Executable interface.
//
//   build/bench/pcp_cpu_ops_bench [--benchmark_filter=Sgemm]
//
// Sgemm/n/threads: an n x n x n dot_general (GFLOPS); SgemmOpenBlasThreads/n/threads: the
// same product as one cblas_sgemm call with OpenBLAS's own threads, for comparison with the
// backend's split over its pool. FusedGelu: an 8-op GELU over [768, 512] (GB/s of inputs +
// outputs). Reduce*: row / column sums and a softmax over [768, 512]. AttentionSoftmax: the GPT
// step's masked attention softmax (rows of 64); AttentionSoftmaxGrad: its gradient.
#include <cblas.h>

#include <limits>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "pcp/autodiff/builder.h"
#include "pcp/kernels/cpu_backend.h"

namespace pcp {
namespace {

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

// A compiled function with buffers for its arguments (filled with 0.5) and results.
struct Compiled {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Executable> exe;
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> args, results;
};

Compiled Compile(const absl::StatusOr<Function>& f, int threads) {
  Compiled c;
  c.backend = CreateCpuBackend({.threads = threads});
  if (!f.ok()) return c;
  auto exe = c.backend->Compile(*f);
  if (!exe.ok()) return c;
  c.exe = *std::move(exe);
  for (ValueId p : f->params) {
    auto buf = *c.backend->Allocate(f->type(p));
    Tensor t(f->type(p).dtype, f->type(p).shape);
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 0.5f;
    (void)c.backend->CopyIn(t, *buf);
    c.args.push_back(buf.get());
    c.owned.push_back(std::move(buf));
  }
  for (ValueId r : f->results) {
    auto buf = *c.backend->Allocate(f->type(r));
    c.results.push_back(buf.get());
    c.owned.push_back(std::move(buf));
  }
  return c;
}

void RunLoop(benchmark::State& state, Compiled& c) {
  if (c.exe == nullptr) {
    state.SkipWithError("compile failed");
    return;
  }
  for (auto _ : state) {
    if (!c.exe->Run(c.args, c.results).ok()) state.SkipWithError("run failed");
  }
}

void BM_Sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  FunctionBuilder b("sgemm");
  ValueId x = b.Parameter(F32({n, n})), y = b.Parameter(F32({n, n}));
  b.Return({b.MatMul(x, y)});
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(1)));
  RunLoop(state, c);
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Sgemm)->ArgsProduct({{128, 256, 384, 512, 768, 1024}, {1, 2}})->UseRealTime();

void BM_SgemmOpenBlasThreads(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  CreateCpuBackend({.threads = 1});  // OpenBLAS's process-wide setup (kernel choice)
  std::vector<float> a(n * n, 0.5f), bm(n * n, 0.5f), out(n * n);
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, bm.data(), n, 0.0f, out.data(),
                n);
  }
  openblas_set_num_threads(1);
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_SgemmOpenBlasThreads)->ArgsProduct({{128, 256, 512, 1024}, {1, 2}})->UseRealTime();

// nanoGPT's shapes: [768,128]x[128,384] and batched attention [48,64,32]x[48,32,64].
void BM_SgemmGpt(benchmark::State& state) {
  FunctionBuilder b("gpt");
  ValueId x = b.Parameter(F32({768, 128})), w = b.Parameter(F32({128, 384}));
  ValueId q = b.Parameter(F32({48, 64, 32})), k = b.Parameter(F32({48, 64, 32}));
  b.Return({b.MatMul(x, w), b.DotGeneral(q, k, {{0}, {0}, {2}, {2}})});
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(0)));
  RunLoop(state, c);
  const double flops = 2.0 * 768 * 128 * 384 + 2.0 * 48 * 64 * 64 * 32;
  state.counters["GFLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_SgemmGpt)->Arg(1)->Arg(2)->UseRealTime();

// The MLP's three products in training: y = x W^T, dx = dy W, dW = dy^T x (over batch and time).
void BM_SgemmGptMlp(benchmark::State& state) {
  FunctionBuilder b("mlp");
  ValueId x = b.Parameter(F32({12, 64, 128})), w = b.Parameter(F32({512, 128})), dy = b.Parameter(F32({12, 64, 512}));
  ValueId y = b.DotGeneral(x, w, {{}, {}, {2}, {1}});
  ValueId dx = b.DotGeneral(dy, w, {{}, {}, {2}, {0}});
  ValueId dw = b.DotGeneral(dy, x, {{}, {}, {0, 1}, {0, 1}});
  b.Return({y, dx, dw});
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(0)));
  RunLoop(state, c);
  state.counters["GFLOPS"] =
      benchmark::Counter(3 * 2.0 * 768 * 512 * 128, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
BENCHMARK(BM_SgemmGptMlp)->Arg(1)->Arg(2)->UseRealTime();

void BM_FusedGelu(benchmark::State& state) {
  const Shape s = {768, 512};
  FunctionBuilder b("gelu");
  ValueId x = b.Parameter(F32(s)), bias = b.Parameter(F32({512}));
  ValueId y = b.BAdd(x, bias);
  ValueId cdf = b.BMul(b.BAdd(b.Erf(b.BMul(y, b.ScalarConstant(0.7071067811865476))), b.ScalarConstant(1.0)),
                       b.ScalarConstant(0.5));
  b.Return({b.Mul(y, cdf)});
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(0)));
  RunLoop(state, c);
  state.counters["GB/s"] = benchmark::Counter(2.0 * 768 * 512 * 4, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_FusedGelu)->Arg(1)->Arg(2)->UseRealTime();

void BM_AddChain(benchmark::State& state) {
  const int64_t n = 1 << 20;
  FunctionBuilder b("axpby");
  ValueId x = b.Parameter(F32({n})), y = b.Parameter(F32({n}));
  b.Return({b.Add(b.BMul(x, b.ScalarConstant(0.9)), b.BMul(y, b.ScalarConstant(0.1)))});
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(0)));
  RunLoop(state, c);
  state.counters["GB/s"] =
      benchmark::Counter(3.0 * n * 4, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_AddChain)->Arg(1)->Arg(2)->UseRealTime();

void BM_ReduceRows(benchmark::State& state) {
  FunctionBuilder b("rows");
  ValueId x = b.Parameter(F32({768, 512}));
  b.Return({b.ReduceSum(x, {static_cast<int64_t>(state.range(1))})});
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(0)));
  RunLoop(state, c);
  state.counters["GB/s"] =
      benchmark::Counter(768.0 * 512 * 4, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
// Second argument: 1 = trailing (per-row sums), 0 = leading (bias gradient).
BENCHMARK(BM_ReduceRows)->ArgsProduct({{1, 2}, {1, 0}})->UseRealTime();

void BM_Softmax(benchmark::State& state) {
  const Shape s = {768, 512};
  FunctionBuilder b("softmax");
  ValueId x = b.Parameter(F32(s));
  ValueId e = b.Exp(b.Sub(x, b.BroadcastInDim(b.ReduceMax(x, {1}), s, {0})));
  b.Return({b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {1}), s, {0}))});
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(0)));
  RunLoop(state, c);
  state.counters["GB/s"] = benchmark::Counter(2.0 * 768 * 512 * 4, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Softmax)->Arg(1)->Arg(2)->UseRealTime();

// The GPT step's attention softmax: [12, 4, 64, 64] scores scaled, causally masked, rows of 64
// (range(1) = 0: the scores alone; 1: as the train step computes them, with the mask's count of
// row maxima that the max's gradient needs).
void BM_AttentionSoftmax(benchmark::State& state) {
  const Shape s = {12, 4, 64, 64};
  FunctionBuilder b("attention_softmax");
  ValueId x = b.Parameter(F32(s));
  ValueId att = b.BMul(x, b.ScalarConstant(0.125));
  ValueId rows = b.Iota(TensorType{DType::kI32, {64, 64}}, 0);
  ValueId cols = b.Iota(TensorType{DType::kI32, {64, 64}}, 1);
  ValueId causal = b.BroadcastInDim(b.Compare(cols, rows, ComparisonDirection::kLE), s, {2, 3});
  att = b.Select(causal, att, b.Full(-std::numeric_limits<double>::infinity(), F32(s)));
  ValueId row_max = b.BroadcastInDim(b.ReduceMax(att, {3}), s, {0, 1, 2});
  ValueId e = b.Exp(b.Sub(att, row_max));
  ValueId probs = b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {3}), s, {0, 1, 2}));
  if (state.range(1) == 1) {
    ValueId is_max =
        b.Select(b.Compare(att, row_max, ComparisonDirection::kEQ), b.Full(1.0, F32(s)), b.Full(0.0, F32(s)));
    b.Return({probs, b.ReduceSum(is_max, {3})});
  } else {
    b.Return({probs});
  }
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(0)));
  RunLoop(state, c);
  state.counters["GB/s"] = benchmark::Counter(2.0 * 12 * 4 * 64 * 64 * 4, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_AttentionSoftmax)->ArgsProduct({{1, 2}, {0, 1}})->UseRealTime();

// Its gradient as the train step computes it (the backward's epilogue of dP = dY · Vᵀ): with
// probabilities P and their gradient dP, dS = select(causal, P * (dP - rowsum(dP * P)), 0) * scale.
void BM_AttentionSoftmaxGrad(benchmark::State& state) {
  const Shape s = {12, 4, 64, 64};
  FunctionBuilder b("attention_softmax_grad");
  ValueId dp = b.Parameter(F32(s));
  ValueId p = b.Parameter(F32(s));
  ValueId rows = b.Iota(TensorType{DType::kI32, {64, 64}}, 0);
  ValueId cols = b.Iota(TensorType{DType::kI32, {64, 64}}, 1);
  ValueId causal = b.BroadcastInDim(b.Compare(cols, rows, ComparisonDirection::kLE), s, {2, 3});
  ValueId dot = b.BroadcastInDim(b.ReduceSum(b.Mul(dp, p), {3}), s, {0, 1, 2});
  ValueId ds = b.Select(causal, b.Mul(p, b.Sub(dp, dot)), b.Full(0.0, F32(s)));
  b.Return({b.BMul(ds, b.ScalarConstant(0.125))});
  Compiled c = Compile(b.Build(), static_cast<int>(state.range(0)));
  RunLoop(state, c);
  state.counters["GB/s"] = benchmark::Counter(3.0 * 12 * 4 * 64 * 64 * 4, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_AttentionSoftmaxGrad)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
}  // namespace pcp

BENCHMARK_MAIN();
