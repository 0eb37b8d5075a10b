// The chosen physical device (of the process's one Vulkan instance, created on first use and
// kept until exit), a logical device with one compute queue and a command pool, shared
// (std::shared_ptr) by the backend, its buffers and executables.
//
//   PCP_ASSIGN_OR_RETURN(std::shared_ptr<VulkanContext> ctx, VulkanContext::Create(options));
//   PCP_RETURN_IF_ERROR(ctx->SubmitAndWait([&](VkCommandBuffer cb) { vkCmdCopyBuffer(...); }));
//   ctx->DeferCopy(staging, dst, bytes, [&] { release staging; });  // goes with the next submit
#ifndef PCP_KERNELS_VULKAN_SRC_VULKAN_CONTEXT_H_
#define PCP_KERNELS_VULKAN_SRC_VULKAN_CONTEXT_H_

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/kernels/vulkan_backend.h"

namespace pcp::vulkan {

// "vkCreateDevice: VK_ERROR_...(-3)" as an Internal status; OK for VK_SUCCESS.
absl::Status VkCheck(VkResult result, const char* what);

class VulkanContext {
 public:
  static absl::StatusOr<std::shared_ptr<VulkanContext>> Create(const VulkanBackendOptions& options);
  ~VulkanContext();
  VulkanContext(const VulkanContext&) = delete;
  VulkanContext& operator=(const VulkanContext&) = delete;

  VkDevice device() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_; }
  const VulkanDeviceInfo& info() const { return info_; }
  bool timestamps() const { return timestamp_valid_bits_ > 0; }
  double timestamp_period_ns() const { return timestamp_period_ns_; }
  uint32_t max_shared_memory() const { return max_shared_memory_; }
  // Storage buffers one compute shader may bind (per stage and per set: 32 on lavapipe).
  uint32_t max_storage_buffers() const { return max_storage_buffers_; }
  // storageBuffer16BitAccess is available and enabled (f16/bf16 buffers can be moved).
  bool storage_16bit() const { return storage_16bit_; }
  // f16 x f16 -> f32 cooperative matrices are enabled (VulkanDeviceInfo::cooperative_matrix_f16).
  bool cooperative_matrix_f16() const { return info_.cooperative_matrix_f16; }
  // float16 arithmetic is enabled (VulkanDeviceInfo::shader_float16).
  bool shader_float16() const { return info_.shader_float16; }

  // A memory type with all `required` flags among `type_bits`.
  absl::StatusOr<uint32_t> FindMemoryType(uint32_t type_bits, VkMemoryPropertyFlags required) const;

  // Held while recording a command buffer from the context's pool (Vulkan requires the pool
  // to be externally synchronized; executables may record from different threads).
  std::unique_lock<std::recursive_mutex> LockCommandPool() { return std::unique_lock<std::recursive_mutex>(mu_); }
  // Allocates a primary command buffer from the context's pool.
  absl::StatusOr<VkCommandBuffer> AllocateCommandBuffer();
  void FreeCommandBuffer(VkCommandBuffer cb);
  // Submits a recorded command buffer and waits for it to finish.
  absl::Status Submit(VkCommandBuffer cb);
  // Records `record` into a one-time command buffer, submits it and waits.
  absl::Status SubmitAndWait(const std::function<void(VkCommandBuffer)>& record);

  // Deferred copies: a copy of `bytes` from `src` to `dst` that goes to the device with the
  // next submission (Submit, SubmitAndWait or Flush), ahead of it in one vkQueueSubmit and one
  // wait, copies in the order they were deferred, then a barrier that makes them visible to
  // what follows; `done` runs once it has executed (or failed). A train step's batch and
  // scalars so cost no queue round trip of their own. An error of a deferred copy is the next
  // submission's.
  void DeferCopy(VkBuffer src, VkBuffer dst, VkDeviceSize bytes, std::function<void()> done);
  // Bytes deferred and not yet submitted.
  VkDeviceSize deferred_bytes();
  // vkQueueSubmit calls so far (each waited for).
  uint64_t submissions();
  // Submits the deferred copies alone (if any) and waits.
  absl::Status Flush();

 private:
  VulkanContext() = default;

  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VulkanDeviceInfo info_;
  VkPhysicalDeviceMemoryProperties memory_{};
  uint32_t timestamp_valid_bits_ = 0;
  double timestamp_period_ns_ = 1.0;
  uint32_t max_shared_memory_ = 16384;
  uint32_t max_storage_buffers_ = 4;
  bool storage_16bit_ = false;
  std::recursive_mutex mu_;  // queue, command pool and recording into its buffers
  struct Deferred {
    VkBuffer src = VK_NULL_HANDLE, dst = VK_NULL_HANDLE;
    VkDeviceSize bytes = 0;
    std::function<void()> done;
  };
  std::vector<Deferred> deferred_;  // under mu_
  VkDeviceSize deferred_bytes_ = 0;
  uint64_t submissions_ = 0;
  // Submits the deferred copies (if any) then `cb` (if not null) in one batch and waits.
  absl::Status SubmitWithDeferred(VkCommandBuffer cb);
};

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_VULKAN_CONTEXT_H_
