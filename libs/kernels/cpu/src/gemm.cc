#include "gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

// Everything here but GemmAvailable is compiled for AVX2+FMA whatever the build's -march
// (PCP_NATIVE=OFF builds too), and runs only where GemmAvailable() says so. (Templates from the
// headers above, std::fill's at -O0, are instantiated for the build's target, not this one.)
// Clang ignores GCC's target pragma (and then fails on the intrinsics without -mavx2): it has
// its own form.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,prfchw"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,prfchw")
#endif

namespace pcp::cpu {
namespace {

// The register tile: kMr rows x kNr columns of C in 12 ymm accumulators.
constexpr int64_t kMr = 6;
constexpr int64_t kNr = 16;
// Depth of a packed slice: a B panel (kKc x 16 floats, 16 KiB) stays in L1 while the A
// panels of a row block stream past it.
constexpr int64_t kKc = 256;
// Rows of a packed A block: 96 x 256 floats = 96 KiB, in L2.
constexpr int64_t kMc = 96;
// Columns of a packed B block: up to 256 x 2048 floats = 2 MiB, in L3.
constexpr int64_t kNc = 2048;
// Packs that copy a few floats from each of many rows (a row-major B, a transposed A) ask for
// the row this many depths ahead: the source is usually an activation the step wrote long
// before, out in L3 or memory (the GPT train step, in process against no prefetch: 0.3-1.1 ms
// faster per step on 2 threads, 0.5-2.1 on 1, on a Zen 3). The packs that transpose 8 x 8
// blocks read their panel's rows in sequence and ask for the next panel's rows at the same
// depths, a line at a time (a further 0.6 ms on 2 threads, 1.8 on 1, median of 4 and 2 runs);
// at the last panel that address lies past the operand, which a prefetch may (it never faults).
constexpr int64_t kPackPrefetchDepths = 8;

inline void Prefetch(const float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }

// dst[0 .. 16) = src[0 .. 16).
inline void Copy16(const float* src, float* dst) {
  _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
  _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(src + 8));
}

// Transposes the 8 x 8 block in r[0..8): afterwards r[i] holds what was column i.
inline void Transpose8x8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// A full B panel (16 columns) of a B stored by columns (row stride 1): eight depths at a
// time, two 8 x 8 transposes; the rest one by one.
void PackBColumns(const float* src, int64_t col_stride, int64_t kc, float* panel) {
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
    if (p % 16 == 0) {
      for (int64_t j = 0; j < kNr; ++j) Prefetch(src + (kNr + j) * col_stride + p);  // the next panel's line
    }
    for (int half = 0; half < 2; ++half) {
      __m256 r[8];
      for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + (8 * half + j) * col_stride + p);
      Transpose8x8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(panel + (p + i) * kNr + 8 * half, r[i]);
    }
  }
  for (; p < kc; ++p) {
    for (int64_t j = 0; j < kNr; ++j) panel[p * kNr + j] = src[j * col_stride + p];
  }
}

// A full A panel (6 rows) of an A stored by rows (column stride 1): eight depths at a time,
// one 8 x 8 transpose (two rows of zeros), each depth's 6 values stored as 8, the next
// depth's store overwriting the 2 extra; the rest one by one.
void PackARows(const float* src, int64_t row_stride, int64_t kc, float* panel) {
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
    if (p % 16 == 0) {
      for (int64_t i = 0; i < kMr; ++i) Prefetch(src + (kMr + i) * row_stride + p);  // the next panel's line
    }
    __m256 r[8];
    for (int i = 0; i < kMr; ++i) r[i] = _mm256_loadu_ps(src + i * row_stride + p);
    r[6] = r[7] = _mm256_setzero_ps();
    Transpose8x8(r);
    float* dst = panel + p * kMr;
    for (int i = 0; i < 7; ++i) _mm256_storeu_ps(dst + i * kMr, r[i]);
    _mm_storeu_ps(dst + 7 * kMr, _mm256_castps256_ps128(r[7]));
    _mm_storel_pi(reinterpret_cast<__m64*>(dst + 7 * kMr + 4), _mm256_extractf128_ps(r[7], 1));
  }
  for (; p < kc; ++p) {
    for (int64_t i = 0; i < kMr; ++i) panel[p * kMr + i] = src[i * row_stride + p];
  }
}

