#include "dot_kernel.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gemm.h"
#include "thread_pool.h"

namespace pcp::cpu {
namespace {

// Below this many flops a product is one sgemm call.
constexpr int64_t kMinParallelFlops = 1 << 18;
// A larger product is split into a power of two of row (or column) blocks, so that 2, 4, 8
// or 16 threads share them evenly, up to this many blocks...
constexpr int64_t kTargetBlocks = 16;
// ...but no block is thinner than this: each call packs the other operand again, and 64-row
// blocks cost a single thread a visible share of its speed at the GPT's shapes (768 rows).
constexpr int64_t kMinBlock = 128;
// A product too narrow for two such blocks (128-255 rows and columns, e.g. the GPT's
// 128 x 128 weight gradients with K = 768) still gets two halves of at least this many:
// packing the other operand twice costs far less than leaving the other threads idle.
constexpr int64_t kMinHalf = 64;
// Up to this depth a bias is written into C first and sgemm called with beta = 1, which
// saves OpenBLAS's pass clearing C and the separate add over the block. Bitwise the same as
// (A·B) + bias only if OpenBLAS adds C once, to the whole sum: its kernels store
// alpha * acc + C (one rounding, alpha = 1), and it splits K into blocks of GEMM_Q (and adds
// each block's sum to C) only above GEMM_Q: 128 on OpenBLAS's smallest x86 settings (Prescott,
// generic), 320 on Cooperlake. Deeper products add the bias after the call.
constexpr int64_t kMaxBiasFirstDepth = 128;
// The largest operand the own sgemm packs once for all blocks of a product (UseOwnGemm), a
// temporary in the arena: GPT-2 small's 768 x 3072 weights (9.4 MB) and its weight gradients'
// activations (768 x 8192, 25 MB) fit; a 50k-vocabulary lm head's 154 MB does not (its blocks
// each pack their own part, as with sgemm, rather than the arena growing by that much).
constexpr int64_t kMaxSharedPackBytes = int64_t{32} << 20;

// Merges dimensions (sizes, strides) into one (size, stride) if they are row-major with
// respect to each other after dropping size-1 dimensions.
bool MergeDims(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t* size, int64_t* stride) {
  *size = 1;
  *stride = 1;
  bool first = true;
  int64_t expected = 0;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (first) {
      *stride = strides[i];
      first = false;
    } else if (strides[i] != expected) {
      return false;
    }
    *size *= sizes[i];
    expected = strides[i] * sizes[i];
  }
  return true;
}

// Whether a rows x cols matrix with these strides is row-major (no transpose) or
// column-major (transpose) for BLAS, and its leading dimension.
bool FitMatrix(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool* trans, int64_t* ld) {
  if (rows <= 1 && cols <= 1) {
    *trans = false;
    *ld = 1;
    return true;
  }
  if (rows <= 1) {  // one row: row-major if contiguous, else column-major with ld = cs
    *trans = cs != 1;
    *ld = cs == 1 ? cols : cs;
    return cs >= 1;
  }
  if (cols <= 1) {  // one column
    *trans = rs == 1;
    *ld = rs == 1 ? rows : rs;
    return rs >= 1;
  }
  if (cs == 1 && rs >= cols) {
    *trans = false;
    *ld = rs;
    return true;
  }
  if (rs == 1 && cs >= rows) {
    *trans = true;
    *ld = cs;
    return true;
  }
  return false;
}

}  // namespace

