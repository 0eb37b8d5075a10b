// A CPU buffer: host memory, 64-byte aligned (a Tensor's storage).
#ifndef PCP_KERNELS_CPU_CPU_BUFFER_H_
#define PCP_KERNELS_CPU_CPU_BUFFER_H_

#include <cstdint>

#include "pcp/kernels/backend.h"

namespace pcp::cpu {

class CpuBuffer final : public Buffer {
 public:
  explicit CpuBuffer(TensorType type) : type_(std::move(type)), tensor_(type_.dtype, type_.shape) {}
  const TensorType& type() const override { return type_; }
  uint8_t* data() { return static_cast<uint8_t*>(tensor_.raw_data()); }
  const Tensor& tensor() const { return tensor_; }

 private:
  TensorType type_;
  Tensor tensor_;
};

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_CPU_BUFFER_H_
