// Process-wide OpenBLAS setup for the CPU backend, done once by CreateCpuBackend:
//   - one OpenBLAS thread: the backend's pool splits products itself, so OpenBLAS's own
//     threads would only compete with it (and spin after each call);
//   - the right kernels: OpenBLAS 0.3.21's DYNAMIC_ARCH does not recognise recent Xeons
//     (e.g. family 6 model 207) and falls back to its SSE3 "Prescott" kernels, ~7x slower
//     than its AVX-512 ones there. If the CPU has AVX-512 (or AVX2+FMA) but OpenBLAS chose
//     a weaker core, it is re-initialised as SkylakeX (or Haswell), exactly as if
//     OPENBLAS_CORETYPE had been set. An OPENBLAS_CORETYPE in the environment is respected.
// It must run before other threads make BLAS calls (CreateCpuBackend is the place).
#ifndef PCP_KERNELS_CPU_OPENBLAS_SETUP_H_
#define PCP_KERNELS_CPU_OPENBLAS_SETUP_H_

#include <string>

namespace pcp::cpu {

void ConfigureOpenBlas();

// "OpenBLAS 0.3.21 ... SkylakeX" plus a note if the core type was corrected.
std::string OpenBlasDescription();

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_OPENBLAS_SETUP_H_
