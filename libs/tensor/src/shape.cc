#include "pcp/tensor/shape.h"

#include "absl/strings/str_join.h"

namespace pcp {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::string ShapeToString(const Shape& shape) { return absl::StrJoin(shape, "x"); }

}  // namespace pcp