DotKernel::DotKernel(Access lhs, Access rhs, const DotDims& dims, const Layout& out_layout, int out_storage,
                     std::string description)
    : out_storage_(out_storage), description_(std::move(description)) {
  kind = Kind::kDot;
  num_instructions = 1;
  operands_[0].access = std::move(lhs);
  operands_[1].access = std::move(rhs);
  const Shape& ls = operands_[0].access.layout.shape;
  const Shape& rs = operands_[1].access.layout.shape;
  auto free_dims = [](int64_t rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contract.begin(), contract.end(), d) == contract.end()) {
        out.push_back(d);
      }
    }
    return out;
  };
  const std::vector<int64_t> lhs_free = free_dims(static_cast<int64_t>(ls.size()), dims.lhs_batch, dims.lhs_contract);
  const std::vector<int64_t> rhs_free = free_dims(static_cast<int64_t>(rs.size()), dims.rhs_batch, dims.rhs_contract);
  std::vector<int64_t> batch_sizes;
  for (int64_t d : dims.lhs_batch) {
    batch_sizes.push_back(ls[d]);
    batch_ *= ls[d];
  }
  m_ = n_ = k_ = 1;
  for (int64_t d : lhs_free) m_ *= ls[d];
  for (int64_t d : rhs_free) n_ *= rs[d];
  for (int64_t d : dims.lhs_contract) k_ *= ls[d];
  PlanOperand(0, dims.lhs_batch, lhs_free, dims.lhs_contract, batch_sizes);
  PlanOperand(1, dims.rhs_batch, dims.rhs_contract, rhs_free, batch_sizes);

  // The result [batch..., lhs free..., rhs free...] through `out_layout`: rows and columns
  // must merge, with unit column stride.
  const size_t nb = dims.lhs_batch.size(), nm = lhs_free.size();
  const Shape& os = out_layout.shape;
  std::vector<int64_t> msz(os.begin() + nb, os.begin() + nb + nm),
      mst(out_layout.strides.begin() + nb, out_layout.strides.begin() + nb + nm);
  std::vector<int64_t> nsz(os.begin() + nb + nm, os.end()),
      nst(out_layout.strides.begin() + nb + nm, out_layout.strides.end());
  int64_t merged = 0, row_stride = 0, col_stride = 0;
  output_ok_ = MergeDims(msz, mst, &merged, &row_stride) && MergeDims(nsz, nst, &merged, &col_stride) &&
               (n_ <= 1 || col_stride == 1) && (m_ <= 1 || row_stride >= n_);
  ldc_ = m_ <= 1 ? std::max<int64_t>(n_, 1) : row_stride;
  out_offsets_.assign(static_cast<size_t>(batch_), out_layout.offset);
  for (int64_t b = 0; b < batch_; ++b) {
    int64_t rest = b;
    for (size_t i = nb; i-- > 0;) {
      out_offsets_[b] += (rest % os[i]) * out_layout.strides[i];
      rest /= os[i];
    }
  }

  // Each product is split into `parts_` row (or column) blocks, and how depends on the shape
  // alone, never on the thread count. Every output element is then computed by the same
  // sgemm call (same sizes, same operands) with 1 thread or N, and single-threaded OpenBLAS
  // computes a given call the same way each time, on any CPU. Blocks sized by the thread
  // count would change the calls' sizes, and OpenBLAS chooses code paths by size (its
  // "direct" and small-matrix kernels, edge kernels, K blocking), which sum in another order:
  // results would differ in the last bits between 1 and 2 threads.
  split_rows_ = m_ >= n_;
  const int64_t split_size = split_rows_ ? m_ : n_;
  if (flops() >= kMinParallelFlops && batch_ < kTargetBlocks) {
    int64_t most = std::min((kTargetBlocks + batch_ - 1) / batch_, split_size / kMinBlock);
    if (most < 2) most = std::min<int64_t>(2, split_size / kMinHalf);
    while (parts_ * 2 <= most) parts_ *= 2;
  }
  // Blocks of a multiple of 16 rows/columns, so each matches sgemm's register tiles.
  const int64_t chunk = (split_size + parts_ - 1) / parts_;
  part_size_ = parts_ == 1 ? split_size : (chunk + 15) / 16 * 16;

  for (const Operand& o : operands_) reads.push_back(o.access.storage);
  writes.push_back(out_storage_);
}

bool DotKernel::Parallel() const { return flops() >= kMinParallelFlops && batch_ * parts_ > 1; }

void DotKernel::UnitBlock(int64_t unit, int64_t* bi, int64_t* m0, int64_t* mlen, int64_t* n0, int64_t* nlen) const {
  *bi = unit / parts_;
  const int64_t part = unit % parts_;
  const int64_t split_size = split_rows_ ? m_ : n_;
  const int64_t s0 = std::min(split_size, part * part_size_), s1 = std::min(split_size, s0 + part_size_);
  *m0 = split_rows_ ? s0 : 0;
  *mlen = split_rows_ ? s1 - s0 : m_;
  *n0 = split_rows_ ? 0 : s0;
  *nlen = split_rows_ ? n_ : s1 - s0;
}

