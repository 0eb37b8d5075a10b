// The reduction that may end a fused loop kernel. The input is viewed as [a, r, c] with r
// reduced (trailing reductions have c == 1, leading ones a == 1); other patterns take a
// slower general path. Work is split over output rows or column chunks, and over chunks
// of r when there are too few outputs to keep the threads busy; all chunk boundaries
// depend on the shape only, so every thread count adds in the same order.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "fused_kernel.h"
#include "thread_pool.h"
#include "vector_math.h"

namespace pcp::cpu {
namespace {

constexpr int64_t kMinParallelWork = 1 << 15;
constexpr int64_t kChunkElements = 16 * kBlock;  // input elements per split-r chunk
constexpr int64_t kFewOutputs = 8;               // split r when there are fewer output units

template <typename T, ReduceKind K>
struct Reducer {
  static T Identity() {
    if constexpr (K == ReduceKind::kSum) {
      return T{0};
    } else if constexpr (std::is_floating_point_v<T>) {
      return -std::numeric_limits<T>::infinity();
    } else {
      return std::numeric_limits<T>::min();
    }
  }
  static T Combine(T a, T b) {
    if constexpr (K == ReduceKind::kSum) {
      if constexpr (std::is_floating_point_v<T>) {
        return a + b;
      } else {
        using U = std::make_unsigned_t<T>;  // wraps like the interpreter
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      return MaxF(a, b);
    } else {
      return a > b ? a : b;
    }
  }
  // Reduces x[0, n) with 16 interleaved accumulators (vectorisable), combined as a tree.
  static T Row(const T* x, int64_t n) {
    if constexpr (std::is_same_v<T, float>) return RowF32(x, n);
    T lanes[16];
    for (T& l : lanes) l = Identity();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      for (int j = 0; j < 16; ++j) lanes[j] = Combine(lanes[j], x[i + j]);
    }
    for (int j = 0; i < n; ++i, ++j) lanes[j] = Combine(lanes[j], x[i]);
    for (int w = 8; w >= 1; w /= 2) {
      for (int j = 0; j < w; ++j) lanes[j] = Combine(lanes[j], lanes[j + w]);
    }
    return lanes[0];
  }
  // Row for f32, the same order in two 8-float registers: lanes 0-7 and 8-15, the tree's
  // lanes[j] = Combine(lanes[j], lanes[j + w]) as whole-register ops on a shuffled copy (the
  // unused lanes compute values nobody reads). The same bits as the scalar loop above, without
  // its scalar, branching last steps (a row of 64: most of the row's time).
  static float RowF32(const float* x, int64_t n) {
    auto combine = [](F32x8 a, F32x8 b) {
      if constexpr (K == ReduceKind::kSum) {
        return a + b;
      } else {
        return MaxF(a, b);
      }
    };
    auto load = [](const float* p) {
      F32x8 v;
      std::memcpy(&v, p, sizeof v);
      return v;
    };
    const F32x8 identity = F32x8{} + Identity();
    F32x8 lo = identity, hi = identity;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      lo = combine(lo, load(x + i));
      hi = combine(hi, load(x + i + 8));
    }
    if (i < n) {  // the last n % 16 values, into lanes 0, 1, ...
      float lanes[16];
      std::memcpy(lanes, &lo, sizeof lo);
      std::memcpy(lanes + 8, &hi, sizeof hi);
      for (int j = 0; i < n; ++i, ++j) lanes[j] = Combine(lanes[j], x[i]);
      lo = load(lanes);
      hi = load(lanes + 8);
    }
    lo = combine(lo, hi);
    // __builtin_shufflevector, not GCC's own vector-shuffle builtin: GCC 12 and clang both accept it
    // (scripts/clang-check.sh keeps it that way).
    lo = combine(lo, __builtin_shufflevector(lo, lo, 4, 5, 6, 7, 4, 5, 6, 7));
    lo = combine(lo, __builtin_shufflevector(lo, lo, 2, 3, 2, 3, 2, 3, 2, 3));
    lo = combine(lo, __builtin_shufflevector(lo, lo, 1, 1, 1, 1, 1, 1, 1, 1));
    return lo[0];
  }
  // A row as the reduce kernel reduces it (RunReduceT, c == 1): whole if it fits a block,
  // else its kBlock-long pieces' Rows combined in turn, starting from the identity.
  static T LongRow(const T* x, int64_t n) {
    if (n <= kBlock) return Row(x, n);
    T partial = Identity();
    for (int64_t s = 0; s < n; s += kBlock) partial = Combine(partial, Row(x + s, std::min(kBlock, n - s)));
    return partial;
  }
  static void Accumulate(T* __restrict acc, const T* x, int64_t n) {
    for (int64_t j = 0; j < n; ++j) acc[j] = Combine(acc[j], x[j]);
  }
};

template <ReduceKind K>
void RowReduceLoop(const FusedOp& op, void* const* regs, int64_t n) {
  using R = Reducer<float, K>;
  float* __restrict d = static_cast<float*>(regs[op.dst]);
  const float* x = static_cast<const float*>(regs[op.src[0]]);
  const float init = static_cast<const float*>(regs[op.src[1]])[0];
  for (int64_t r = 0; r * op.row < n; ++r) d[r] = R::Combine(init, R::LongRow(x + r * op.row, op.row));
}

template <typename T>
void RowExpandLoop(const FusedOp& op, void* const* regs, int64_t n) {
  T* __restrict d = static_cast<T*>(regs[op.dst]);
  const T* x = static_cast<const T*>(regs[op.src[0]]);
  for (int64_t r = 0; r * op.row < n; ++r) std::fill(d + r * op.row, d + (r + 1) * op.row, x[r]);
}

}  // namespace

