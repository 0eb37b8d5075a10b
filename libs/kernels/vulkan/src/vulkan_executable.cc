#include "vulkan_executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/status_macros.h"
#include "vulkan_buffer.h"

namespace pcp::vulkan {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void FullBarrier(VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0,
                       nullptr);
}

int64_t Bytes(const TensorType& t) { return t.num_elements() * SizeOf(t.dtype); }

}  // namespace

absl::StatusOr<std::unique_ptr<VulkanExecutable>> VulkanExecutable::Create(const Function& f,
                                                                           std::shared_ptr<BufferPool> pool,
                                                                           ShaderCompiler& compiler, bool profile,
                                                                           PlanOptions switches,
                                                                           KernelSourceOptions sources) {
  std::unique_ptr<VulkanExecutable> exe(new VulkanExecutable(f, std::move(pool)));
  PCP_RETURN_IF_ERROR(exe->Build(compiler, profile, switches, sources));
  return exe;
}

absl::Status VulkanExecutable::Build(ShaderCompiler& compiler, bool profile, PlanOptions plan_options,
                                     KernelSourceOptions sources) {
  const std::shared_ptr<VulkanContext>& ctx = pool_->context();
  VkDevice dev = ctx->device();
  binding_limit_ = static_cast<int>(std::min<uint32_t>(ctx->max_storage_buffers(), 1 << 20));
  plan_options.half_moves = ctx->storage_16bit();
  plan_options.max_bindings = binding_limit_;
  sources.cooperative_matrix_f16 = ctx->cooperative_matrix_f16() || sources.emulate_cooperative_matrix;
  PCP_ASSIGN_OR_RETURN(plan_, PlanKernels(f_, plan_options));
  param_index_.assign(static_cast<size_t>(f_.num_values()), -1);
  for (size_t i = 0; i < f_.params.size(); ++i) param_index_[static_cast<size_t>(f_.params[i])] = static_cast<int>(i);

  // Constants uploaded now (kernel outputs get buffers once the kernels' inputs are known).
  value_buffers_.assign(static_cast<size_t>(f_.num_values()), DeviceBuffer{});
  for (ValueId c : plan_.constants) {
    const Tensor& lit = f_.instructions[static_cast<size_t>(plan_.producer[static_cast<size_t>(c)])].attrs.literal;
    PCP_ASSIGN_OR_RETURN(value_buffers_[static_cast<size_t>(c)],
                         pool_->Acquire(static_cast<VkDeviceSize>(lit.byte_size()), false));
    PCP_RETURN_IF_ERROR(UploadToBuffer(*pool_, lit.raw_data(), static_cast<VkDeviceSize>(lit.byte_size()),
                                       value_buffers_[static_cast<size_t>(c)]));
    owned_buffers_.push_back(value_buffers_[static_cast<size_t>(c)]);
  }
  for (size_t i = 0; i < f_.results.size(); ++i) {
    DeviceBuffer temp;
    if (param_index_[static_cast<size_t>(f_.results[i])] >= 0) {
      PCP_ASSIGN_OR_RETURN(temp, pool_->Acquire(static_cast<VkDeviceSize>(Bytes(f_.type(f_.results[i]))), false));
    }
    result_temps_.push_back(temp);
  }

  // Kernels and pipelines (one per distinct source).
  uint32_t total_bindings = 0;
  VkDeviceSize scratch_bytes = 0;
  for (const PlannedKernel& pk : plan_.kernels) {
    Kernel k;
    auto start = std::chrono::steady_clock::now();
    PCP_ASSIGN_OR_RETURN(k.src, KernelSourceFor(f_, plan_, pk, sources));
    codegen_seconds_ += SecondsSince(start);
    k.kind = pk.kind;
    k.outputs = OutputsOf(pk);
    k.fused_instructions = pk.fused_instructions;
    const size_t kernel_bindings = k.src.bindings(k.outputs.size());
    // PlanKernels keeps kernels within the limit; past it the driver may fail or crash.
    if (kernel_bindings > static_cast<size_t>(binding_limit_)) {
      return absl::InternalError(absl::StrCat("vulkan backend: kernel ", k.src.name, " binds ", kernel_bindings,
                                              " storage buffers, over the device's limit of ", binding_limit_));
    }
    total_bindings += static_cast<uint32_t>(kernel_bindings);
    PCP_ASSIGN_OR_RETURN(k.pipeline, PipelineFor(k.src.glsl, k.src.name, kernel_bindings, compiler));
    if (k.src.split()) {
      PCP_ASSIGN_OR_RETURN(k.finish_pipeline, PipelineFor(k.src.finish_glsl, absl::StrCat(k.src.name, "_finish"),
                                                          kernel_bindings, compiler));
      scratch_bytes = std::max(scratch_bytes, static_cast<VkDeviceSize>(k.src.scratch_bytes));
    }
    kernels_.push_back(std::move(k));
  }
  pipeline_of_source_.clear();  // kernels_ keep their sources
  if (scratch_bytes > 0) {
    PCP_ASSIGN_OR_RETURN(scratch_, pool_->Acquire(scratch_bytes, false));
    owned_buffers_.push_back(scratch_);
  }

  PCP_RETURN_IF_ERROR(AssignBuffers());

  if (!kernels_.empty()) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, total_bindings};
    VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpci.maxSets = static_cast<uint32_t>(kernels_.size());
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &size;
    PCP_RETURN_IF_ERROR(
        VkCheck(vkCreateDescriptorPool(dev, &dpci, nullptr, &descriptor_pool_), "vkCreateDescriptorPool"));
    for (Kernel& k : kernels_) {
      VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
      ai.descriptorPool = descriptor_pool_;
      ai.descriptorSetCount = 1;
      ai.pSetLayouts = &pipelines_[static_cast<size_t>(k.pipeline)].set_layout;
      PCP_RETURN_IF_ERROR(VkCheck(vkAllocateDescriptorSets(dev, &ai, &k.set), "vkAllocateDescriptorSets"));
    }
  }
  PCP_ASSIGN_OR_RETURN(cb_, ctx->AllocateCommandBuffer());
  if (profile && ctx->timestamps() && !kernels_.empty()) {
    VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qci.queryCount = static_cast<uint32_t>(2 * kernels_.size());
    PCP_RETURN_IF_ERROR(VkCheck(vkCreateQueryPool(dev, &qci, nullptr, &queries_), "vkCreateQueryPool"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> VulkanExecutable::PipelineFor(const std::string& glsl, const std::string& name, size_t bindings,
                                                  ShaderCompiler& compiler) {
  if (auto it = pipeline_of_source_.find(glsl); it != pipeline_of_source_.end()) return it->second;
  VkDevice dev = pool_->context()->device();
  auto start = std::chrono::steady_clock::now();
  PCP_ASSIGN_OR_RETURN(std::vector<uint32_t> spirv, compiler.Compile(glsl, name));
  shaderc_seconds_ += SecondsSince(start);
  start = std::chrono::steady_clock::now();
  Pipeline p;
  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smci.codeSize = spirv.size() * 4;
  smci.pCode = spirv.data();
  PCP_RETURN_IF_ERROR(VkCheck(vkCreateShaderModule(dev, &smci, nullptr, &p.module), "vkCreateShaderModule"));
  // A split reduction's two pipelines get identically defined set layouts, so the kernel's one
  // descriptor set binds to both.
  std::vector<VkDescriptorSetLayoutBinding> layout_bindings(bindings);
  for (size_t i = 0; i < layout_bindings.size(); ++i) {
    layout_bindings[i] = {static_cast<uint32_t>(i), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
                          nullptr};
  }
  VkDescriptorSetLayoutCreateInfo dlci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dlci.bindingCount = static_cast<uint32_t>(layout_bindings.size());
  dlci.pBindings = layout_bindings.data();
  PCP_RETURN_IF_ERROR(
      VkCheck(vkCreateDescriptorSetLayout(dev, &dlci, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout"));
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &p.set_layout;
  PCP_RETURN_IF_ERROR(VkCheck(vkCreatePipelineLayout(dev, &plci, nullptr, &p.layout), "vkCreatePipelineLayout"));
  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = p.module;
  cpci.stage.pName = "main";
  cpci.layout = p.layout;
  PCP_RETURN_IF_ERROR(VkCheck(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, nullptr, &p.pipeline),
                              absl::StrCat("vkCreateComputePipelines(", name, ")").c_str()));
  pipeline_seconds_ += SecondsSince(start);
  const int index = static_cast<int>(pipelines_.size());
  pipeline_of_source_[glsl] = index;
  pipelines_.push_back(p);
  return index;
}

absl::Status VulkanExecutable::AssignBuffers() {
  // Kernel outputs share buffers when their lifetimes (producing kernel .. last reader) do
  // not overlap. Every dispatch is followed by a full barrier, so reusing a buffer that an
  // earlier kernel read is safe. Results live to the end (they are copied out last).
  const size_t nv = static_cast<size_t>(f_.num_values());
  constexpr int kForever = 1 << 30;
  std::vector<int> last(nv, -1);
  for (size_t i = 0; i < kernels_.size(); ++i) {
    for (ValueId v : kernels_[i].src.inputs) last[static_cast<size_t>(v)] = static_cast<int>(i);
  }
  for (ValueId r : f_.results) last[static_cast<size_t>(r)] = kForever;
  std::vector<std::vector<ValueId>> release_after(kernels_.size());
  for (size_t i = 0; i < kernels_.size(); ++i) {
    for (ValueId v : kernels_[i].outputs) {
      const int l = last[static_cast<size_t>(v)];
      if (l == kForever) continue;
      release_after[static_cast<size_t>(std::max(l, static_cast<int>(i)))].push_back(v);
    }
  }
  std::multimap<VkDeviceSize, DeviceBuffer> free;
  for (size_t i = 0; i < kernels_.size(); ++i) {
    // A kernel's outputs are all live while it runs: each gets its own buffer before any is
    // released.
    for (ValueId v : kernels_[i].outputs) {
      const VkDeviceSize bytes = static_cast<VkDeviceSize>(std::max<int64_t>(16, Bytes(f_.type(v))));
      auto it = free.lower_bound(bytes);
      if (it != free.end() && it->first <= 2 * bytes) {
        value_buffers_[static_cast<size_t>(v)] = it->second;
        free.erase(it);
      } else {
        PCP_ASSIGN_OR_RETURN(DeviceBuffer b, pool_->Acquire(bytes, false));
        owned_buffers_.push_back(b);
        value_buffers_[static_cast<size_t>(v)] = b;
      }
    }
    for (ValueId done : release_after[i]) {
      const DeviceBuffer& b = value_buffers_[static_cast<size_t>(done)];
      free.emplace(b.size, b);
    }
  }
  return absl::OkStatus();
}

VulkanExecutable::~VulkanExecutable() {
  const std::shared_ptr<VulkanContext>& ctx = pool_->context();
  VkDevice dev = ctx->device();
  if (queries_ != VK_NULL_HANDLE && runs_ > 0) {
    std::vector<size_t> order(kernels_.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return kernels_[a].total_ms > kernels_[b].total_ms; });
    double total = 0;
    for (const Kernel& k : kernels_) total += k.total_ms;
    std::fprintf(stderr,
                 "PCP_VULKAN_PROFILE %s: %d runs, %zu kernels (%zu pipelines), %.3f ms/run in kernels; compile: "
                 "codegen %.2f s, shaderc %.2f s, pipelines %.2f s; buffers %.1f MiB (%.1f MiB unshared)\n",
                 f_.name.c_str(), runs_, kernels_.size(), pipelines_.size(), total / runs_, codegen_seconds_,
                 shaderc_seconds_, pipeline_seconds_, stats().buffer_bytes / 1048576.0,
                 stats().unshared_bytes / 1048576.0);
    for (size_t i = 0; i < std::min<size_t>(40, order.size()); ++i) {
      const Kernel& k = kernels_[order[i]];
      std::fprintf(stderr, "  %9.3f ms/run %5.1f%%  %s (%d instructions)\n", k.total_ms / runs_,
                   total > 0 ? 100.0 * k.total_ms / total : 0.0, k.src.name.c_str(), k.fused_instructions);
    }
    vkDestroyQueryPool(dev, queries_, nullptr);
  }
  if (cb_ != VK_NULL_HANDLE) ctx->FreeCommandBuffer(cb_);
  if (descriptor_pool_ != VK_NULL_HANDLE) vkDestroyDescriptorPool(dev, descriptor_pool_, nullptr);
  for (const Pipeline& p : pipelines_) {
    vkDestroyPipeline(dev, p.pipeline, nullptr);
    vkDestroyPipelineLayout(dev, p.layout, nullptr);
    vkDestroyDescriptorSetLayout(dev, p.set_layout, nullptr);
    vkDestroyShaderModule(dev, p.module, nullptr);
  }
  for (const DeviceBuffer& b : owned_buffers_) pool_->Release(b);
  for (const DeviceBuffer& b : result_temps_) pool_->Release(b);
}

VkBuffer VulkanExecutable::BufferOf(ValueId v, const std::vector<VkBuffer>& args) const {
  const int p = param_index_[static_cast<size_t>(v)];
  if (p >= 0) return args[static_cast<size_t>(p)];
  return value_buffers_[static_cast<size_t>(v)].buffer;
}

absl::Status VulkanExecutable::Bind(const std::vector<VkBuffer>& args, const std::vector<VkBuffer>& results) {
  VkDevice dev = pool_->context()->device();
  // Descriptor sets: every kernel's inputs (parameters come from this Run's arguments).
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  size_t total = 0;
  for (const Kernel& k : kernels_) total += k.src.bindings(k.outputs.size());
  infos.reserve(total);
  for (const Kernel& k : kernels_) {
    const size_t values = k.src.inputs.size() + k.outputs.size();
    for (size_t i = 0; i < k.src.bindings(k.outputs.size()); ++i) {
      const ValueId v = i < k.src.inputs.size() ? k.src.inputs[i]
                        : i < values            ? k.outputs[i - k.src.inputs.size()]
                                                : kNoValue;  // the scratch buffer
      const VkBuffer buffer = v == kNoValue ? scratch_.buffer : BufferOf(v, args);
      // A planning error (a value read that no kernel writes) is reported, not handed to the driver.
      if (buffer == VK_NULL_HANDLE) {
        return absl::InternalError(
            absl::StrCat(f_.name, ": kernel ", k.src.name, " binds value %", v, ", which has no buffer"));
      }
      infos.push_back({buffer, 0, VK_WHOLE_SIZE});
      VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w.dstSet = k.set;
      w.dstBinding = static_cast<uint32_t>(i);
      w.descriptorCount = 1;
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = &infos.back();
      writes.push_back(w);
    }
  }
  if (!writes.empty()) vkUpdateDescriptorSets(dev, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

  auto pool_lock = pool_->context()->LockCommandPool();
  vkResetCommandBuffer(cb_, 0);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  PCP_RETURN_IF_ERROR(VkCheck(vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer"));
  // Earlier submissions (CopyIn, the previous Run) wrote buffers this one reads.
  FullBarrier(cb_);
  if (queries_ != VK_NULL_HANDLE) vkCmdResetQueryPool(cb_, queries_, 0, static_cast<uint32_t>(2 * kernels_.size()));
  // Results that are parameters: saved before any result buffer (maybe an argument) is written.
  bool any_temp = false;
  for (size_t i = 0; i < f_.results.size(); ++i) {
    if (result_temps_[i].buffer == VK_NULL_HANDLE) continue;
    const VkDeviceSize bytes = static_cast<VkDeviceSize>(Bytes(f_.type(f_.results[i])));
    if (bytes == 0) continue;
    VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cb_, BufferOf(f_.results[i], args), result_temps_[i].buffer, 1, &region);
    any_temp = true;
  }
  if (any_temp) FullBarrier(cb_);
  for (size_t i = 0; i < kernels_.size(); ++i) {
    const Kernel& k = kernels_[i];
    if (queries_ != VK_NULL_HANDLE) {
      vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, static_cast<uint32_t>(2 * i));
    }
    if (!k.src.empty) {
      const Pipeline& p = pipelines_[static_cast<size_t>(k.pipeline)];
      vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
      vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &k.set, 0, nullptr);
      vkCmdDispatch(cb_, k.src.groups[0], k.src.groups[1], k.src.groups[2]);
      if (k.src.split()) {
        // The partials are written before the finishing pass reads them.
        FullBarrier(cb_);
        const Pipeline& finish = pipelines_[static_cast<size_t>(k.finish_pipeline)];
        vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, finish.pipeline);
        vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, finish.layout, 0, 1, &k.set, 0, nullptr);
        vkCmdDispatch(cb_, k.src.finish_groups[0], k.src.finish_groups[1], k.src.finish_groups[2]);
      }
    }
    if (queries_ != VK_NULL_HANDLE) {
      vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, static_cast<uint32_t>(2 * i + 1));
    }
    FullBarrier(cb_);
  }
  for (size_t i = 0; i < f_.results.size(); ++i) {
    const ValueId v = f_.results[i];
    const VkBuffer src = result_temps_[i].buffer != VK_NULL_HANDLE ? result_temps_[i].buffer : BufferOf(v, args);
    const VkDeviceSize bytes = static_cast<VkDeviceSize>(Bytes(f_.type(v)));
    if (bytes == 0 || src == results[i]) continue;
    VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cb_, src, results[i], 1, &region);
  }
  PCP_RETURN_IF_ERROR(VkCheck(vkEndCommandBuffer(cb_), "vkEndCommandBuffer"));
  bound_args_ = args;
  bound_results_ = results;
  recorded_ = true;
  return absl::OkStatus();
}