bool DotKernel::UnitElements(int64_t unit, int64_t* e0, int64_t* e1) const {
  int64_t bi, m0, mlen, n0, nlen;
  UnitBlock(unit, &bi, &m0, &mlen, &n0, &nlen);
  if (mlen <= 0 || nlen <= 0) return false;
  *e0 = (bi * m_ + m0) * n_;
  *e1 = *e0 + mlen * n_;
  return true;
}

void DotKernel::UnitLoopBlocks(int64_t unit, int64_t* b0, int64_t* b1) const {
  int64_t e0, e1;
  if (!UnitElements(unit, &e0, &e1)) {
    *b0 = *b1 = 0;
    return;
  }
  const int64_t block = epilogue_->block();
  *b0 = e0 / block;
  *b1 = (e1 + block - 1) / block;
}

void DotKernel::RunSharingLoops(const KernelContext& ctx, absl::FunctionRef<void(int64_t, int)> product) {
  const int64_t units = batch_ * parts_;
  if (next_block_ == nullptr) {
    next_block_ = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(units));
    written_ = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(units));
  }
  for (int64_t u = 0; u < units; ++u) {
    int64_t b0, b1;
    UnitLoopBlocks(u, &b0, &b1);
    next_block_[u].store(b0, std::memory_order_relaxed);
    written_[u].store(false, std::memory_order_relaxed);
  }
  unclaimed_.store(static_cast<uint64_t>(units) << 32, std::memory_order_relaxed);
  // Loop blocks are claimed a few at a time: ~4096 elements, a few microseconds of work.
  const int64_t claim = std::max<int64_t>(1, 4096 / epilogue_->block());
  auto run_loop = [&](int64_t u, int thread) {
    int64_t b1, end;
    UnitLoopBlocks(u, &b1, &end);
    for (;;) {
      const int64_t b = next_block_[u].fetch_add(claim, std::memory_order_relaxed);
      if (b >= end) return;
      epilogue_->RunBlocks(ctx, thread, b, std::min(end, b + claim));
    }
  };
  // One pool unit per thread; each claims products (the caller from the first rows, the
  // others from the last, as ThreadPool hands out units) and runs each one's loop right after
  // it; with no product left, it helps with the loops of products already written.
  ctx.pool->ParallelFor(ctx.pool->num_threads(), [&](int64_t, int thread) {
    for (;;) {
      uint64_t word = unclaimed_.load(std::memory_order_relaxed), next;
      int64_t u;
      do {
        const uint64_t lo = word & 0xffffffffu, hi = word >> 32;
        if (lo >= hi) {
          u = -1;
          break;
        }
        u = static_cast<int64_t>(thread == 0 ? lo : hi - 1);
        next = thread == 0 ? ((hi << 32) | (lo + 1)) : (((hi - 1) << 32) | lo);
      } while (!unclaimed_.compare_exchange_weak(word, next, std::memory_order_relaxed));
      if (u < 0) break;
      product(u, thread);
      written_[u].store(true, std::memory_order_release);
      run_loop(u, thread);
    }
    // Then the loops of products other threads write (nearest to this thread's rows first),
    // as each product is written: every product is claimed, so each one is being computed.
    for (int spins = 0;; ++spins) {
      bool left = false;
      for (int64_t i = 0; i < units; ++i) {
        const int64_t u = thread == 0 ? i : units - 1 - i;
        int64_t b0, end;
        UnitLoopBlocks(u, &b0, &end);
        if (next_block_[u].load(std::memory_order_relaxed) >= end) continue;
        if (written_[u].load(std::memory_order_acquire)) {
          run_loop(u, thread);
          spins = 0;
        } else {
          left = true;
        }
      }
      if (!left) break;
      if (spins > (1 << 12)) std::this_thread::yield();
    }
  });
}