// B[p0 .. p0+kc) x [j0 .. j0+nc) into panels of kNr columns: panel q holds, for each depth
// p, columns j0 + q*kNr .. + kNr (zeros past n).
void PackB(const MatrixView& b, int64_t n, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  for (int64_t q = 0; q * kNr < nc; ++q) {
    const int64_t jq = j0 + q * kNr;
    const int64_t w = std::min(kNr, n - jq);
    float* panel = out + q * kNr * kc;
    if (b.col_stride == 1) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b.data + (p0 + p) * b.row_stride + jq;
        if (p + kPackPrefetchDepths < kc) {
          // The 16 floats may straddle two lines.
          Prefetch(src + kPackPrefetchDepths * b.row_stride);
          Prefetch(src + kPackPrefetchDepths * b.row_stride + kNr - 1);
        }
        float* dst = panel + p * kNr;
        if (w == kNr) {
          Copy16(src, dst);
        } else {
          for (int64_t j = 0; j < kNr; ++j) dst[j] = j < w ? src[j] : 0.0f;
        }
      }
    } else if (b.row_stride == 1 && w == kNr) {
      PackBColumns(b.data + p0 + jq * b.col_stride, b.col_stride, kc, panel);
    } else {
      if (w < kNr) std::fill(panel, panel + kc * kNr, 0.0f);
      for (int64_t j = 0; j < w; ++j) {
        const float* src = b.data + p0 * b.row_stride + (jq + j) * b.col_stride;
        for (int64_t p = 0; p < kc; ++p) panel[p * kNr + j] = src[p * b.row_stride];
      }
    }
  }
}

// A[i0 .. i0+mc) x [p0 .. p0+kc) into panels of kMr rows: panel q holds, for each depth p,
// rows i0 + q*kMr .. + kMr (zeros past m).
void PackA(const MatrixView& a, int64_t m, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  for (int64_t q = 0; q * kMr < mc; ++q) {
    const int64_t iq = i0 + q * kMr;
    const int64_t h = std::min(kMr, m - iq);
    float* panel = out + q * kMr * kc;
    if (a.row_stride == 1 && h == kMr) {
      // Each depth's 6 values lie together: one 16-byte and one 8-byte move (the element by
      // element loop compiled to 6 scalar loads and stores).
      const float* src = a.data + iq + p0 * a.col_stride;
      for (int64_t p = 0; p < kc; ++p) {
        if (p + kPackPrefetchDepths < kc) Prefetch(src + (p + kPackPrefetchDepths) * a.col_stride);
        std::memcpy(panel + p * kMr, src + p * a.col_stride, kMr * sizeof(float));
      }
    } else if (a.row_stride == 1) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a.data + iq + (p0 + p) * a.col_stride;
        float* dst = panel + p * kMr;
        for (int64_t r = 0; r < h; ++r) dst[r] = src[r];
        for (int64_t r = h; r < kMr; ++r) dst[r] = 0.0f;
      }
    } else if (a.col_stride == 1 && h == kMr) {
      PackARows(a.data + iq * a.row_stride + p0, a.row_stride, kc, panel);
    } else {
      if (h < kMr) std::fill(panel, panel + kc * kMr, 0.0f);
      for (int64_t r = 0; r < h; ++r) {
        const float* src = a.data + (iq + r) * a.row_stride + p0 * a.col_stride;
        for (int64_t p = 0; p < kc; ++p) panel[p * kMr + r] = src[p * a.col_stride];
      }
    }
  }
}

// The 6 x 16 tile at c (row stride ldc): the chain continued from c's values (accumulate) or
// started from zero, kc more multiply-adds from the packed panels, then + bias (if not null).
void Tile(int64_t kc, const float* __restrict a, const float* __restrict b, float* c, int64_t ldc, bool accumulate,
          const float* bias) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (accumulate) {
    c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
    c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
    c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
    c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
    c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
    c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
  } else {
    // The tile's rows of C are written only at the end: fetch them for writing now, so that a
    // C not in cache (a fresh output) costs no stall there. (~20 % faster with a cold C.)
    for (int64_t r = 0; r < kMr; ++r) __builtin_prefetch(c + r * ldc, 1, 3);
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51);
    a += kMr;
    b += kNr;
  }
  if (bias != nullptr) {
    const __m256 d0 = _mm256_loadu_ps(bias), d1 = _mm256_loadu_ps(bias + 8);
    c00 = _mm256_add_ps(c00, d0), c01 = _mm256_add_ps(c01, d1);
    c10 = _mm256_add_ps(c10, d0), c11 = _mm256_add_ps(c11, d1);
    c20 = _mm256_add_ps(c20, d0), c21 = _mm256_add_ps(c21, d1);
    c30 = _mm256_add_ps(c30, d0), c31 = _mm256_add_ps(c31, d1);
    c40 = _mm256_add_ps(c40, d0), c41 = _mm256_add_ps(c41, d1);
    c50 = _mm256_add_ps(c50, d0), c51 = _mm256_add_ps(c51, d1);
  }
  _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
  _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

