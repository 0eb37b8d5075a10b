// The backend interface: a few virtual calls that the CPU and Vulkan backends implement
// (after ggml's ggml_backend_i and IREE's HAL). A backend compiles an IR function into an
// Executable and runs it on buffers the backend owns, so state (parameters, optimizer
// moments) can stay resident on the device across calls.
//
//   std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 2});
//   PCP_ASSIGN_OR_RETURN(auto exe, cpu->Compile(train_step));
//   std::vector<std::unique_ptr<Buffer>> bufs = ...;      // cpu->Allocate(type) per param
//   PCP_RETURN_IF_ERROR(cpu->CopyIn(tensor, *bufs[0]));
//   PCP_RETURN_IF_ERROR(exe->Run(args, results));         // results may alias args
//   PCP_ASSIGN_OR_RETURN(Tensor loss, cpu->CopyOut(*bufs.back()));
#ifndef PCP_KERNELS_BACKEND_H_
#define PCP_KERNELS_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pcp/autodiff/ir.h"
#include "pcp/tensor/tensor.h"

namespace pcp {

// Backend-owned storage for one tensor of a fixed type. Created by Backend::Allocate; only
// that backend's executables and copies accept it.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const TensorType& type() const = 0;
};

// A compiled function. Not thread-safe: one Run at a time.
class Executable {
 public:
  virtual ~Executable() = default;
  // The function it was compiled from (its signature defines Run's arguments and results).
  virtual const Function& function() const = 0;
  // Runs with one buffer per parameter and one per result, types matching exactly.
  // A result buffer may be the same object as an argument buffer (state updated in place,
  // e.g. params' written over params); the result is as if all arguments were read first.
  virtual absl::Status Run(absl::Span<Buffer* const> args, absl::Span<Buffer* const> results) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu", "vulkan".
  virtual std::string Name() const = 0;
  // Human-readable device description ("2 threads, OpenBLAS 0.3.21", "NVIDIA H100 (discrete)").
  virtual std::string DeviceDescription() const = 0;
  // OK if Compile would accept `function`, else Unimplemented naming the first unsupported op.
  virtual absl::Status Supports(const Function& function) const = 0;
  virtual absl::StatusOr<std::unique_ptr<Executable>> Compile(const Function& function) = 0;
  virtual absl::StatusOr<std::unique_ptr<Buffer>> Allocate(const TensorType& type) = 0;
  virtual absl::Status CopyIn(const Tensor& source, Buffer& destination) = 0;
  virtual absl::StatusOr<Tensor> CopyOut(const Buffer& source) = 0;
};

}  // namespace pcp

#endif  // PCP_KERNELS_BACKEND_H_
