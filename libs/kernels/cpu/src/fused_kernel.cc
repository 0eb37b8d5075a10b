#include "fused_kernel.h"

#include <algorithm>
#include <cstring>

#include "thread_pool.h"

namespace pcp::cpu {
namespace {

// Below this much work (elements x steps) a loop kernel runs on the calling thread alone:
// handing it to the pool would cost more than it saves.
constexpr int64_t kMinParallelWork = 1 << 15;

int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

}  // namespace

FusedKernel::FusedKernel(int64_t n, std::vector<FusedLoad> loads, std::vector<FusedOp> ops,
                         std::vector<FusedStore> stores, std::optional<ReduceRoot> reduce, int num_regs,
                         std::string description, int64_t row_length)
    : n_(n),
      row_length_(row_length),
      block_(row_length > 0 ? std::max<int64_t>(1, kBlock / row_length) * row_length : kBlock),
      loads_(std::move(loads)),
      ops_(std::move(ops)),
      stores_(std::move(stores)),
      reduce_(std::move(reduce)),
      num_regs_(num_regs),
      description_(std::move(description)) {
  kind = Kind::kFused;
  num_instructions = reduce_ ? 1 : 0;
  for (const FusedOp& op : ops_) num_instructions += op.nodes;
  // Access modes.
  for (FusedLoad& l : loads_) {
    l.access.layout = Simplify(l.access.layout);
    const Layout& s = l.access.layout;
    if (s.IsBroadcastScalar()) {
      l.mode = FusedLoad::Mode::kScalar;
    } else if (s.shape.size() == 1 && s.strides[0] == 1) {
      l.mode = FusedLoad::Mode::kContiguous;
    } else if (!reduce_ && !l.per_row && n_ >= block_ && s.shape.size() >= 2 && s.strides[0] == 0 &&
               block_ % (s.num_elements() / s.shape[0]) == 0) {
      // Blocks start at multiples of block_ (no reduction), so each block sees the same part.
      l.mode = FusedLoad::Mode::kPeriodic;
    } else {
      l.mode = FusedLoad::Mode::kStrided;
    }
  }
  // Scratch buffers by liveness over the op sequence: loads are defined before the first op
  // and scalar ones live for the whole task; stored registers and the reduction's input
  // live to the end of the block.
  const int end = static_cast<int>(ops_.size());
  std::vector<int> last_use(static_cast<size_t>(num_regs_), -1);
  for (int i = 0; i < end; ++i) {
    for (int s : ops_[i].src) {
      if (s >= 0) last_use[s] = std::max(last_use[s], i);
    }
  }
  for (const FusedStore& s : stores_) last_use[s.reg] = end;
  if (reduce_) last_use[reduce_->reg] = end;
  reg_buffer_.assign(static_cast<size_t>(num_regs_), -1);
  int num_buffers = 0;
  std::vector<int> free_buffers;
  auto take = [&]() {
    if (free_buffers.empty()) return num_buffers++;
    int b = free_buffers.back();
    free_buffers.pop_back();
    return b;
  };
  for (const FusedLoad& l : loads_) {
    if (l.mode != FusedLoad::Mode::kContiguous) reg_buffer_[l.reg] = take();
  }
  for (int i = 0; i < end; ++i) {
    reg_buffer_[ops_[i].dst] = take();
    for (int k = 0; k < kMaxOperands; ++k) {
      const int s = ops_[i].src[k];
      bool first = true;  // an op may name a register twice
      for (int j = 0; j < k; ++j) first &= ops_[i].src[j] != s;
      if (s < 0 || !first || last_use[s] != i || reg_buffer_[s] < 0) continue;
      bool invariant_load = false;  // filled once per task: never reused
      for (const FusedLoad& l : loads_) {
        invariant_load |= l.reg == s && (l.mode == FusedLoad::Mode::kScalar || l.mode == FusedLoad::Mode::kPeriodic);
      }
      if (!invariant_load) free_buffers.push_back(reg_buffer_[s]);
    }
    if (last_use[ops_[i].dst] < 0) free_buffers.push_back(reg_buffer_[ops_[i].dst]);  // dead
  }
  regs_bytes_ = RoundUp(static_cast<int64_t>(num_regs_) * static_cast<int64_t>(sizeof(void*)), 64);
  buffers_bytes_ = static_cast<int64_t>(num_buffers) * RegBytes();
  if (reduce_) PlanReduce();
  scratch_bytes_ = std::max(scratch_bytes_, regs_bytes_ + buffers_bytes_);

  // Storage use, for the memory plan and for placing results over arguments.
  // A load reads element i only for output element i if it is contiguous from the start of
  // its storage (or, with a single element, reads that element before the one store).
  auto same_index = [&](const FusedLoad& l) {
    return l.access.layout.offset == 0 && !l.per_row &&
           (l.mode == FusedLoad::Mode::kContiguous || (n_ == 1 && !reduce_));
  };
  std::vector<int> contiguous_only;
  for (const FusedLoad& l : loads_) {
    reads.push_back(l.access.storage);
    if (same_index(l)) contiguous_only.push_back(l.access.storage);
  }
  if (reduce_) reads.push_back(reduce_->init.storage);
  for (int s : contiguous_only) {
    bool all = true;
    for (const FusedLoad& l : loads_) {
      if (l.access.storage == s) all &= same_index(l);
    }
    if (reduce_ && reduce_->init.storage == s) all = false;
    if (all) same_index_reads.push_back(s);
  }
  for (const FusedStore& s : stores_) {
    writes.push_back(s.storage);
    if (s.row == 0) same_index_writes.push_back(s.storage);
  }
  if (reduce_) writes.push_back(reduce_->out_storage);
}

void** FusedKernel::SetUpThread(const KernelContext& ctx, int thread) {
  uint8_t* base = ctx.scratch[thread];
  void** regs = reinterpret_cast<void**>(base);
  if (thread_run_[static_cast<size_t>(thread)] == run_) return regs;
  thread_run_[static_cast<size_t>(thread)] = run_;
  uint8_t* buffers = base + regs_bytes_;
  for (int r = 0; r < num_regs_; ++r) {
    regs[r] = reg_buffer_[r] >= 0 ? buffers + reg_buffer_[r] * RegBytes() : nullptr;
  }
  const int64_t fill = std::min(n_, block_);
  for (const FusedLoad& l : loads_) {
    if (l.mode == FusedLoad::Mode::kPeriodic) {
      ReadLinear(ctx.storage[l.access.storage], l.access.layout, l.elem_size, 0, block_, regs[l.reg]);
    }
    if (l.mode != FusedLoad::Mode::kScalar) continue;
    const uint8_t* src = ctx.storage[l.access.storage] + l.access.layout.offset * l.elem_size;
    uint8_t* dst = static_cast<uint8_t*>(regs[l.reg]);
    switch (l.elem_size) {
      case 1: std::fill_n(dst, fill, *src); break;
      case 2: std::fill_n(reinterpret_cast<uint16_t*>(dst), fill, *reinterpret_cast<const uint16_t*>(src)); break;
      case 4: std::fill_n(reinterpret_cast<uint32_t*>(dst), fill, *reinterpret_cast<const uint32_t*>(src)); break;
      default: std::fill_n(reinterpret_cast<uint64_t*>(dst), fill, *reinterpret_cast<const uint64_t*>(src)); break;
    }
  }
  return regs;
}

void FusedKernel::Evaluate(const KernelContext& ctx, void** regs, int64_t start, int64_t n) const {
  for (const FusedLoad& l : loads_) {
    const Layout& layout = l.access.layout;
    // A per-row operand: elements [start / row, (start + n) / row) of its own index space.
    const int64_t s = l.per_row ? start / row_length_ : start, c = l.per_row ? n / row_length_ : n;
    if (l.mode == FusedLoad::Mode::kContiguous) {
      regs[l.reg] = ctx.storage[l.access.storage] + (layout.offset + s) * l.elem_size;
    } else if (l.mode == FusedLoad::Mode::kStrided) {
      ReadLinear(ctx.storage[l.access.storage], layout, l.elem_size, s, c, regs[l.reg]);
    }
  }
  for (size_t i = 0; i < stores_.size(); ++i) {
    if (direct_store_[i] && stores_[i].row == 0) {
      regs[stores_[i].reg] = ctx.storage[stores_[i].storage] + start * stores_[i].elem_size;
    }
  }
  for (const FusedOp& op : ops_) op.fn(op, regs, op.per_row ? n / row_length_ : n);
  for (size_t i = 0; i < stores_.size(); ++i) {
    const FusedStore& s = stores_[i];
    if (s.row > 0) {
      // One value per row, held so in its register.
      std::memcpy(ctx.storage[s.storage] + start / s.row * s.elem_size, regs[s.reg],
                  static_cast<size_t>(n / s.row * s.elem_size));
    } else if (!direct_store_[i]) {
      std::memcpy(ctx.storage[s.storage] + start * s.elem_size, regs[s.reg], static_cast<size_t>(n * s.elem_size));
    }
  }
}

void FusedKernel::Run(const KernelContext& ctx) {
  BeginRun(ctx);
  if (reduce_) {
    RunReduce(ctx);
  } else {
    RunElementwise(ctx);
  }
}

int64_t FusedKernel::work() const {
  // Work in IR instructions (an expression op counts its tree), as before expression ops.
  return n_ * static_cast<int64_t>(num_instructions + loads_.size() + stores_.size());
}

bool FusedKernel::small() const { return work() < kMinParallelWork; }

void FusedKernel::BeginRun(const KernelContext& ctx) {
  ++run_;
  if (thread_run_.size() < static_cast<size_t>(ctx.pool->num_threads())) {
    thread_run_.resize(static_cast<size_t>(ctx.pool->num_threads()), 0);
  }
  // An output placed over an input (an in-place update) must wait until the whole block
  // has been computed; any other output is written by its op directly.
  direct_store_.assign(stores_.size(), 1);
  for (size_t i = 0; i < stores_.size(); ++i) {
    const uint8_t* out = ctx.storage[stores_[i].storage];
    for (const FusedLoad& l : loads_) {
      if (ctx.storage[l.access.storage] == out) direct_store_[i] = 0;
    }
    if (reduce_ && ctx.storage[reduce_->init.storage] == out) direct_store_[i] = 0;
  }
}

void FusedKernel::RunBlocks(const KernelContext& ctx, int thread, int64_t b0, int64_t b1) {
  void** regs = SetUpThread(ctx, thread);
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t start = b * block_;
    Evaluate(ctx, regs, start, std::min(block_, n_ - start));
  }
}

void FusedKernel::RunElementwise(const KernelContext& ctx) {
  if (n_ == 0) return;
  const int64_t blocks = (n_ + block_ - 1) / block_;
  const int threads = ctx.pool->num_threads();
  const int64_t units = (threads == 1 || small()) ? 1 : std::min<int64_t>(blocks, kUnitsPerThread * threads);
  auto run = [&](int64_t unit, int thread) {
    RunBlocks(ctx, thread, blocks * unit / units, blocks * (unit + 1) / units);
  };
  if (units == 1) {
    run(0, 0);
  } else {
    ctx.pool->ParallelFor(units, run);
  }
}

}  // namespace pcp::cpu