bool DotKernel::CanTakeEpilogue(const FusedKernel& loop) const {
  if (epilogue_ != nullptr || !loop.RunsInBlocks() || loop.n() != batch_ * m_ * n_ || loop.n() == 0) return false;
  // The product's output in its own row-major order, so that each unit's block (whole rows of
  // one batch element) is one range of the loop's index space.
  if (!output_ok_ || ldc_ != n_ || (!split_rows_ && parts_ > 1)) return false;
  for (int64_t b = 0; b < batch_; ++b) {
    if (out_offsets_[b] != b * m_ * n_) return false;
  }
  // Parallel as the product, or a loop that would run on one thread anyway.
  if (!Parallel() && !loop.small()) return false;
  // The loop reads the product only element i for element i.
  for (const FusedLoad& l : loop.loads()) {
    if (l.access.storage != out_storage_) continue;
    const Layout& v = l.access.layout;
    if (l.per_row || l.mode != FusedLoad::Mode::kContiguous || v.offset != 0) return false;
  }
  for (int o = 0; o < 2; ++o) {
    if (operands_[o].pack_storage >= 0 && std::count(loop.reads.begin(), loop.reads.end(), operands_[o].pack_storage))
      return false;
  }
  // Each unit's range starts at a multiple of the loop's block and ends at one or at the end.
  for (int64_t u = 0; u < batch_ * parts_; ++u) {
    int64_t e0, e1;
    if (!UnitElements(u, &e0, &e1)) continue;
    if (e0 % loop.block() != 0 || (e1 % loop.block() != 0 && e1 != loop.n())) return false;
  }
  return true;
}

void DotKernel::SetEpilogue(std::unique_ptr<FusedKernel> loop) {
  for (int s : loop->reads) {
    if (s != out_storage_) reads.push_back(s);
  }
  // A storage sgemm reads must never share memory with one this kernel writes.
  std::vector<int> sgemm_reads = {operands_[0].access.storage, operands_[1].access.storage};
  if (bias_storage_ >= 0) sgemm_reads.push_back(bias_storage_);
  for (int s : loop->same_index_reads) {
    if (std::count(sgemm_reads.begin(), sgemm_reads.end(), s) == 0 && s != out_storage_) same_index_reads.push_back(s);
  }
  for (int s : loop->writes) writes.push_back(s);
  same_index_writes = loop->same_index_writes;
  num_instructions += loop->num_instructions;
  description_ = absl::StrCat(description_, " + epilogue ", loop->Describe());
  epilogue_ = std::move(loop);
}

void DotKernel::PlanOperand(int o, const std::vector<int64_t>& batch_dims, const std::vector<int64_t>& row_dims,
                            const std::vector<int64_t>& col_dims, const std::vector<int64_t>& batch_sizes) {
  Operand& op = operands_[o];
  const Layout& l = op.access.layout;
  const int64_t rows = o == 0 ? m_ : k_, cols = o == 0 ? k_ : n_;
  std::vector<int64_t> perm = batch_dims;
  perm.insert(perm.end(), row_dims.begin(), row_dims.end());
  perm.insert(perm.end(), col_dims.begin(), col_dims.end());
  op.pack_view = TransposeLayout(l, perm);

  auto sizes_strides = [&](const std::vector<int64_t>& ds, std::vector<int64_t>* sz, std::vector<int64_t>* st) {
    for (int64_t d : ds) {
      sz->push_back(l.shape[d]);
      st->push_back(l.strides[d]);
    }
  };
  std::vector<int64_t> rsz, rst, csz, cst;
  sizes_strides(row_dims, &rsz, &rst);
  sizes_strides(col_dims, &csz, &cst);
  int64_t merged_rows, merged_cols;
  bool fits = MergeDims(rsz, rst, &merged_rows, &op.row_stride) && MergeDims(csz, cst, &merged_cols, &op.col_stride) &&
              FitMatrix(rows, cols, op.row_stride, op.col_stride, &op.trans, &op.ld);
  std::vector<int64_t> batch_strides;
  for (int64_t d : batch_dims) batch_strides.push_back(l.strides[d]);
  int64_t base = l.offset;
  if (!fits) {
    // Pack into [batch, rows, cols], row-major.
    op.pack_bytes = std::max<int64_t>(1, batch_ * rows * cols) * 4;
    op.row_stride = cols;
    op.col_stride = 1;
    FitMatrix(rows, cols, cols, 1, &op.trans, &op.ld);
    int64_t stride = rows * cols;
    for (size_t i = batch_strides.size(); i-- > 0;) {
      batch_strides[i] = stride;
      stride *= batch_sizes[i];
    }
    base = 0;
  }
  // Offsets of every batch element, in row-major order of the batch dimensions.
  op.batch_offsets.assign(static_cast<size_t>(batch_), base);
  for (int64_t b = 0; b < batch_; ++b) {
    int64_t rest = b;
    for (size_t i = batch_sizes.size(); i-- > 0;) {
      op.batch_offsets[b] += (rest % batch_sizes[i]) * batch_strides[i];
      rest /= batch_sizes[i];
    }
  }
}

