#include "vulkan_context.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"

namespace pcp {

absl::string_view VulkanDeviceKindName(VulkanDeviceKind kind) {
  switch (kind) {
    case VulkanDeviceKind::kDiscreteGpu: return "discrete GPU";
    case VulkanDeviceKind::kIntegratedGpu: return "integrated GPU";
    case VulkanDeviceKind::kVirtualGpu: return "virtual GPU";
    case VulkanDeviceKind::kCpu: return "CPU implementation";
    case VulkanDeviceKind::kOther: return "other";
  }
  return "other";
}

namespace vulkan {
namespace {

VulkanDeviceKind KindOf(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return VulkanDeviceKind::kDiscreteGpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return VulkanDeviceKind::kIntegratedGpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return VulkanDeviceKind::kVirtualGpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return VulkanDeviceKind::kCpu;
    default: return VulkanDeviceKind::kOther;
  }
}

// The process's one VkInstance, created on first use and kept until the process exits.
// With an instance per backend (created and destroyed with it), NVIDIA's driver (580, H100)
// failed vkCreateInstance with VK_ERROR_INCOMPATIBLE_DRIVER (-9) after about 30 backends in
// one process (the conformance test makes one per case); with one instance all cases ran.
// It also saves the driver's start-up for every backend after the first. A failure is not
// cached (a driver may appear later); devices and everything under them stay per context.
absl::StatusOr<VkInstance> ProcessInstance() {
  static std::mutex mu;
  static VkInstance instance = VK_NULL_HANDLE;
  std::lock_guard<std::mutex> lock(mu);
  if (instance != VK_NULL_HANDLE) return instance;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "pcp";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  const VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r != VK_SUCCESS) {
    instance = VK_NULL_HANDLE;
    return absl::UnavailableError(absl::StrCat("no Vulkan driver (vkCreateInstance returned ", r, ")"));
  }
  return instance;
}

// Queue family with compute, or -1.
int ComputeQueueFamily(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  int best = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    // Prefer a compute queue without graphics (async compute), else any.
    if (best < 0 || !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) best = static_cast<int>(i);
  }
  return best;
}

bool HasExtension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (uint32_t i = 0; i < n; ++i) {
    if (std::strcmp(ext[i].extensionName, name) == 0) return true;
  }
  return false;
}

bool CoopMatDisabledByEnv() {
  const char* e = std::getenv("PCP_VULKAN_COOPMAT");
  return e != nullptr && std::strcmp(e, "0") == 0;
}

const char* ComponentName(VkComponentTypeNV t) {
  switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_NV: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV: return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_NV: return "f64";
    case VK_COMPONENT_TYPE_SINT8_NV: return "s8";
    case VK_COMPONENT_TYPE_UINT8_NV: return "u8";
    case VK_COMPONENT_TYPE_SINT32_NV: return "s32";
    case VK_COMPONENT_TYPE_UINT32_NV: return "u32";
    default: return "?";
  }
}