ElementwiseFn GetRowExpandFn(int64_t elem_size) {
  switch (elem_size) {
    case 1: return &RowExpandLoop<uint8_t>;
    case 2: return &RowExpandLoop<uint16_t>;
    case 4: return &RowExpandLoop<uint32_t>;
    default: return &RowExpandLoop<uint64_t>;
  }
}

ElementwiseFn GetRowReduceFn(ReduceKind kind) {
  return kind == ReduceKind::kSum ? &RowReduceLoop<ReduceKind::kSum> : &RowReduceLoop<ReduceKind::kMax>;
}

void FusedKernel::PlanReduce() {
  const ReduceRoot& red = *reduce_;
  ReducePlan& p = plan_;
  // Merge the input's dimensions into alternating kept / reduced runs.
  std::vector<int64_t> sizes;
  std::vector<bool> reduced;
  bool empty = false;
  for (size_t d = 0; d < red.input_shape.size(); ++d) {
    const int64_t size = red.input_shape[d];
    empty |= size == 0;
    const bool is_reduced = std::find(red.dims.begin(), red.dims.end(), static_cast<int64_t>(d)) != red.dims.end();
    if (size == 1) continue;
    if (!sizes.empty() && reduced.back() == is_reduced) {
      sizes.back() *= size;
    } else {
      sizes.push_back(size);
      reduced.push_back(is_reduced);
    }
  }
  int runs = 0;
  for (bool r : reduced) runs += r ? 1 : 0;
  if (empty) {
    // Nothing to read; every output is the init value.
    int64_t outputs = 1;
    for (size_t d = 0; d < red.input_shape.size(); ++d) {
      if (std::find(red.dims.begin(), red.dims.end(), static_cast<int64_t>(d)) == red.dims.end()) {
        outputs *= red.input_shape[d];
      }
    }
    p.a = outputs;
    p.r = 0;
    p.c = 1;
    return;
  }
  if (runs > 1) {
    p.general = true;
    p.shape = sizes;
    p.out_strides.assign(sizes.size(), 0);
    int64_t stride = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
      if (!reduced[d]) {
        p.out_strides[d] = stride;
        stride *= sizes[d];
      }
    }
    return;
  }
  size_t d = 0;
  p.a = p.r = p.c = 1;
  for (; d < sizes.size() && !reduced[d]; ++d) p.a *= sizes[d];
  for (; d < sizes.size() && reduced[d]; ++d) p.r *= sizes[d];
  for (; d < sizes.size(); ++d) p.c *= sizes[d];
  if (p.c == 1) {
    p.rows_per_block = p.r <= kBlock ? kBlock / p.r : 0;
    if (p.a < kFewOutputs && p.r > kChunkElements) {
      p.r_chunk = kChunkElements;
      p.num_r_chunks = (p.r + p.r_chunk - 1) / p.r_chunk;
    }
  } else {
    p.c_chunk = std::min(p.c, kBlock);
    p.num_c_chunks = (p.c + p.c_chunk - 1) / p.c_chunk;
    p.batch_rows = p.num_c_chunks == 1 && p.c <= kBlock / 2;
    if (p.a * p.num_c_chunks < kFewOutputs && p.r * p.c > kChunkElements) {
      p.r_chunk = std::max<int64_t>(1, kChunkElements / p.c);
      p.num_r_chunks = (p.r + p.r_chunk - 1) / p.r_chunk;
    }
  }
  if (p.num_r_chunks > 1) {
    partials_.resize(static_cast<size_t>(p.num_r_chunks * p.a * p.c * 8));
  } else {
    p.r_chunk = p.r;
  }
  scratch_bytes_ = regs_bytes_ + buffers_bytes_ + kRegBytes;  // + accumulators (c > 1)
}

