#include "cpu_executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "cpu_buffer.h"
#include "memory_plan.h"
#include "pcp/tensor/tensor.h"

namespace pcp::cpu {
namespace {

// nullptr if out of memory.
uint8_t* AllocateAligned(int64_t bytes) {
  const size_t size = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  return static_cast<uint8_t*>(std::aligned_alloc(64, size));
}

// The arena of a large program (the GPT train step's is ~34 MB, more than L3) in 2 MiB
// pages where the kernel offers transparent huge pages on request (`madvise` mode): each
// kernel's operands then span a few TLB entries instead of hundreds of 4 KiB pages, whose
// misses are two-level page walks in a virtual machine. Below 2 MiB, plain 64-byte-aligned
// memory (a small arena must not take a whole huge page).
uint8_t* AllocateArena(int64_t bytes) {
  constexpr int64_t kHugePage = static_cast<int64_t>(kHugePageBytes);
  if (bytes < kHugePage) return AllocateAligned(bytes);
  void* p = std::aligned_alloc(kHugePageBytes, static_cast<size_t>((bytes + kHugePage - 1) / kHugePage * kHugePage));
  AdviseHugePages(p, static_cast<size_t>(bytes));  // advice only: failing is harmless
  return static_cast<uint8_t*>(p);
}

bool Contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

CpuExecutableImpl::CpuExecutableImpl(Function function, Program program, std::shared_ptr<SharedPool> pool)
    : function_(std::move(function)), program_(std::move(program)), pool_(std::move(pool)) {
  readers_.resize(program_.storages.size());
  for (size_t k = 0; k < program_.kernels.size(); ++k) {
    for (int s : program_.kernels[k]->reads) {
      if (readers_[s].empty() || readers_[s].back() != static_cast<int>(k)) readers_[s].push_back(static_cast<int>(k));
    }
  }
  storage_ptrs_.assign(program_.storages.size(), nullptr);
  for (size_t s = 0; s < program_.storages.size(); ++s) {
    const Storage& st = program_.storages[s];
    if (st.kind == StorageKind::kConstant) {
      storage_ptrs_[s] = static_cast<uint8_t*>(const_cast<void*>(program_.constants[st.index].raw_data()));
    }
  }
  if (const char* profile = std::getenv("PCP_CPU_PROFILE");
      profile != nullptr && profile[0] >= '1' && profile[0] <= '3') {
    profile_level_ = profile[0] - '0';
  }
  kernel_seconds_.assign(program_.kernels.size(), 0.0);
  // The default binding: every result in a buffer of its own.
  bindings_.push_back(MakeBinding(std::vector<std::vector<int>>(program_.result_storage.size())));
  current_ = bindings_.back().get();
}

CpuExecutableImpl::~CpuExecutableImpl() {
  if (profile_level_ > 0 && profiled_runs_ > 0) PrintProfile();
  std::free(arena_);
  for (uint8_t* s : scratch_) std::free(s);
}

void CpuExecutableImpl::PrintProfile() const {
  double total = 0, by_kind[4] = {0, 0, 0, 0};
  for (size_t k = 0; k < kernel_seconds_.size(); ++k) {
    total += kernel_seconds_[k];
    by_kind[static_cast<int>(program_.kernels[k]->kind)] += kernel_seconds_[k];
  }
  const double ms = 1e3 / static_cast<double>(profiled_runs_);
  std::fprintf(stderr,
               "cpu profile of @%s: %.3f ms/run over %lld runs, %zu kernels; fused %.3f, dot %.3f, copy %.3f, other "
               "%.3f ms\n",
               function_.name.c_str(), total * ms, static_cast<long long>(profiled_runs_), kernel_seconds_.size(),
               by_kind[0] * ms, by_kind[1] * ms, by_kind[2] * ms, by_kind[3] * ms);
  // Level 1: the 60 heaviest kernels; 2: the same without dots; 3: every kernel in order.
  std::vector<size_t> order;
  for (size_t k = 0; k < kernel_seconds_.size(); ++k) {
    if (profile_level_ != 2 || program_.kernels[k]->kind != Kernel::Kind::kDot) order.push_back(k);
  }
  if (profile_level_ != 3) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return kernel_seconds_[a] > kernel_seconds_[b]; });
    order.resize(std::min<size_t>(order.size(), 60));
  }
  for (size_t k : order) {
    std::fprintf(stderr, "  %8.3f ms  #%zu %s\n", kernel_seconds_[k] * ms, k, program_.kernels[k]->Describe().c_str());
  }
}