absl::Status VulkanExecutable::Run(absl::Span<Buffer* const> args, absl::Span<Buffer* const> results) {
  if (args.size() != f_.params.size() || results.size() != f_.results.size()) {
    return absl::InvalidArgumentError(absl::StrCat(f_.name, ": Run got ", args.size(), " arguments and ",
                                                   results.size(), " results, expected ", f_.params.size(), " and ",
                                                   f_.results.size()));
  }
  auto get = [&](Buffer* b, const TensorType& want, const char* what, size_t i) -> absl::StatusOr<VkBuffer> {
    auto* vb = dynamic_cast<VulkanBuffer*>(b);
    if (vb == nullptr || vb->pool() != pool_.get()) {
      return absl::InvalidArgumentError(
          absl::StrCat(f_.name, ": ", what, " ", i, " is not a buffer of this Vulkan backend"));
    }
    if (vb->type() != want) {
      return absl::InvalidArgumentError(absl::StrCat(f_.name, ": ", what, " ", i, " has type ", vb->type().ToString(),
                                                     ", expected ", want.ToString()));
    }
    return vb->device_buffer().buffer;
  };
  std::vector<VkBuffer> a, r;
  for (size_t i = 0; i < args.size(); ++i) {
    PCP_ASSIGN_OR_RETURN(VkBuffer b, get(args[i], f_.type(f_.params[i]), "argument", i));
    a.push_back(b);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    PCP_ASSIGN_OR_RETURN(VkBuffer b, get(results[i], f_.type(f_.results[i]), "result", i));
    for (size_t j = 0; j < i; ++j) {
      if (results[j] == results[i]) {
        return absl::InvalidArgumentError(absl::StrCat(f_.name, ": results ", j, " and ", i, " are the same buffer"));
      }
    }
    r.push_back(b);
  }
  if (!recorded_ || a != bound_args_ || r != bound_results_) PCP_RETURN_IF_ERROR(Bind(a, r));
  PCP_RETURN_IF_ERROR(pool_->context()->Submit(cb_));
  ++runs_;
  if (queries_ != VK_NULL_HANDLE) CollectTimestamps();
  return absl::OkStatus();
}