// Sets info.features and info.cooperative_matrix_f16 (see vulkan_backend.h).
void DescribeFeatures(VkPhysicalDevice pd, const VkPhysicalDeviceProperties& p, VulkanDeviceInfo& info) {
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  // glslang compiles cooperative-matrix shaders for the Vulkan memory model (OpMemoryModel
  // Logical Vulkan, capability VulkanMemoryModel), so the device must offer and enable it.
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  const bool has_coop_ext = HasExtension(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  const bool core12 = p.apiVersion >= VK_API_VERSION_1_2;
  const bool has_f16_ext = core12 || HasExtension(pd, "VK_KHR_shader_float16_int8");
  const bool has_mm_ext = core12 || HasExtension(pd, "VK_KHR_vulkan_memory_model");
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  void** next = &f2.pNext;
  auto chain = [&next](auto& s) {
    *next = &s;
    next = &s.pNext;
  };
  chain(s16);
  if (has_f16_ext) chain(f16);
  if (has_coop_ext) chain(coop);
  if (has_mm_ext) chain(memory_model);
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  std::string coop_list = "none";
  bool f16_16x16x16 = false;
  if (has_coop_ext && coop.cooperativeMatrix) {
    auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(ProcessInstance().value_or(VK_NULL_HANDLE),
                              "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    uint32_t n = 0;
    if (get != nullptr && get(pd, &n, nullptr) == VK_SUCCESS && n > 0) {
      std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      get(pd, &n, props.data());
      coop_list.clear();
      for (uint32_t i = 0; i < n; ++i) {
        const VkCooperativeMatrixPropertiesNV& c = props[i];
        absl::StrAppend(&coop_list, i ? ", " : "", c.MSize, "x", c.NSize, "x", c.KSize, " ", ComponentName(c.AType),
                        "*", ComponentName(c.BType), "+", ComponentName(c.CType), "->", ComponentName(c.DType));
        f16_16x16x16 |= c.MSize == 16 && c.NSize == 16 && c.KSize == 16 && c.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                        c.BType == VK_COMPONENT_TYPE_FLOAT16_NV && c.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                        c.DType == VK_COMPONENT_TYPE_FLOAT32_NV && c.scope == VK_SCOPE_SUBGROUP_NV;
      }
    }
  }
  const bool subgroups = sub.subgroupSize == 32 && (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                         (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
  info.shader_float16 = has_f16_ext && f16.shaderFloat16 == VK_TRUE;
  info.cooperative_matrix_f16 = info.usable && f16_16x16x16 && f16.shaderFloat16 && memory_model.vulkanMemoryModel &&
                                subgroups && !CoopMatDisabledByEnv();
  info.features = absl::StrCat("16-bit storage ", s16.storageBuffer16BitAccess ? "yes" : "no", ", shaderFloat16 ",
                               f16.shaderFloat16 ? "yes" : "no", ", vulkanMemoryModel ",
                               memory_model.vulkanMemoryModel ? "yes" : "no", ", subgroup size ", sub.subgroupSize,
                               ", VK_NV_cooperative_matrix ",
                               has_coop_ext ? (coop.cooperativeMatrix ? "yes" : "extension without the feature") : "no",
                               " (", coop_list, "); f16 products on tensor cores: ",
                               info.cooperative_matrix_f16 ? "yes"
                               : CoopMatDisabledByEnv()    ? "no (PCP_VULKAN_COOPMAT=0)"
                                                           : "no (plain f32 shaders)");
}

VulkanDeviceInfo Describe(VkPhysicalDevice pd, int index) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(pd, &p);
  VulkanDeviceInfo info;
  info.index = index;
  info.name = p.deviceName;
  info.kind = KindOf(p.deviceType);
  info.api_version = absl::StrCat(VK_API_VERSION_MAJOR(p.apiVersion), ".", VK_API_VERSION_MINOR(p.apiVersion), ".",
                                  VK_API_VERSION_PATCH(p.apiVersion));
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &s8;
  if (p.apiVersion < VK_API_VERSION_1_1) {
    info.why_unusable = "needs Vulkan 1.1";
  } else {
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    if (ComputeQueueFamily(pd) < 0)
      info.why_unusable = "no compute queue";
    else if (!f2.features.shaderInt64)
      info.why_unusable = "no shaderInt64";
    else if (!s8.storageBuffer8BitAccess)
      info.why_unusable = "no storageBuffer8BitAccess";
  }
  info.usable = info.why_unusable.empty();
  if (p.apiVersion >= VK_API_VERSION_1_1) DescribeFeatures(pd, p, info);
  return info;
}

int Rank(VulkanDeviceKind k) {
  switch (k) {
    case VulkanDeviceKind::kDiscreteGpu: return 0;
    case VulkanDeviceKind::kIntegratedGpu: return 1;
    case VulkanDeviceKind::kVirtualGpu: return 2;
    case VulkanDeviceKind::kCpu: return 3;
    default: return 4;
  }
}

std::vector<VkPhysicalDevice> PhysicalDevices(VkInstance instance) {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  vkEnumeratePhysicalDevices(instance, &n, devices.data());
  devices.resize(n);
  return devices;
}

}  // namespace

absl::Status VkCheck(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return absl::OkStatus();
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": out of memory (VkResult ", result, ")"));
  }
  return absl::InternalError(absl::StrCat(what, " failed (VkResult ", result, ")"));
}

