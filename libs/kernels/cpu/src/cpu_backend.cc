#include "pcp/kernels/cpu_backend.h"

#include <cstring>
#include <new>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cpu_buffer.h"
#include "cpu_executable.h"
#include "gemm.h"
#include "lowering.h"
#include "openblas_setup.h"
#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"

namespace pcp {
namespace {

using cpu::CpuBuffer;

constexpr int64_t kMaxRank = 16;  // loops keep multi-indices in fixed arrays

// Non-negative dimensions whose byte size stays below 2^48 (no overflow anywhere).
bool FitsInMemory(const TensorType& type) {
  int64_t bytes = SizeOf(type.dtype);
  for (int64_t d : type.shape) {
    if (d < 0 || (d > 0 && bytes > (int64_t{1} << 48) / d)) return false;
    bytes *= d;
  }
  return true;
}

bool Computes(DType d) { return d == DType::kF32 || d == DType::kI32 || d == DType::kI64 || d == DType::kBool; }

// The dtypes each op computes on; everything else only moves bytes and takes any dtype.
absl::Status CheckInstruction(const Function& f, const Instruction& inst) {
  auto unsupported = [&](const TensorType& t) {
    return absl::UnimplementedError(
        absl::StrCat("cpu backend: ", OpName(inst.op), " on ", t.ToString(), " is not supported"));
  };
  const TensorType& result = f.type(inst.result);
  for (ValueId o : inst.operands) {
    if (f.type(o).rank() > kMaxRank) return unsupported(f.type(o));
  }
  if (result.rank() > kMaxRank) return unsupported(result);
  switch (GetOpCategory(inst.op)) {
    case OpCategory::kElementwise:
      if (inst.op == Op::kSelect) return absl::OkStatus();  // moves bits
      if (inst.op == Op::kConvert) {                        // f32 <-> bf16 / f16: mixed precision's roundings
        const DType from = f.type(inst.operands[0]).dtype;
        auto half = [](DType d) { return d == DType::kF16 || d == DType::kBF16; };
        if ((from == DType::kF32 && half(result.dtype)) || (half(from) && result.dtype == DType::kF32)) {
          return absl::OkStatus();
        }
      }
      for (ValueId o : inst.operands) {
        if (!Computes(f.type(o).dtype)) return unsupported(f.type(o));
      }
      if (!Computes(result.dtype)) return unsupported(result);
      return absl::OkStatus();
    case OpCategory::kSource:
      if (inst.op == Op::kIota && !Computes(result.dtype)) return unsupported(result);
      return absl::OkStatus();
    case OpCategory::kReduction:
      if (!Computes(result.dtype) || result.dtype == DType::kBool) return unsupported(result);
      return absl::OkStatus();
    case OpCategory::kContraction:
      if (result.dtype != DType::kF32) return unsupported(result);
      return absl::OkStatus();
    case OpCategory::kIndexing:
      if (inst.op == Op::kScatter && (!Computes(result.dtype) || result.dtype == DType::kBool)) {
        return unsupported(result);
      }
      return absl::OkStatus();
    case OpCategory::kLayout: return absl::OkStatus();
    case OpCategory::kAttention: return absl::OkStatus();  // expanded by Compile (f32 by type inference)
  }
  return absl::OkStatus();
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(CpuBackendOptions options) {
    int threads = options.threads;
    if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
    threads_ = std::max(1, threads);
    lowering_.expression_ops = options.expression_ops;
    lowering_.row_values = options.row_values;
    lowering_.epilogues = options.epilogues;
    lowering_.own_gemm = UsesOwnGemm(options.gemm);
    cpu::ConfigureOpenBlas();
    pool_ = std::make_shared<cpu::SharedPool>(threads_);
  }

  std::string Name() const override { return "cpu"; }

  std::string DeviceDescription() const override {
    return absl::StrCat(threads_, threads_ == 1 ? " thread" : " threads", ", products on ",
                        lowering_.own_gemm ? "PCP's own sgemm (AVX2+FMA); " : "OpenBLAS; ", cpu::OpenBlasDescription());
  }

  absl::Status Supports(const Function& function) const override {
    PCP_RETURN_IF_ERROR(Verify(function));
    // f64 never reaches a backend: the IR lowers it to f32 first (LowerF64ToF32, passes.h).
    for (const TensorType& t : function.value_types) {
      if (t.dtype == DType::kF64) {
        return absl::UnimplementedError(absl::StrCat("cpu backend: f64 values (", t.ToString(),
                                                     ") are not supported; lower them with LowerF64ToF32 first"));
      }
    }
    for (size_t i = 0; i < function.instructions.size(); ++i) {
      PCP_RETURN_IF_ERROR(CheckInstruction(function, function.instructions[i]),
                          _ << "function @" << function.name << ", instruction " << i);
    }
    for (const TensorType& t : function.value_types) {
      if (t.rank() > kMaxRank) return absl::UnimplementedError(absl::StrCat("cpu backend: rank above ", kMaxRank));
      if (!FitsInMemory(t))
        return absl::InvalidArgumentError(absl::StrCat("cpu backend: ", t.ToString(), " is too large"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Executable>> Compile(const Function& function) override {
    PCP_RETURN_IF_ERROR(Supports(function));
    // Fused attention (pcp.attention*) runs as its StableHLO expansion, on a copy; CSE shares
    // the scores and probabilities the backward's ops each recompute.
    const Function* lowered = &function;
    Function expanded;
    if (HasAttentionOps(function)) {
      expanded = function;
      PCP_RETURN_IF_ERROR(ExpandAttention(expanded).status(), _ << "compiling @" << function.name);
      PCP_RETURN_IF_ERROR(RunStandardPasses(expanded), _ << "compiling @" << function.name);
      lowered = &expanded;
    }
    PCP_ASSIGN_OR_RETURN(cpu::Program program, cpu::Lower(*lowered, lowering_), _ << "compiling @" << function.name);
    return std::unique_ptr<Executable>(std::make_unique<cpu::CpuExecutableImpl>(function, std::move(program), pool_));
  }

  absl::StatusOr<std::unique_ptr<Buffer>> Allocate(const TensorType& type) override {
    if (!FitsInMemory(type)) return absl::InvalidArgumentError(absl::StrCat("cannot allocate ", type.ToString()));
    try {
      return std::unique_ptr<Buffer>(std::make_unique<CpuBuffer>(type));
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(absl::StrCat("out of memory allocating ", type.ToString()));
    }
  }

  absl::Status CopyIn(const Tensor& source, Buffer& destination) override {
    auto* dst = dynamic_cast<CpuBuffer*>(&destination);
    if (dst == nullptr) return absl::InvalidArgumentError("CopyIn: not a buffer of the cpu backend");
    if (!source.valid() || source.dtype() != dst->type().dtype || source.shape() != dst->type().shape) {
      return absl::InvalidArgumentError(absl::StrCat("CopyIn: tensor ", source.valid() ? source.TypeString() : "(none)",
                                                     " does not match buffer ", dst->type().ToString()));
    }
    std::memcpy(dst->data(), source.raw_data(), static_cast<size_t>(source.byte_size()));
    return absl::OkStatus();
  }

  absl::StatusOr<Tensor> CopyOut(const Buffer& source) override {
    const auto* src = dynamic_cast<const CpuBuffer*>(&source);
    if (src == nullptr) return absl::InvalidArgumentError("CopyOut: not a buffer of the cpu backend");
    return src->tensor().Clone();
  }

 private:
  int threads_ = 1;
  cpu::LoweringOptions lowering_;
  std::shared_ptr<cpu::SharedPool> pool_;
};

}  // namespace

bool UsesOwnGemm(CpuBackendOptions::Gemm choice) {
  if (!cpu::GemmAvailable()) return false;
  switch (choice) {
    case CpuBackendOptions::Gemm::kOwn: return true;
    case CpuBackendOptions::Gemm::kOpenBlas: return false;
    case CpuBackendOptions::Gemm::kAuto: break;
  }
  __builtin_cpu_init();
  return !__builtin_cpu_supports("avx512f");
}

std::unique_ptr<Backend> CreateCpuBackend(CpuBackendOptions options) { return std::make_unique<CpuBackend>(options); }

}  // namespace pcp
