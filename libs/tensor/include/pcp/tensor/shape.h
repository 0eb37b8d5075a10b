// Shapes are plain vectors of dimension sizes, outermost first (row-major).
//
//   Shape s = {2, 3, 4};
//   NumElements(s) == 24; ShapeToString(s) == "2x3x4"; RowMajorStrides(s) == {12, 4, 1}
#ifndef PCP_TENSOR_SHAPE_H_
#define PCP_TENSOR_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace pcp {

using Shape = std::vector<int64_t>;

// Product of the dimensions; 1 for a scalar (rank 0).
int64_t NumElements(const Shape& shape);
// Element strides of a contiguous row-major layout.
std::vector<int64_t> RowMajorStrides(const Shape& shape);
// "2x3x4"; "" for a scalar.
std::string ShapeToString(const Shape& shape);

}  // namespace pcp

#endif  // PCP_TENSOR_SHAPE_H_