void VulkanExecutable::CollectTimestamps() {
  std::vector<uint64_t> ts(2 * kernels_.size());
  const VkResult res = vkGetQueryPoolResults(pool_->context()->device(), queries_, 0, static_cast<uint32_t>(ts.size()),
                                             ts.size() * sizeof(uint64_t), ts.data(), sizeof(uint64_t),
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (res != VK_SUCCESS) return;
  const double ns = pool_->context()->timestamp_period_ns();
  for (size_t i = 0; i < kernels_.size(); ++i) {
    kernels_[i].total_ms += static_cast<double>(ts[2 * i + 1] - ts[2 * i]) * ns * 1e-6;
  }
}

VulkanExecutableStats VulkanExecutable::stats() const {
  VulkanExecutableStats s;
  s.num_instructions = static_cast<int>(f_.instructions.size());
  s.num_kernels = static_cast<int>(kernels_.size());
  for (const Kernel& k : kernels_) {
    s.num_dispatches += k.src.split() ? 2 : 1;
    s.num_row_kernels += k.kind == KernelKind::kRow ? 1 : 0;
    s.num_map_groups += k.kind == KernelKind::kMapGroup ? 1 : 0;
    s.num_split_reductions += k.src.split() ? 1 : 0;
    s.num_reduction_groups += k.src.split() && k.outputs.size() > 1 ? 1 : 0;
    if (k.src.empty) continue;
    s.work_groups += int64_t{k.src.groups[0]} * k.src.groups[1] * k.src.groups[2];
    if (k.src.split())
      s.work_groups += int64_t{k.src.finish_groups[0]} * k.src.finish_groups[1] * k.src.finish_groups[2];
  }
  s.num_pipelines = static_cast<int>(pipelines_.size());
  s.binding_limit = binding_limit_;
  for (const Kernel& k : kernels_) {
    s.max_kernel_bindings = std::max(s.max_kernel_bindings, static_cast<int>(k.src.bindings(k.outputs.size())));
  }
  for (const DeviceBuffer& b : owned_buffers_) s.buffer_bytes += static_cast<int64_t>(b.size);
  for (const Kernel& k : kernels_) {
    for (ValueId v : k.outputs) s.unshared_bytes += Bytes(f_.type(v));
  }
  s.codegen_seconds = codegen_seconds_;
  s.shaderc_seconds = shaderc_seconds_;
  s.pipeline_seconds = pipeline_seconds_;
  return s;
}

std::string VulkanExecutable::DescribeSchedule() const {
  std::string out;
  for (const Kernel& k : kernels_) {
    absl::StrAppendFormat(&out, "%s: %d instructions, %zu inputs, %zu outputs, groups %ux%ux%u", k.src.name,
                          k.fused_instructions, k.src.inputs.size(), k.outputs.size(), k.src.groups[0], k.src.groups[1],
                          k.src.groups[2]);
    if (k.src.split()) {
      absl::StrAppendFormat(&out, " then %ux%ux%u (%d scratch bytes)", k.src.finish_groups[0], k.src.finish_groups[1],
                            k.src.finish_groups[2], k.src.scratch_bytes);
    }
    out += "\n";
  }
  return out;
}

}  // namespace pcp::vulkan
