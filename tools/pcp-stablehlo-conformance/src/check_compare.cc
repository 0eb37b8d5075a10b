#include "pcp/conformance/check_compare.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace pcp::conformance {
namespace {

// ULP distance of two floats, as CheckOps.cpp's ULPDifference defines it.
uint64_t UlpDistance(float f, float g) {
  uint32_t bf, bg;
  std::memcpy(&bf, &f, 4);
  std::memcpy(&bg, &g, 4);
  if (bf == bg) return 0;
  if (std::isfinite(f) && std::isfinite(g)) {
    const uint64_t a = bf & 0x7FFFFFFFu, b = bg & 0x7FFFFFFFu;
    if (std::signbit(f) != std::signbit(g)) return a + b;
    return a > b ? a - b : b - a;
  }
  if (std::isnan(f) && std::isnan(g)) return 0;
  return std::numeric_limits<uint64_t>::max();
}

// CheckOps.cpp's areApproximatelyEqual for f32 values (computed in double).
bool AlmostEqual(float f, float g, double tolerance) {
  if (f == g) return true;
  if (std::isnan(f) || std::isnan(g)) return std::isnan(f) == std::isnan(g);
  if (!std::isfinite(f) || !std::isfinite(g)) return false;
  return std::fabs(static_cast<double>(f) - static_cast<double>(g)) <= tolerance;
}

std::string Index(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

double ElementAsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32: return t.data<float>()[i];
    case DType::kF64: return t.data<double>()[i];
    case DType::kI32: return t.data<int32_t>()[i];
    case DType::kI64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kBool: return t.data<uint8_t>()[i] != 0 ? 1 : 0;
    default: return std::nan("");
  }
}

// Floats with enough digits to tell neighbours apart (%.9g round-trips f32), integers exactly.
std::string FormatElement(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32: return absl::StrFormat("%.9g", t.data<float>()[i]);
    case DType::kF64: return absl::StrFormat("%.17g", t.data<double>()[i]);
    case DType::kI32: return absl::StrCat(t.data<int32_t>()[i]);
    case DType::kI64: return absl::StrCat(t.data<int64_t>()[i]);
    case DType::kBool: return t.data<uint8_t>()[i] != 0 ? "true" : "false";
    default: return "?";
  }
}

}  // namespace

CheckOutcome CompareCheck(const ParsedCheck& check, const Tensor& actual, const Tensor& expected) {
  CheckOutcome out;
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    out.detail = "the computed and the expected value differ in type";
    return out;
  }
  const int64_t n = actual.num_elements();
  const bool f32 = actual.dtype() == DType::kF32;
  const bool exact_bytes = !f32 && actual.dtype() != DType::kF64;
  const double tolerance = check.tolerance.value_or(check.custom_call ? 1e-3 : 1e-4);
  const uint64_t min_ulp = check.min_ulp.value_or(0);
  const uint64_t max_ulp = check.max_ulp.value_or(check.custom_call ? 3 : 1);
  int64_t mismatches = 0, worst = -1;
  double worst_error = -1;  // ULPs for expect_close, |a - b| otherwise
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    double error;
    if (exact_bytes) {
      error = std::fabs(ElementAsDouble(actual, i) - ElementAsDouble(expected, i));
      ok = actual.dtype() == DType::kBool
               ? (actual.data<uint8_t>()[i] != 0) == (expected.data<uint8_t>()[i] != 0)
               : std::memcmp(static_cast<const char*>(actual.raw_data()) + i * SizeOf(actual.dtype()),
                             static_cast<const char*>(expected.raw_data()) + i * SizeOf(actual.dtype()),
                             static_cast<size_t>(SizeOf(actual.dtype()))) == 0;
    } else {
      const double a = ElementAsDouble(actual, i), e = ElementAsDouble(expected, i);
      error = std::isnan(a) && std::isnan(e) ? 0 : std::fabs(a - e);
      if (check.kind == ParsedCheck::Kind::kEq) {
        ok = a == e;
      } else if (check.kind == ParsedCheck::Kind::kAlmostEq) {
        ok = AlmostEqual(static_cast<float>(a), static_cast<float>(e), tolerance);
      } else {
        const uint64_t ulp = UlpDistance(static_cast<float>(a), static_cast<float>(e));
        ok = ulp >= min_ulp && ulp <= max_ulp;
        error = static_cast<double>(ulp);
      }
    }
    if (!ok) {
      ++mismatches;
      if (std::isnan(error) || error > worst_error) {
        worst_error = std::isnan(error) ? std::numeric_limits<double>::infinity() : error;
        worst = i;
      }
    }
  }
  if (mismatches == 0) {
    out.passed = true;
    return out;
  }
  const bool ulps = check.kind == ParsedCheck::Kind::kClose && f32;
  std::string limit = ulps ? absl::StrCat(" (allowed ", min_ulp, "..", max_ulp, " ULP)")
                      : check.kind == ParsedCheck::Kind::kAlmostEq && !exact_bytes
                          ? absl::StrCat(" (tolerance ", tolerance, ")")
                          : "";
  std::string max_error = worst_error == std::numeric_limits<double>::infinity() ||
                                  worst_error >= static_cast<double>(std::numeric_limits<uint64_t>::max())
                              ? "non-finite"
                              : absl::StrCat(worst_error);
  out.detail =
      absl::StrCat(mismatches, " of ", n, " elements differ", limit, ", max error ", max_error, ulps ? " ULP" : "",
                   " at ", Index(actual.shape(), worst), ": ", FormatElement(actual, worst), " (computed) vs ",
                   FormatElement(expected, worst), " (expected)");
  return out;
}

}  // namespace pcp::conformance