absl::StatusOr<std::shared_ptr<VulkanContext>> VulkanContext::Create(const VulkanBackendOptions& options) {
  PCP_ASSIGN_OR_RETURN(VkInstance instance, ProcessInstance());
  std::shared_ptr<VulkanContext> ctx(new VulkanContext());
  const std::vector<VkPhysicalDevice> devices = PhysicalDevices(instance);
  if (devices.empty()) return absl::UnavailableError("no Vulkan device (the loader reports none)");
  std::vector<VulkanDeviceInfo> infos;
  for (size_t i = 0; i < devices.size(); ++i) infos.push_back(Describe(devices[i], static_cast<int>(i)));
  int chosen = -1;
  if (!options.device_name.empty()) {
    const std::string want = absl::AsciiStrToLower(options.device_name);
    for (const VulkanDeviceInfo& d : infos) {
      if (absl::StrContains(absl::AsciiStrToLower(d.name), want)) {
        chosen = d.index;
        break;
      }
    }
    if (chosen < 0) return absl::NotFoundError(absl::StrCat("no Vulkan device named like '", options.device_name, "'"));
  } else if (options.device_index >= 0) {
    if (options.device_index >= static_cast<int>(infos.size())) {
      return absl::NotFoundError(
          absl::StrCat("Vulkan device index ", options.device_index, " out of range (", infos.size(), " devices)"));
    }
    chosen = options.device_index;
  } else {
    for (const VulkanDeviceInfo& d : infos) {
      if (d.usable && (chosen < 0 || Rank(d.kind) < Rank(infos[chosen].kind))) chosen = d.index;
    }
    if (chosen < 0) {
      return absl::UnavailableError(
          absl::StrCat("no usable Vulkan device (", infos[0].name, ": ", infos[0].why_unusable, ")"));
    }
  }
  ctx->info_ = infos[chosen];
  if (!ctx->info_.usable) {
    return absl::FailedPreconditionError(
        absl::StrCat("Vulkan device ", ctx->info_.name, ": ", ctx->info_.why_unusable));
  }
  ctx->physical_ = devices[chosen];
  ctx->queue_family_ = static_cast<uint32_t>(ComputeQueueFamily(ctx->physical_));

  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(ctx->physical_, &props);
  ctx->timestamp_period_ns_ = props.limits.timestampPeriod;
  ctx->max_shared_memory_ = props.limits.maxComputeSharedMemorySize;
  ctx->max_storage_buffers_ =
      std::min(props.limits.maxPerStageDescriptorStorageBuffers, props.limits.maxDescriptorSetStorageBuffers);
  {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical_, &n, families.data());
    ctx->timestamp_valid_bits_ = families[ctx->queue_family_].timestampValidBits;
  }
  vkGetPhysicalDeviceMemoryProperties(ctx->physical_, &ctx->memory_);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = ctx->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  {
    VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    query.pNext = &s16;
    vkGetPhysicalDeviceFeatures2(ctx->physical_, &query);
    ctx->storage_16bit_ = s16.storageBuffer16BitAccess == VK_TRUE;
    s16 = VkPhysicalDevice16BitStorageFeatures{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    s16.storageBuffer16BitAccess = ctx->storage_16bit_ ? VK_TRUE : VK_FALSE;
  }
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  s8.storageBuffer8BitAccess = VK_TRUE;
  s8.pNext = &s16;
  // Tensor cores (DescribeFeatures decided): the extension, its feature and float16 arithmetic.
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  if (ctx->info_.shader_float16) {
    f16.shaderFloat16 = VK_TRUE;
    s16.pNext = &f16;
  }
  if (ctx->info_.cooperative_matrix_f16) {
    coop.cooperativeMatrix = VK_TRUE;
    memory_model.vulkanMemoryModel = VK_TRUE;
    coop.pNext = &memory_model;
    f16.pNext = &coop;
  }
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &s8;
  f2.features.shaderInt64 = VK_TRUE;
  std::vector<const char*> extensions;
  // 8-bit storage and float16 are core in 1.2; name their extensions only for 1.1 devices.
  if (props.apiVersion < VK_API_VERSION_1_2) extensions.push_back("VK_KHR_8bit_storage");
  if (ctx->info_.shader_float16 && props.apiVersion < VK_API_VERSION_1_2) {
    extensions.push_back("VK_KHR_shader_float16_int8");
  }
  if (ctx->info_.cooperative_matrix_f16) {
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (props.apiVersion < VK_API_VERSION_1_2) extensions.push_back("VK_KHR_vulkan_memory_model");
  }
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  dci.ppEnabledExtensionNames = extensions.empty() ? nullptr : extensions.data();
  PCP_RETURN_IF_ERROR(VkCheck(vkCreateDevice(ctx->physical_, &dci, nullptr, &ctx->device_), "vkCreateDevice"));
  vkGetDeviceQueue(ctx->device_, ctx->queue_family_, 0, &ctx->queue_);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = ctx->queue_family_;
  PCP_RETURN_IF_ERROR(VkCheck(vkCreateCommandPool(ctx->device_, &pci, nullptr, &ctx->pool_), "vkCreateCommandPool"));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  PCP_RETURN_IF_ERROR(VkCheck(vkCreateFence(ctx->device_, &fci, nullptr, &ctx->fence_), "vkCreateFence"));
  return ctx;
}

