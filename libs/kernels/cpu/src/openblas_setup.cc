#include "openblas_setup.h"

#include <cblas.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

// Exported by DYNAMIC_ARCH builds of OpenBLAS (driver/others/dynamic.c): choose the kernel
// table from OPENBLAS_CORETYPE or cpuid, and forget the choice.
extern "C" void gotoblas_dynamic_init(void);
extern "C" void gotoblas_dynamic_quit(void);

namespace pcp::cpu {
namespace {

// How the core type came about, for OpenBlasDescription; written once under ConfigureOpenBlas.
std::string& Choice() {
  static std::string* choice = new std::string("OpenBLAS's own choice");
  return *choice;
}

bool OneOf(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

std::string CoreName() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "";
}

struct CpuFeatures {
  bool avx512 = false;  // F, BW, DQ and VL, with the OS saving the registers
  bool avx2 = false;    // AVX2 and FMA
};

CpuFeatures Features() {
  CpuFeatures f;
#if defined(__x86_64__)
  // libgcc's checks include the OS's XCR0 bits: a kernel that does not save the AVX-512
  // state turns the feature off here as it does in OpenBLAS.
  __builtin_cpu_init();
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return f;
}

// "AuthenticAMD family 0x19 model 0x11, AVX-512" (family and model as Linux and AMD count them).
std::string CpuSummary() {
  std::string out = "unknown CPU";
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) != 0) {
    char vendor[13];
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    vendor[12] = '\0';
    __get_cpuid(1, &eax, &ebx, &ecx, &edx);
    unsigned family = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;
    if (family == 0xf) family += (eax >> 20) & 0xff;
    if (family == 0x6 || family >= 0xf) model += ((eax >> 16) & 0xf) << 4;
    out = absl::StrFormat("%s family 0x%x model 0x%x", vendor, family, model);
  }
#endif
  const CpuFeatures f = Features();
  absl::StrAppend(&out, f.avx512 ? ", AVX-512" : f.avx2 ? ", AVX2+FMA" : ", no AVX2");
  return out;
}

void Configure() {
  openblas_set_num_threads(1);
  if (const char* env = std::getenv("OPENBLAS_CORETYPE"); env != nullptr) {
    Choice() = absl::StrCat("OPENBLAS_CORETYPE=", env, " from the environment");
    return;
  }
  const std::string core = CoreName();
  const CpuFeatures f = Features();
  const char* wanted = nullptr;
  if (f.avx512 && !OneOf(core, {"SkylakeX", "Cooperlake", "SapphireRapids"})) {
    wanted = "SkylakeX";
  } else if (f.avx2 && !f.avx512 && !OneOf(core, {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})) {
    wanted = "Haswell";
  }
  if (wanted == nullptr) return;
  setenv("OPENBLAS_CORETYPE", wanted, 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
  openblas_set_num_threads(1);
  Choice() = absl::StrCat("corrected from ", core.empty() ? "unknown" : core);
}

}  // namespace

void ConfigureOpenBlas() {
  static std::once_flag once;
  std::call_once(once, Configure);
}

std::string OpenBlasDescription() {
  const char* config = openblas_get_config();
  return absl::StrCat(config != nullptr ? config : "OpenBLAS", "; core ", CoreName(), " (", Choice(), "; ",
                      CpuSummary(), ")");
}

}  // namespace pcp::cpu
