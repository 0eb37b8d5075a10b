// Process-wide OpenBLAS setup for the CPU backend, done once by CreateCpuBackend:
//   - one OpenBLAS thread: the backend's pool splits products itself, so OpenBLAS's own
//     threads would only compete with it (and spin after each call);
//   - the right kernels. Debian 12's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its kernels by
//     vendor, family and model, so a CPU it does not know falls back to weaker ones: the Xeon
//     family 6 model 207 gets "Prescott" (SSE3, ~7x slower than its AVX-512 kernels). (An AMD
//     EPYC family 0x1a, Zen 5 with AVX-512, gets "Cooperlake" on its own, which is kept.)
//     So the choice is checked against cpuid's feature bits alone, whatever the vendor:
//       AVX-512 F+BW+DQ+VL (OS-enabled)  -> SkylakeX, unless it chose SkylakeX, Cooperlake
//                                           or SapphireRapids (same sgemm kernels);
//       AVX2+FMA without AVX-512         -> Haswell, unless it chose Haswell or Zen;
//       anything else                    -> OpenBLAS's own choice.
//     The correction re-initialises OpenBLAS exactly as if OPENBLAS_CORETYPE had been set. An
//     OPENBLAS_CORETYPE in the environment is respected as is.
// It must run before other threads make BLAS calls (CreateCpuBackend is the place).
//
//   ConfigureOpenBlas();
//   spdlog::info("{}", OpenBlasDescription());
//   // "OpenBLAS 0.3.21 ... DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64; core Cooperlake
//   //  (OpenBLAS's own choice; AuthenticAMD family 0x1a model 0x2, AVX-512)"
#ifndef PCP_KERNELS_CPU_OPENBLAS_SETUP_H_
#define PCP_KERNELS_CPU_OPENBLAS_SETUP_H_

#include <string>

namespace pcp::cpu {

void ConfigureOpenBlas();

// OpenBLAS's build string, the core type in use, how it was chosen (OpenBLAS's own choice,
// corrected from another, or OPENBLAS_CORETYPE), and the CPU (vendor, family, model, widest
// vector extension). The workers and pcp-local log it at start.
std::string OpenBlasDescription();

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_OPENBLAS_SETUP_H_