void DotKernel::AddBias(int storage, int64_t offset) {
  bias_storage_ = storage;
  bias_offset_ = offset;
  reads.push_back(storage);
}

void DotKernel::UseOwnGemm() {
  own_gemm_ = true;
  if (batch_ != 1 || parts_ < 2) return;
  const int64_t bytes = 4 * (split_rows_ ? PackedBFloats(k_, n_) : PackedAFloats(m_, k_));
  if (bytes <= kMaxSharedPackBytes) shared_pack_bytes_ = bytes;
}

int64_t DotKernel::EpilogueScratchBytes() const {
  return epilogue_ != nullptr ? (epilogue_->scratch_bytes() + 63) / 64 * 64 : 0;
}

int64_t DotKernel::scratch_bytes() const {
  const int64_t split = split_rows_ ? n_ : std::min(n_, part_size_);
  return EpilogueScratchBytes() + (own_gemm_ ? 4 * GemmWorkspaceFloats(split) : 0);
}

void DotKernel::set_shared_pack_storage(int storage) {
  shared_pack_storage_ = storage;
  writes.push_back(storage);
}

int DotKernel::PackShared(const KernelContext& ctx, const float* const base[2], const float** packed) {
  if (shared_pack_bytes_ == 0) return -1;
  const int o = split_rows_ ? 1 : 0;
  const Operand& op = operands_[o];
  float* out = reinterpret_cast<float*>(ctx.storage[shared_pack_storage_]);
  const MatrixView view{base[o] + op.batch_offsets[0], op.row_stride, op.col_stride};
  const int64_t panels = o == 1 ? PackedBPanels(n_) : PackedAPanels(m_);
  const int threads = Parallel() ? ctx.pool->num_threads() : 1;
  const int64_t pieces = std::min<int64_t>(panels, 4 * threads);
  auto pack = [&](int64_t piece, int) {
    const int64_t q0 = panels * piece / pieces, q1 = panels * (piece + 1) / pieces;
    if (o == 1) {
      PackBPanels(view, k_, n_, q0, q1, out);
    } else {
      PackAPanels(view, m_, k_, q0, q1, out);
    }
  };
  if (threads > 1) {
    ctx.pool->ParallelFor(pieces, pack);
  } else {
    for (int64_t p = 0; p < pieces; ++p) pack(p, 0);
  }
  *packed = out;
  return o;
}

void DotKernel::set_pack_storage(int operand, int storage) {
  operands_[operand].pack_storage = storage;
  writes.push_back(storage);
}