std::unique_ptr<CpuExecutableImpl::Binding> CpuExecutableImpl::MakeBinding(
    std::vector<std::vector<int>> aliases) const {
  auto b = std::make_unique<Binding>();
  b->aliases = std::move(aliases);
  const int end = static_cast<int>(program_.kernels.size());
  const size_t num_results = program_.result_storage.size();
  b->direct.assign(num_results, true);
  // A result goes straight into its buffer unless that buffer is an argument still read
  // after (or, other than element by element, while) the result is written.
  for (size_t i = 0; i < num_results; ++i) {
    const int w = program_.result_storage[i];
    const int writer = program_.storages[w].producer;
    for (int j : b->aliases[i]) {
      const int param = program_.param_storage[j];
      for (int k : readers_[param]) {
        const Kernel& kernel = *program_.kernels[k];
        if (k > writer ||
            (k == writer && !(Contains(kernel.same_index_reads, param) && Contains(kernel.same_index_writes, w)))) {
          b->direct[i] = false;
        }
      }
    }
  }
  std::vector<bool> in_result_buffer(program_.storages.size(), false);
  std::vector<bool> copied_at_end(program_.storages.size(), false);
  for (size_t i = 0; i < num_results; ++i) {
    (b->direct[i] ? in_result_buffer : copied_at_end)[program_.result_storage[i]] = true;
  }
  for (size_t s = 0; s < program_.storages.size(); ++s) {
    const Storage& st = program_.storages[s];
    if (st.kind != StorageKind::kArena || in_result_buffer[s]) continue;
    ArenaBlock block;
    block.size = st.bytes;
    block.first = st.producer;
    block.last = st.producer;
    if (!readers_[s].empty()) block.last = std::max(block.last, readers_[s].back());
    if (copied_at_end[s]) block.last = end;
    block.what = st.name;
    b->blocks.push_back(std::move(block));
    b->block_storage.push_back(static_cast<int>(s));
  }
  b->arena_bytes = PlanMemory(b->blocks);
  b->offset.assign(program_.storages.size(), -1);
  for (size_t i = 0; i < b->blocks.size(); ++i) b->offset[b->block_storage[i]] = b->blocks[i].offset;
  return b;
}

