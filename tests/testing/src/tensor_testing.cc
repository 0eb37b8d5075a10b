#include "pcp/testing/tensor_testing.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/tensor/shape.h"

namespace pcp::testing {
namespace {

// splitmix64: tiny, fast and identical everywhere.
uint64_t Next(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Uniform01(uint64_t& state) { return static_cast<double>(Next(state) >> 11) * 0x1.0p-53; }

}  // namespace

Tensor RandomTensor(const TensorType& type, uint64_t seed, double lo, double hi) {
  Tensor t(type.dtype, type.shape);
  uint64_t state = seed * 0x2545F4914F6CDD1Dull + 1;
  int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double u = Uniform01(state);
    switch (type.dtype) {
      case DType::kF32: t.data<float>()[i] = static_cast<float>(lo + (hi - lo) * u); break;
      case DType::kF64: t.data<double>()[i] = lo + (hi - lo) * u; break;
      case DType::kI32: t.data<int32_t>()[i] = static_cast<int32_t>(std::floor(lo + (hi - lo) * u)); break;
      case DType::kI64: t.data<int64_t>()[i] = static_cast<int64_t>(std::floor(lo + (hi - lo) * u)); break;
      case DType::kBool: static_cast<uint8_t*>(t.raw_data())[i] = u < 0.5 ? 1 : 0; break;
      default: ADD_FAILURE() << "RandomTensor: unsupported dtype " << MlirName(type.dtype); return t;
    }
  }
  return t;
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case DType::kF32: out[i] = t.data<float>()[i]; break;
      case DType::kF64: out[i] = t.data<double>()[i]; break;
      case DType::kI32: out[i] = t.data<int32_t>()[i]; break;
      case DType::kI64: out[i] = static_cast<double>(t.data<int64_t>()[i]); break;
      case DType::kBool: out[i] = static_cast<const uint8_t*>(t.raw_data())[i]; break;
      default: out[i] = std::nan(""); break;
    }
  }
  return out;
}

::testing::AssertionResult TensorsNear(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << "type " << actual.TypeString() << " != expected " << expected.TypeString();
  }
  std::vector<double> a = ToDoubles(actual), b = ToDoubles(expected);
  Shape shape = actual.shape();
  for (size_t i = 0; i < a.size(); ++i) {
    bool ok = (std::isnan(a[i]) && std::isnan(b[i])) || (a[i] == b[i]) ||
              std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i]);
    if (!ok) {
      // Multi-index of element i, for a readable message.
      std::vector<int64_t> index(shape.size());
      int64_t rest = static_cast<int64_t>(i);
      for (size_t d = shape.size(); d-- > 0;) {
        index[d] = rest % shape[d];
        rest /= shape[d];
      }
      return ::testing::AssertionFailure()
             << "element [" << absl::StrJoin(index, ",") << "] of " << actual.TypeString() << ": actual " << a[i]
             << ", expected " << b[i] << " (rtol " << rtol << ", atol " << atol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

double MaxRelativeError(const Tensor& actual, const Tensor& expected, double floor) {
  std::vector<double> a = ToDoubles(actual), b = ToDoubles(expected);
  if (a.size() != b.size()) return INFINITY;
  double scale = floor, worst = 0;
  for (double v : b) {
    if (!std::isfinite(v)) return INFINITY;  // std::max would silently drop a NaN
    scale = std::max(scale, std::abs(v));
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst / scale;
}

}  // namespace pcp::testing
