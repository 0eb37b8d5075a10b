#include "openblas_setup.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

// Exported by DYNAMIC_ARCH builds of OpenBLAS (driver/others/dynamic.c): choose the kernel
// table from OPENBLAS_CORETYPE or cpuid, and forget the choice.
extern "C" void gotoblas_dynamic_init(void);
extern "C" void gotoblas_dynamic_quit(void);

namespace pcp::cpu {
namespace {

std::string& Note() {
  static std::string* note = new std::string;
  return *note;
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

void Configure() {
  openblas_set_num_threads(1);
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the user's choice
  const std::string core = CoreName();
  const char* wanted = nullptr;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512 && !OneOf(core, {"SkylakeX", "Cooperlake", "SapphireRapids"})) {
    wanted = "SkylakeX";
  } else if (avx2 && !avx512 && !OneOf(core, {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})) {
    wanted = "Haswell";
  }
#endif
  if (wanted == nullptr) return;
  setenv("OPENBLAS_CORETYPE", wanted, 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
  openblas_set_num_threads(1);
  Note() = " (core type corrected from " + core + ")";
}

}  // namespace

void ConfigureOpenBlas() {
  static std::once_flag once;
  std::call_once(once, Configure);
}

std::string OpenBlasDescription() {
  const char* config = openblas_get_config();
  return std::string(config != nullptr ? config : "OpenBLAS") + Note();
}

}  // namespace pcp::cpu