absl::Status CpuExecutableImpl::Run(absl::Span<Buffer* const> args, absl::Span<Buffer* const> results) {
  const Function& f = function_;
  if (args.size() != f.params.size() || results.size() != f.results.size()) {
    return absl::InvalidArgumentError(absl::StrCat("function @", f.name, " takes ", f.params.size(), " arguments and ",
                                                   f.results.size(), " results, got ", args.size(), " and ",
                                                   results.size()));
  }
  auto check = [&](Buffer* buffer, const TensorType& want, absl::string_view what, size_t i) -> absl::Status {
    if (buffer == nullptr || dynamic_cast<CpuBuffer*>(buffer) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("function @", f.name, ": ", what, " ", i, " is not a buffer of the cpu backend"));
    }
    if (buffer->type() != want) {
      return absl::InvalidArgumentError(absl::StrCat("function @", f.name, ": ", what, " ", i, " must be ",
                                                     want.ToString(), ", got ", buffer->type().ToString()));
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (absl::Status s = check(args[i], f.type(f.params[i]), "argument", i); !s.ok()) return s;
  }
  std::vector<std::vector<int>> aliases(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (absl::Status s = check(results[i], f.type(f.results[i]), "result", i); !s.ok()) return s;
    for (size_t j = 0; j < i; ++j) {
      if (results[j] == results[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("function @", f.name, ": results ", j, " and ", i, " are the same buffer"));
      }
    }
    for (size_t j = 0; j < args.size(); ++j) {
      if (args[j] == results[i]) aliases[i].push_back(static_cast<int>(j));
    }
  }
  std::lock_guard<std::mutex> lock(pool_->run_mutex);
  Binding* binding = nullptr;
  for (const auto& b : bindings_) {
    if (b->aliases == aliases) binding = b.get();
  }
  if (binding == nullptr) {
    bindings_.push_back(MakeBinding(std::move(aliases)));
    binding = bindings_.back().get();
  }
  current_ = binding;
  if (scratch_.empty()) {
    for (int t = 0; t < pool_->pool.num_threads(); ++t) {
      scratch_.push_back(AllocateAligned(program_.scratch_bytes));
      if (scratch_.back() == nullptr) {
        for (uint8_t* p : scratch_) std::free(p);
        scratch_.clear();
        return absl::ResourceExhaustedError("out of memory for kernel scratch");
      }
    }
  }
  if (binding->arena_bytes > arena_capacity_) {
    std::free(arena_);
    arena_capacity_ = 0;
    arena_ = AllocateArena(binding->arena_bytes);
    if (arena_ == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("function @", f.name, ": out of memory for a ", binding->arena_bytes, "-byte arena"));
    }
    arena_capacity_ = binding->arena_bytes;
  }
  for (size_t s = 0; s < program_.storages.size(); ++s) {
    const Storage& st = program_.storages[s];
    if (st.kind == StorageKind::kParam) {
      storage_ptrs_[s] = static_cast<CpuBuffer*>(args[st.index])->data();
    } else if (st.kind == StorageKind::kArena && binding->offset[s] >= 0) {
      storage_ptrs_[s] = arena_ + binding->offset[s];
    }
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (binding->direct[i]) storage_ptrs_[program_.result_storage[i]] = static_cast<CpuBuffer*>(results[i])->data();
  }
  KernelContext ctx{storage_ptrs_.data(), &pool_->pool, scratch_.data()};
  {
    ThreadPool::SpinScope spin(pool_->pool);
    if (profile_level_ > 0) {
      for (size_t k = 0; k < program_.kernels.size(); ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        program_.kernels[k]->Run(ctx);
        kernel_seconds_[k] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      ++profiled_runs_;
    } else {
      for (const std::unique_ptr<Kernel>& k : program_.kernels) k->Run(ctx);
    }
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (binding->direct[i]) continue;
    const Storage& st = program_.storages[program_.result_storage[i]];
    std::memcpy(static_cast<CpuBuffer*>(results[i])->data(), storage_ptrs_[program_.result_storage[i]],
                static_cast<size_t>(st.bytes));
  }
  return absl::OkStatus();
}

CpuExecutableStats CpuExecutableImpl::stats() const {
  CpuExecutableStats s = program_.stats;
  s.arena_bytes = current_->arena_bytes;
  s.num_direct_results = static_cast<int>(std::count(current_->direct.begin(), current_->direct.end(), true));
  return s;
}

absl::Status CpuExecutableImpl::CheckMemoryPlan() const {
  return ::pcp::cpu::CheckMemoryPlan(current_->blocks, current_->arena_bytes);
}

std::string CpuExecutableImpl::DescribeSchedule() const {
  std::string out;
  for (size_t k = 0; k < program_.kernels.size(); ++k) {
    absl::StrAppend(&out, k, ": ", program_.kernels[k]->Describe(), "\n");
  }
  return out;
}

}  // namespace pcp::cpu
