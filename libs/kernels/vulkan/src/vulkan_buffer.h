// The Buffer the Vulkan backend hands out: device memory from the backend's BufferPool
// holding one tensor (bool as one byte per element), returned to the pool when destroyed.
#ifndef PCP_KERNELS_VULKAN_SRC_VULKAN_BUFFER_H_
#define PCP_KERNELS_VULKAN_SRC_VULKAN_BUFFER_H_

#include <memory>
#include <utility>

#include "buffer_pool.h"
#include "pcp/kernels/backend.h"

namespace pcp::vulkan {

class VulkanBuffer : public Buffer {
 public:
  VulkanBuffer(TensorType type, DeviceBuffer buffer, std::shared_ptr<BufferPool> pool)
      : type_(std::move(type)), buffer_(buffer), pool_(std::move(pool)) {}
  ~VulkanBuffer() override { pool_->Release(buffer_); }
  const TensorType& type() const override { return type_; }
  const DeviceBuffer& device_buffer() const { return buffer_; }
  const BufferPool* pool() const { return pool_.get(); }
  int64_t bytes() const { return type_.num_elements() * SizeOf(type_.dtype); }

 private:
  TensorType type_;
  DeviceBuffer buffer_;
  std::shared_ptr<BufferPool> pool_;
};

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_VULKAN_BUFFER_H_