void FusedKernel::RunReduce(const KernelContext& ctx) {
  const bool sum = reduce_->kind == ReduceKind::kSum;
  switch (reduce_->dtype) {
    case DType::kF32: return sum ? RunReduceT<float, ReduceKind::kSum>(ctx) : RunReduceT<float, ReduceKind::kMax>(ctx);
    case DType::kI32:
      return sum ? RunReduceT<int32_t, ReduceKind::kSum>(ctx) : RunReduceT<int32_t, ReduceKind::kMax>(ctx);
    default: return sum ? RunReduceT<int64_t, ReduceKind::kSum>(ctx) : RunReduceT<int64_t, ReduceKind::kMax>(ctx);
  }
}

template <typename T, ReduceKind K>
void FusedKernel::RunReduceT(const KernelContext& ctx) {
  using R = Reducer<T, K>;
  const ReducePlan& p = plan_;
  const ReduceRoot& red = *reduce_;
  const T init = reinterpret_cast<const T*>(ctx.storage[red.init.storage])[red.init.layout.offset];
  T* out = reinterpret_cast<T*>(ctx.storage[red.out_storage]);
  const int reg = red.reg;

  if (p.general) {
    // Walk every input element with its output offset; one thread, in input order.
    const int64_t outputs = [&] {
      int64_t o = 1;
      for (size_t d = 0; d < p.shape.size(); ++d) o *= p.out_strides[d] != 0 ? p.shape[d] : 1;
      return o;
    }();
    std::fill(out, out + outputs, init);
    void** regs = SetUpThread(ctx, 0);
    std::vector<int64_t> index(p.shape.size(), 0);
    int64_t offset = 0;
    for (int64_t start = 0; start < n_; start += kBlock) {
      const int64_t len = std::min(kBlock, n_ - start);
      Evaluate(ctx, regs, start, len);
      const T* x = static_cast<const T*>(regs[reg]);
      for (int64_t i = 0; i < len; ++i) {
        out[offset] = R::Combine(out[offset], x[i]);
        for (size_t d = p.shape.size(); d-- > 0;) {
          offset += p.out_strides[d];
          if (++index[d] < p.shape[d]) break;
          offset -= p.out_strides[d] * p.shape[d];
          index[d] = 0;
        }
      }
    }
    return;
  }
  if (p.r == 0) {
    std::fill(out, out + p.a * p.c, init);
    return;
  }
  if (p.a * p.c == 0) return;

  const int threads = ctx.pool->num_threads();
  // Work in IR instructions (the reduction and each expression op's tree included).
  const int64_t work = n_ * static_cast<int64_t>(num_instructions + loads_.size() + stores_.size());
  const bool parallel = threads > 1 && work >= kMinParallelWork;
  auto for_units = [&](int64_t units, auto&& fn) {
    if (parallel && units > 1) {
      ctx.pool->ParallelFor(units, fn);
    } else {
      for (int64_t u = 0; u < units; ++u) fn(u, 0);
    }
  };
  T* partials = reinterpret_cast<T*>(partials_.data());
  const int64_t nrc = p.num_r_chunks;

  if (p.c == 1) {
    if (nrc > 1) {
      for_units(p.a * nrc, [&](int64_t unit, int thread) {
        void** regs = SetUpThread(ctx, thread);
        const int64_t ai = unit / nrc, rc = unit % nrc;
        const int64_t r0 = rc * p.r_chunk, r1 = std::min(p.r, r0 + p.r_chunk);
        T partial = R::Identity();
        for (int64_t s = r0; s < r1; s += kBlock) {
          const int64_t len = std::min(kBlock, r1 - s);
          Evaluate(ctx, regs, ai * p.r + s, len);
          partial = R::Combine(partial, R::Row(static_cast<const T*>(regs[reg]), len));
        }
        partials[ai * nrc + rc] = partial;
      });
      for (int64_t ai = 0; ai < p.a; ++ai) {
        T v = init;
        for (int64_t rc = 0; rc < nrc; ++rc) v = R::Combine(v, partials[ai * nrc + rc]);
        out[ai] = v;
      }
    } else if (p.rows_per_block > 0) {
      const int64_t k = p.rows_per_block;
      const int64_t blocks = (p.a + k - 1) / k;
      const int64_t units = parallel ? std::min<int64_t>(blocks, kUnitsPerThread * threads) : 1;
      for_units(units, [&](int64_t unit, int thread) {
        void** regs = SetUpThread(ctx, thread);
        for (int64_t b = blocks * unit / units; b < blocks * (unit + 1) / units; ++b) {
          const int64_t a0 = b * k, rows = std::min(k, p.a - a0);
          Evaluate(ctx, regs, a0 * p.r, rows * p.r);
          const T* x = static_cast<const T*>(regs[reg]);
          for (int64_t j = 0; j < rows; ++j) out[a0 + j] = R::Combine(init, R::Row(x + j * p.r, p.r));
        }
      });
    } else {
      const int64_t units = parallel ? std::min<int64_t>(p.a, kUnitsPerThread * threads) : 1;
      for_units(units, [&](int64_t unit, int thread) {
        void** regs = SetUpThread(ctx, thread);
        for (int64_t ai = p.a * unit / units; ai < p.a * (unit + 1) / units; ++ai) {
          T partial = R::Identity();
          for (int64_t s = 0; s < p.r; s += kBlock) {
            const int64_t len = std::min(kBlock, p.r - s);
            Evaluate(ctx, regs, ai * p.r + s, len);
            partial = R::Combine(partial, R::Row(static_cast<const T*>(regs[reg]), len));
          }
          out[ai] = R::Combine(init, partial);
        }
      });
    }
    return;
  }

  // c > 1: accumulate rows of c (or chunks of them) element by element.
  const int64_t ncc = p.num_c_chunks;
  const int64_t units = p.a * ncc * nrc;
  for_units(units, [&](int64_t unit, int thread) {
    void** regs = SetUpThread(ctx, thread);
    T* acc = reinterpret_cast<T*>(ctx.scratch[thread] + regs_bytes_ + buffers_bytes_);
    const int64_t rc = unit % nrc, cc = (unit / nrc) % ncc, ai = unit / (nrc * ncc);
    const int64_t c0 = cc * p.c_chunk, cl = std::min(p.c_chunk, p.c - c0);
    const int64_t r0 = rc * p.r_chunk, r1 = std::min(p.r, r0 + p.r_chunk);
    std::fill(acc, acc + cl, R::Identity());
    const int64_t base = ai * p.r * p.c;
    if (p.batch_rows) {
      const int64_t k = kBlock / p.c;
      for (int64_t rr = r0; rr < r1; rr += k) {
        const int64_t rows = std::min(k, r1 - rr);
        Evaluate(ctx, regs, base + rr * p.c, rows * p.c);
        const T* x = static_cast<const T*>(regs[reg]);
        for (int64_t j = 0; j < rows; ++j) R::Accumulate(acc, x + j * p.c, p.c);
      }
    } else {
      for (int64_t rr = r0; rr < r1; ++rr) {
        Evaluate(ctx, regs, base + rr * p.c + c0, cl);
        R::Accumulate(acc, static_cast<const T*>(regs[reg]), cl);
      }
    }
    if (nrc == 1) {
      for (int64_t j = 0; j < cl; ++j) out[ai * p.c + c0 + j] = R::Combine(init, acc[j]);
    } else {
      std::memcpy(partials + (rc * p.a + ai) * p.c + c0, acc, static_cast<size_t>(cl) * sizeof(T));
    }
  });
  if (nrc > 1) {
    // The same order of combination per output as init, chunk 0, chunk 1, ..., but with the
    // outputs innermost: contiguous, vectorised loops instead of a strided walk per output.
    const int64_t outputs = p.a * p.c;
    std::fill(out, out + outputs, init);
    for (int64_t rc = 0; rc < nrc; ++rc) R::Accumulate(out, partials + rc * outputs, outputs);
  }
}

}  // namespace pcp::cpu