VulkanContext::~VulkanContext() {
  if (device_ != VK_NULL_HANDLE) {
    // (The buffer pool flushed its deferred copies before destroying their buffers.)
    vkDeviceWaitIdle(device_);
    if (fence_ != VK_NULL_HANDLE) vkDestroyFence(device_, fence_, nullptr);
    if (pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
}

absl::StatusOr<uint32_t> VulkanContext::FindMemoryType(uint32_t type_bits, VkMemoryPropertyFlags required) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & required) == required) return i;
  }
  return absl::ResourceExhaustedError(absl::StrCat("no Vulkan memory type with flags ", required));
}

absl::StatusOr<VkCommandBuffer> VulkanContext::AllocateCommandBuffer() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  PCP_RETURN_IF_ERROR(VkCheck(vkAllocateCommandBuffers(device_, &ai, &cb), "vkAllocateCommandBuffers"));
  return cb;
}

void VulkanContext::FreeCommandBuffer(VkCommandBuffer cb) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  vkFreeCommandBuffers(device_, pool_, 1, &cb);
}

absl::Status VulkanContext::Submit(VkCommandBuffer cb) { return SubmitWithDeferred(cb); }

absl::Status VulkanContext::Flush() { return SubmitWithDeferred(VK_NULL_HANDLE); }

void VulkanContext::DeferCopy(VkBuffer src, VkBuffer dst, VkDeviceSize bytes, std::function<void()> done) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  deferred_.push_back({src, dst, bytes, std::move(done)});
  deferred_bytes_ += bytes;
}

VkDeviceSize VulkanContext::deferred_bytes() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return deferred_bytes_;
}

uint64_t VulkanContext::submissions() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return submissions_;
}

absl::Status VulkanContext::SubmitWithDeferred(VkCommandBuffer cb) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::vector<Deferred> deferred = std::move(deferred_);
  deferred_.clear();
  deferred_bytes_ = 0;
  VkCommandBuffer copies = VK_NULL_HANDLE;
  absl::Status s;
  if (!deferred.empty()) {
    absl::StatusOr<VkCommandBuffer> allocated = AllocateCommandBuffer();
    if (allocated.ok()) {
      copies = *allocated;
      VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
      vkBeginCommandBuffer(copies, &bi);
      for (const Deferred& d : deferred) {
        VkBufferCopy region{0, 0, d.bytes};
        vkCmdCopyBuffer(copies, d.src, d.dst, 1, &region);
      }
      // The copies' writes, visible to the shaders and copies submitted after them.
      VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                              VK_ACCESS_TRANSFER_WRITE_BIT;
      vkCmdPipelineBarrier(copies, VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                           nullptr, 0, nullptr);
      vkEndCommandBuffer(copies);
    } else {
      s = allocated.status();
    }
  }
  std::vector<VkCommandBuffer> batch;
  if (copies != VK_NULL_HANDLE) batch.push_back(copies);
  if (cb != VK_NULL_HANDLE && s.ok()) batch.push_back(cb);
  if (!batch.empty()) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = static_cast<uint32_t>(batch.size());
    si.pCommandBuffers = batch.data();
    s = VkCheck(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
    ++submissions_;
    if (s.ok()) {
      const VkResult r = vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX);
      vkResetFences(device_, 1, &fence_);
      s = VkCheck(r, "vkWaitForFences");
    }
  }
  if (copies != VK_NULL_HANDLE) FreeCommandBuffer(copies);
  for (Deferred& d : deferred) {
    if (d.done) d.done();
  }
  return s;
}

absl::Status VulkanContext::SubmitAndWait(const std::function<void(VkCommandBuffer)>& record) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  PCP_ASSIGN_OR_RETURN(VkCommandBuffer cb, AllocateCommandBuffer());
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(cb, &bi);
  record(cb);
  vkEndCommandBuffer(cb);
  absl::Status s = Submit(cb);
  FreeCommandBuffer(cb);
  return s;
}

}  // namespace vulkan

absl::StatusOr<std::vector<VulkanDeviceInfo>> ListVulkanDevices() {
  PCP_ASSIGN_OR_RETURN(VkInstance instance, vulkan::ProcessInstance());
  std::vector<VulkanDeviceInfo> infos;
  const std::vector<VkPhysicalDevice> devices = vulkan::PhysicalDevices(instance);
  for (size_t i = 0; i < devices.size(); ++i) infos.push_back(vulkan::Describe(devices[i], static_cast<int>(i)));
  return infos;
}

}  // namespace pcp
