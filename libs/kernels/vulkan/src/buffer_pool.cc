#include "buffer_pool.h"

#include <cstring>

#include "pcp/base/status_macros.h"

namespace pcp::vulkan {

BufferPool::~BufferPool() {
  (void)ctx_->Flush();  // (an error leaves nothing to do: the buffers go either way)
  for (auto& [key, list] : free_) {
    for (const DeviceBuffer& b : list) Destroy(b);
  }
}

absl::StatusOr<DeviceBuffer> BufferPool::Acquire(VkDeviceSize bytes, bool host_visible) {
  const VkDeviceSize size = ((bytes < 16 ? 16 : bytes) + 255) / 256 * 256;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find({size, host_visible});
    if (it != free_.end() && !it->second.empty()) {
      DeviceBuffer b = it->second.back();
      it->second.pop_back();
      return b;
    }
  }
  return Create(size, host_visible);
}

void BufferPool::Release(const DeviceBuffer& buffer) {
  if (buffer.buffer == VK_NULL_HANDLE) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_[{buffer.size, buffer.mapped != nullptr}].push_back(buffer);
}

absl::StatusOr<DeviceBuffer> BufferPool::Create(VkDeviceSize size, bool host_visible) {
  VkDevice dev = ctx_->device();
  DeviceBuffer b;
  b.size = size;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  PCP_RETURN_IF_ERROR(VkCheck(vkCreateBuffer(dev, &bci, nullptr, &b.buffer), "vkCreateBuffer"));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, b.buffer, &req);
  const VkMemoryPropertyFlags want = host_visible
                                         ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                         : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  absl::StatusOr<uint32_t> type = ctx_->FindMemoryType(req.memoryTypeBits, want);
  if (!type.ok() && !host_visible) type = ctx_->FindMemoryType(req.memoryTypeBits, 0);
  if (!type.ok()) {
    vkDestroyBuffer(dev, b.buffer, nullptr);
    return type.status();
  }
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = *type;
  absl::Status s = VkCheck(vkAllocateMemory(dev, &ai, nullptr, &b.memory), "vkAllocateMemory");
  if (!s.ok()) {
    vkDestroyBuffer(dev, b.buffer, nullptr);
    return s;
  }
  vkBindBufferMemory(dev, b.buffer, b.memory, 0);
  if (host_visible) {
    s = VkCheck(vkMapMemory(dev, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    if (!s.ok()) {
      Destroy(b);
      return s;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  live_bytes_ += static_cast<int64_t>(size);
  return b;
}

void BufferPool::Destroy(const DeviceBuffer& b) {
  VkDevice dev = ctx_->device();
  if (b.mapped != nullptr) vkUnmapMemory(dev, b.memory);
  vkDestroyBuffer(dev, b.buffer, nullptr);
  vkFreeMemory(dev, b.memory, nullptr);
}

absl::Status UploadToBuffer(BufferPool& pool, const void* data, VkDeviceSize bytes, const DeviceBuffer& dst) {
  if (bytes == 0) return absl::OkStatus();
  PCP_ASSIGN_OR_RETURN(DeviceBuffer staging, pool.Acquire(bytes, /*host_visible=*/true));
  std::memcpy(staging.mapped, data, bytes);
  VulkanContext& ctx = *pool.context();
  if (bytes <= kDeferredUploadBytes && ctx.deferred_bytes() + bytes <= kMaxDeferredBytes) {
    ctx.DeferCopy(staging.buffer, dst.buffer, bytes, [&pool, staging] { pool.Release(staging); });
    return absl::OkStatus();
  }
  absl::Status s = ctx.SubmitAndWait([&](VkCommandBuffer cb) {
    VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cb, staging.buffer, dst.buffer, 1, &region);
  });
  pool.Release(staging);
  return s;
}

absl::Status DownloadFromBuffer(BufferPool& pool, const DeviceBuffer& src, VkDeviceSize bytes, void* data) {
  if (bytes == 0) return absl::OkStatus();
  PCP_ASSIGN_OR_RETURN(DeviceBuffer staging, pool.Acquire(bytes, /*host_visible=*/true));
  absl::Status s = pool.context()->SubmitAndWait([&](VkCommandBuffer cb) {
    VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cb, src.buffer, staging.buffer, 1, &region);
  });
  if (s.ok()) std::memcpy(data, staging.mapped, bytes);
  pool.Release(staging);
  return s;
}

}  // namespace pcp::vulkan
