// Device memory for tensors: one VkBuffer with its own VkDeviceMemory per allocation, kept
// in a pool keyed by (rounded size, host visibility) after release so that executables and
// buffers created and destroyed repeatedly reuse memory instead of allocating again.
//
//   BufferPool pool(ctx);
//   PCP_ASSIGN_OR_RETURN(DeviceBuffer b, pool.Acquire(bytes, /*host_visible=*/false));
//   ...
//   pool.Release(b);   // back to the pool; freed when the pool is destroyed
#ifndef PCP_KERNELS_VULKAN_SRC_BUFFER_POOL_H_
#define PCP_KERNELS_VULKAN_SRC_BUFFER_POOL_H_

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "vulkan_context.h"

namespace pcp::vulkan {

struct DeviceBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;   // bytes usable (the rounded request)
  void* mapped = nullptr;  // host-visible buffers only: persistently mapped
};

class BufferPool {
 public:
  explicit BufferPool(std::shared_ptr<VulkanContext> ctx) : ctx_(std::move(ctx)) {}
  ~BufferPool();  // submits the context's deferred copies first (they may target its buffers)
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` (>= 16, rounded up to 256) usable as storage buffer and
  // transfer source/destination; host_visible buffers are mapped and coherent.
  absl::StatusOr<DeviceBuffer> Acquire(VkDeviceSize bytes, bool host_visible);
  void Release(const DeviceBuffer& buffer);
  const std::shared_ptr<VulkanContext>& context() const { return ctx_; }
  // Bytes currently held by live buffers and by free buffers in the pool.
  int64_t live_bytes() const { return live_bytes_; }

 private:
  absl::StatusOr<DeviceBuffer> Create(VkDeviceSize size, bool host_visible);
  void Destroy(const DeviceBuffer& b);

  std::shared_ptr<VulkanContext> ctx_;
  std::mutex mu_;
  std::map<std::pair<VkDeviceSize, bool>, std::vector<DeviceBuffer>> free_;
  int64_t live_bytes_ = 0;
};

// Host <-> device copies through a host-visible staging buffer (taken from the pool). An upload
// of at most kDeferredUploadBytes, while the context holds less than kMaxDeferredBytes, is
// deferred (VulkanContext::DeferCopy): `data` is in the staging buffer when it returns, and the
// copy goes to the device with the next submission (a Run, a download, a larger upload), so a
// train step's four small inputs take no queue round trip each. Others are submitted and
// waited for (after whatever was deferred).
inline constexpr VkDeviceSize kDeferredUploadBytes = VkDeviceSize{1} << 20;
inline constexpr VkDeviceSize kMaxDeferredBytes = VkDeviceSize{16} << 20;
absl::Status UploadToBuffer(BufferPool& pool, const void* data, VkDeviceSize bytes, const DeviceBuffer& dst);
absl::Status DownloadFromBuffer(BufferPool& pool, const DeviceBuffer& src, VkDeviceSize bytes, void* data);

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_BUFFER_POOL_H_
