// The GLSL text every generated kernel starts with: version, extensions (int64, 8-bit
// storage) and PCP's float math (exp, log, tanh, logistic, erf, pow, IEEE maximum/minimum,
// saturating float->int) written out so results do not depend on a driver's builtin
// precision: the same Cephes/Eigen polynomials as the CPU backend (cpu/src/vector_math.h).
// Only the functions a kernel calls are included (glslang's parse time is a large part of
// a cold compile).
//
//   std::string glsl = GlslPreludeFor(rest) + rest;   // rest: declarations and main()
#ifndef PCP_KERNELS_VULKAN_SRC_GLSL_PRELUDE_H_
#define PCP_KERNELS_VULKAN_SRC_GLSL_PRELUDE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace pcp::vulkan {

// "#version 450" and the extensions.
absl::string_view GlslHeader();
// The header plus the math functions `body` calls (and what they call).
std::string GlslPreludeFor(absl::string_view body);

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_GLSL_PRELUDE_H_