// A tile cut short by the edge of C (h < kMr rows or w < kNr columns): computed in a full
// tile of its own and copied out; the bias added on the way out (the same single rounding).
void EdgeTile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t h, int64_t w, bool accumulate,
              const float* bias) {
  alignas(32) float tile[kMr * kNr];
  if (accumulate) {
    for (int64_t r = 0; r < h; ++r) std::memcpy(tile + r * kNr, c + r * ldc, static_cast<size_t>(w) * sizeof(float));
  }
  Tile(kc, a, b, tile, kNr, accumulate, nullptr);
  for (int64_t r = 0; r < h; ++r) {
    float* dst = c + r * ldc;
    const float* src = tile + r * kNr;
    if (bias != nullptr) {
      for (int64_t j = 0; j < w; ++j) dst[j] = src[j] + bias[j];
    } else {
      std::memcpy(dst, src, static_cast<size_t>(w) * sizeof(float));
    }
  }
}

int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

}  // namespace

int64_t GemmWorkspaceFloats(int64_t n) { return kMc * kKc + kKc * RoundUp(std::min(n, kNc), kNr); }

int64_t PackedAFloats(int64_t m, int64_t k) { return RoundUp(m, kMr) * k; }
int64_t PackedBFloats(int64_t k, int64_t n) { return k * RoundUp(n, kNr); }
int64_t PackedAPanels(int64_t m) { return RoundUp(m, kMr) / kMr; }
int64_t PackedBPanels(int64_t n) { return RoundUp(n, kNr) / kNr; }

// Whole packed operands: depth slice p0 (kKc deep, the last one shorter) starts at
// p0 * (rows or columns rounded up to the panel), and its panel q at q * panel * kc after that,
// the layout PackA and PackB write for one block.
void PackAPanels(const MatrixView& a, int64_t m, int64_t k, int64_t q0, int64_t q1, float* out) {
  const int64_t i0 = q0 * kMr, i1 = std::min(m, q1 * kMr);
  if (i0 >= i1) return;
  for (int64_t p0 = 0; p0 < k; p0 += kKc) {
    const int64_t kc = std::min(kKc, k - p0);
    PackA(a, m, i0, i1 - i0, p0, kc, out + p0 * RoundUp(m, kMr) + i0 * kc);
  }
}

void PackBPanels(const MatrixView& b, int64_t k, int64_t n, int64_t q0, int64_t q1, float* out) {
  const int64_t j0 = q0 * kNr, j1 = std::min(n, q1 * kNr);
  if (j0 >= j1) return;
  for (int64_t p0 = 0; p0 < k; p0 += kKc) {
    const int64_t kc = std::min(kKc, k - p0);
    PackB(b, n, p0, kc, j0, j1 - j0, out + p0 * RoundUp(n, kNr) + j0 * kc);
  }
}

void Gemm(int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, const float* bias, float* c,
          int64_t ldc, float* workspace) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) row[j] = bias != nullptr ? 0.0f + bias[j] : 0.0f;
    }
    return;
  }
  float* const pack_a = workspace;              // kMc x kKc
  float* const pack_b = workspace + kMc * kKc;  // kKc x RoundUp(min(n, kNc), kNr)
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    const int64_t nc = std::min(kNc, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kKc) {
      const int64_t kc = std::min(kKc, k - p0);
      const bool accumulate = p0 > 0, last = p0 + kc == k;
      const float* pb = pack_b;
      if (b.packed != nullptr) {
        pb = b.packed + p0 * RoundUp(n, kNr) + j0 * kc;
      } else {
        PackB(b.view, n, p0, kc, j0, nc, pack_b);
      }
      for (int64_t i0 = 0; i0 < m; i0 += kMc) {
        const int64_t mc = std::min(kMc, m - i0);
        const float* pa = pack_a;
        if (a.packed != nullptr) {
          pa = a.packed + p0 * RoundUp(m, kMr) + i0 * kc;
        } else {
          PackA(a.view, m, i0, mc, p0, kc, pack_a);
        }
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          const int64_t w = std::min(kNr, nc - jr);
          const float* bp = pb + jr * kc;
          const float* tile_bias = last && bias != nullptr ? bias + j0 + jr : nullptr;
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            const int64_t h = std::min(kMr, mc - ir);
            float* ct = c + (i0 + ir) * ldc + j0 + jr;
            const float* ap = pa + ir * kc;
            if (h == kMr && w == kNr) {
              Tile(kc, ap, bp, ct, ldc, accumulate, tile_bias);
            } else {
              EdgeTile(kc, ap, bp, ct, ldc, h, w, accumulate, tile_bias);
            }
          }
        }
      }
    }
  }
}

}  // namespace pcp::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace pcp::cpu {

// Compiled for the build's target: it runs on every CPU.
bool GemmAvailable() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

}  // namespace pcp::cpu