void DotKernel::Run(const KernelContext& ctx) {
  float* out = reinterpret_cast<float*>(ctx.storage[out_storage_]);
  if (batch_ * m_ * n_ == 0) return;
  if (epilogue_ != nullptr) epilogue_->BeginRun(ctx);
  if (k_ == 0) {
    const float* bias =
        bias_storage_ < 0 ? nullptr : reinterpret_cast<const float*>(ctx.storage[bias_storage_]) + bias_offset_;
    for (int64_t bi = 0; bi < batch_; ++bi) {
      for (int64_t i = 0; i < m_; ++i) {
        float* c = out + out_offsets_[bi] + i * ldc_;
        std::fill_n(c, n_, 0.0f);
        for (int64_t j = 0; bias != nullptr && j < n_; ++j) c[j] += bias[j];
      }
    }
    if (epilogue_ != nullptr) epilogue_->RunBlocks(ctx, 0, 0, epilogue_->num_blocks());
    return;
  }
  const float* base[2];
  for (int o = 0; o < 2; ++o) {
    Operand& op = operands_[o];
    const uint8_t* src = ctx.storage[op.access.storage];
    if (op.pack_bytes > 0) {
      uint8_t* dst = ctx.storage[op.pack_storage];
      StridedCopy(dst, Layout::Contiguous(op.pack_view.shape), src, op.pack_view, 4, ctx.pool);
      base[o] = reinterpret_cast<const float*>(dst);
    } else {
      base[o] = reinterpret_cast<const float*>(src);
    }
  }
  const Operand& a = operands_[0];
  const Operand& b = operands_[1];
  const float* bias =
      bias_storage_ < 0 ? nullptr : reinterpret_cast<const float*>(ctx.storage[bias_storage_]) + bias_offset_;
  const bool bias_first = bias != nullptr && k_ <= kMaxBiasFirstDepth;
  const float* packed = nullptr;
  const int shared = own_gemm_ ? PackShared(ctx, base, &packed) : -1;
  const int64_t workspace_offset = EpilogueScratchBytes();
  auto run = [&](int64_t unit, int thread) {
    int64_t bi, m0, mlen, n0, nlen;
    UnitBlock(unit, &bi, &m0, &mlen, &n0, &nlen);
    if (mlen <= 0 || nlen <= 0) return;
    const float* pa = base[0] + a.batch_offsets[bi] + m0 * a.row_stride;
    const float* pb = base[1] + b.batch_offsets[bi] + n0 * b.col_stride;
    float* pc = out + out_offsets_[bi] + m0 * ldc_ + n0;
    if (own_gemm_) {
      // A shared packed operand is read whole: the lhs of a product split by columns (m0 = 0), the
      // rhs of one split by rows (n0 = 0).
      Gemm(mlen, nlen, k_, GemmOperand{{pa, a.row_stride, a.col_stride}, shared == 0 ? packed : nullptr},
           GemmOperand{{pb, b.row_stride, b.col_stride}, shared == 1 ? packed : nullptr},
           bias != nullptr ? bias + n0 : nullptr, pc, ldc_,
           reinterpret_cast<float*>(ctx.scratch[thread] + workspace_offset));
      return;
    }
    float beta = 0.0f;
    if (bias_first) {
      for (int64_t i = 0; i < mlen; ++i) std::memcpy(pc + i * ldc_, bias + n0, static_cast<size_t>(nlen) * 4);
      beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, a.trans ? CblasTrans : CblasNoTrans, b.trans ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(mlen), static_cast<blasint>(nlen), static_cast<blasint>(k_), 1.0f, pa,
                static_cast<blasint>(a.ld), pb, static_cast<blasint>(b.ld), beta, pc, static_cast<blasint>(ldc_));
    if (bias != nullptr && !bias_first) {
      const float* __restrict row = bias + n0;
      for (int64_t i = 0; i < mlen; ++i) {
        float* __restrict c = pc + i * ldc_;
        for (int64_t j = 0; j < nlen; ++j) c[j] += row[j];
      }
    }
  };
  const int64_t units = batch_ * parts_;
  if (ctx.pool->num_threads() > 1 && Parallel()) {
    if (epilogue_ != nullptr) {
      RunSharingLoops(ctx, run);
    } else {
      ctx.pool->ParallelFor(units, run);
    }
  } else {
    // On one thread the loop runs after the whole product, as a kernel of its own would: after
    // each block it timed slower (1-2 % of the GPT step), its reads and writes evicting the
    // packed weights that the next block's sgemm call reads again.
    for (int64_t u = 0; u < units; ++u) run(u, 0);
    if (epilogue_ != nullptr) epilogue_->RunBlocks(ctx, 0, 0, epilogue_->num_blocks());
  }
}

}  // namespace pcp::cpu
