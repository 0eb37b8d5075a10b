#include "glsl_prelude.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace pcp::vulkan {
namespace {

constexpr absl::string_view kHeader = R"GLSL(#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require
)GLSL";

struct Function {
  absl::string_view name;
  std::vector<absl::string_view> deps;  // functions it calls (defined earlier in the list)
  absl::string_view source;
};

// In dependency order: a function appears after everything it calls.
const std::vector<Function>& Functions() {
  static const auto* functions = new std::vector<Function>{
      {"pcp_exp", {}, R"GLSL(float pcp_exp(float x) {
  float xc = clamp(x, -104.0, 88.8);
  xc = isnan(x) ? 0.0 : xc;
  float n = roundEven(xc * 1.44269504088896341);
  // precise: the two-constant ln2 reduction must not be refactored into one product.
  precise float r = xc - n * 0.693359375;
  r = r - n * -2.12194440e-4;
  float p = 1.9875691500e-4;
  p = p * r + 1.3981999507e-3;
  p = p * r + 8.3334519073e-3;
  p = p * r + 4.1665795894e-2;
  p = p * r + 1.6666665459e-1;
  p = p * r + 5.0000001201e-1;
  float y = p * (r * r) + r + 1.0;
  int ni = int(n);
  int n1 = ni >> 1;
  int n2 = ni - n1;
  float s1 = uintBitsToFloat(uint(n1 + 127) << 23);
  float s2 = uintBitsToFloat(uint(n2 + 127) << 23);
  float result = y * s1 * s2;
  return isnan(x) ? x : result;
}
)GLSL"},
      {"pcp_log", {}, R"GLSL(float pcp_log(float x) {
  bool subnormal = x < 1.17549435e-38;
  float xs = subnormal ? x * 8388608.0 : x;
  uint bits = floatBitsToUint(xs);
  float e = float(int((bits >> 23) & 0xffu) - 126);
  e = subnormal ? e - 23.0 : e;
  float m = uintBitsToFloat((bits & 0x007fffffu) | 0x3f000000u);
  bool small = m < 0.707106781186547524;
  e = small ? e - 1.0 : e;
  m = small ? m + m - 1.0 : m - 1.0;
  float z = m * m;
  float y = 7.0376836292e-2;
  y = y * m - 1.1514610310e-1;
  y = y * m + 1.1676998740e-1;
  y = y * m - 1.2420140846e-1;
  y = y * m + 1.4249322787e-1;
  y = y * m - 1.6668057665e-1;
  y = y * m + 2.0000714765e-1;
  y = y * m - 2.4999993993e-1;
  y = y * m + 3.3333331174e-1;
  y = y * m * z;
  precise float yp = y + -2.12194440e-4 * e;
  yp += -0.5 * z;
  precise float result = m + yp;
  result += 0.693359375 * e;
  result = isinf(x) && x > 0.0 ? x : result;
  result = x == 0.0 ? uintBitsToFloat(0xff800000u) : result;
  result = x < 0.0 ? uintBitsToFloat(0x7fc00000u) : result;
  return isnan(x) ? x : result;
}
)GLSL"},
      {"pcp_tanh", {"pcp_exp"}, R"GLSL(float pcp_tanh(float x) {
  float ax = abs(x);
  float z = x * x;
  float p = -5.70498872745e-3;
  p = p * z + 2.06390887954e-2;
  p = p * z - 5.37397155531e-2;
  p = p * z + 1.33314422036e-1;
  p = p * z - 3.33332819422e-1;
  float small_ = p * z * x + x;
  float large = 1.0 - 2.0 / (pcp_exp(ax + ax) + 1.0);
  large = x < 0.0 ? -large : large;
  return ax > 0.625 ? large : small_;
}
)GLSL"},
      {"pcp_logistic", {"pcp_exp"}, R"GLSL(float pcp_logistic(float x) { return 1.0 / (1.0 + pcp_exp(-x)); }
)GLSL"},
      {"pcp_erf", {}, R"GLSL(float pcp_erf(float x) {
  float xc = clamp(x, -4.0, 4.0);
  float x2 = xc * xc;
  float p = -2.72614225801306e-10;
  p = p * x2 + 2.77068142495902e-08;
  p = p * x2 - 2.10102402082508e-06;
  p = p * x2 - 5.69250639462346e-05;
  p = p * x2 - 7.34990630326855e-04;
  p = p * x2 - 2.95459980854025e-03;
  p = p * x2 - 1.60960333262415e-02;
  p = p * xc;
  float q = -1.45660718464996e-05;
  q = q * x2 - 2.13374055278905e-04;
  q = q * x2 - 1.68282697438203e-03;
  q = q * x2 - 7.37332916720468e-03;
  q = q * x2 - 1.42647390514189e-02;
  float result = p / q;
  return isnan(x) ? x : result;
}
)GLSL"},
      {"pcp_pow",
       {"pcp_exp", "pcp_log"},
       R"GLSL(// pow through exp(b * log|a|) with the product's rounding error carried (fma), so the
// error stays a few ulp; negative bases give results only for integer exponents.
float pcp_pow(float a, float b) {
  if (b == 0.0) return 1.0;
  float aa = abs(a);
  float l = pcp_log(aa);
  float y = b * l;
  float y_err = fma(b, l, -y);
  float r = pcp_exp(y) * (1.0 + y_err);
  r = (isinf(y) || aa == 0.0) ? pcp_exp(y) : r;
  if (a < 0.0) {
    if (b != floor(b)) return uintBitsToFloat(0x7fc00000u);
    float half_b = b * 0.5;
    r = half_b != floor(half_b) ? -r : r;
  }
  return (isnan(a) || isnan(b)) ? a + b : r;
}
)GLSL"},
      {"pcp_rsqrt", {}, R"GLSL(precise float pcp_rsqrt(float x) { precise float s = sqrt(x); return 1.0 / s; }
)GLSL"},
      {"pcp_max", {}, R"GLSL(float pcp_max(float a, float b) {
  float r = a > b ? a : b;
  r = a == b ? uintBitsToFloat(floatBitsToUint(a) & floatBitsToUint(b)) : r;
  r = isnan(a) ? a : r;
  return isnan(b) ? b : r;
}
)GLSL"},
      {"pcp_min", {}, R"GLSL(float pcp_min(float a, float b) {
  float r = a < b ? a : b;
  r = a == b ? uintBitsToFloat(floatBitsToUint(a) | floatBitsToUint(b)) : r;
  r = isnan(a) ? a : r;
  return isnan(b) ? b : r;
}
)GLSL"},
      {"pcp_f2i", {}, R"GLSL(int pcp_f2i(float x) {
  if (isnan(x)) return 0;
  if (x <= -2147483648.0) return int(0x80000000u);
  if (x >= 2147483647.0) return 0x7fffffff;
  return int(x);
}
)GLSL"},
      {"pcp_f2l", {}, R"GLSL(int64_t pcp_f2l(float x) {
  if (isnan(x)) return 0l;
  if (x <= -9223372036854775808.0) return int64_t(0x8000000000000000ul);
  if (x >= 9223372036854775807.0) return int64_t(0x7ffffffffffffffful);
  return int64_t(x);
}
)GLSL"},
      // f32 <-> bf16 / f16 as bits (mixed precision's roundings): libs/tensor/src/convert.cc's
      // integer code, round to nearest even, so every backend rounds alike.
      {"pcp_f2bf", {}, R"GLSL(uint pcp_f2bf(float v) {
  uint b = floatBitsToUint(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (b >> 16) | 0x0040u;
  return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}
)GLSL"},
      {"pcp_bf2f", {}, R"GLSL(float pcp_bf2f(uint h) { return uintBitsToFloat(h << 16); }
)GLSL"},
      {"pcp_f2h", {}, R"GLSL(uint pcp_f2h(float v) {
  uint x = floatBitsToUint(v);
  uint sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {
    if (x == 0x7f800000u) return sign | 0x7c00u;
    uint payload = (x >> 13) & 0x3ffu;
    return sign | 0x7c00u | (payload != 0u ? payload : 0x0200u);
  }
  if (x >= 0x477ff000u) return sign | 0x7c00u;
  if (x < 0x38800000u) {
    uint e = x >> 23;
    if (e < 102u) return sign;
    uint significand = (x & 0x7fffffu) | 0x800000u;
    uint shift = 126u - e;
    uint q = significand >> shift;
    uint rem = significand & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u) != 0u)) ++q;
    return sign | q;
  }
  uint h = (x >> 13) - (112u << 10);
  uint rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) ++h;
  return sign | h;
}
)GLSL"},
      {"pcp_h2f", {}, R"GLSL(float pcp_h2f(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu;
  uint m = h & 0x3ffu;
  if (e == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  if (e != 0u) return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
  if (m == 0u) return uintBitsToFloat(sign);
  int lead = 9 - findMSB(m);
  m = (m << uint(lead + 1)) & 0x3ffu;
  return uintBitsToFloat(sign | (uint(112 - lead) << 23) | (m << 13));
}
)GLSL"},
      {"pcp_idiv", {}, R"GLSL(int pcp_idiv(int a, int b) {
  int d = (b == 0 || (a == int(0x80000000u) && b == -1)) ? 1 : b;
  return b == 0 ? -1 : a / d;
}
)GLSL"},
      {"pcp_ldiv", {}, R"GLSL(int64_t pcp_ldiv(int64_t a, int64_t b) {
  int64_t d = (b == 0l || (a == int64_t(0x8000000000000000ul) && b == -1l)) ? 1l : b;
  return b == 0l ? -1l : a / d;
}
)GLSL"},
  };
  return *functions;
}

}  // namespace

absl::string_view GlslHeader() { return kHeader; }

std::string GlslPreludeFor(absl::string_view body) {
  const std::vector<Function>& fns = Functions();
  std::vector<bool> needed(fns.size(), false);
  // Walk backwards so a function's callees are marked before they are passed.
  for (size_t i = fns.size(); i-- > 0;) {
    if (!needed[i] && !absl::StrContains(body, absl::StrCat(fns[i].name, "("))) continue;
    needed[i] = true;
    for (absl::string_view d : fns[i].deps) {
      for (size_t j = 0; j < i; ++j) {
        if (fns[j].name == d) needed[j] = true;
      }
    }
  }
  std::string out(kHeader);
  // f16/bf16 buffers (moved as bits) need 16-bit storage; other kernels must not ask for it.
  if (absl::StrContains(body, "uint16_t")) out += "#extension GL_EXT_shader_16bit_storage : require\n";
  for (size_t i = 0; i < fns.size(); ++i) {
    if (needed[i]) absl::StrAppend(&out, "\n", fns[i].source);
  }
  return out;
}

}  // namespace pcp::vulkan
