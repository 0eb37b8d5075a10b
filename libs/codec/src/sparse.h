// The sparse codecs' body (topk2, topk4, topk8): per block, the k values of largest |x| at 2, 4
// or 8 bits with one f32 scale, their positions as a bitmap or Rice-coded gaps, whichever is
// smaller. The layout and its rules are in pcp/codec/encoded.h; encoded.cc writes and checks the
// 16-byte header and calls these on what follows it.
//
//   std::string body;
//   EncodeSparse(values, /*bits=*/2, /*block_size=*/4096, /*density=*/0.02, &body);
//   PCP_RETURN_IF_ERROR(CheckSparse(body, count, 2, 4096));           // before writing anything
//   DecodeSparse</*kAdd=*/true>(body, 2, 4096, 0.5f, absl::MakeSpan(sum));  // trusts a checked body
#ifndef PCP_CODEC_SRC_SPARSE_H_
#define PCP_CODEC_SRC_SPARSE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pcp::codec::internal {

// Bytes of a block's fixed part: a u32 (k, index mode, Rice parameter) and the f32 scale.
inline constexpr size_t kSparseBlockHeader = 8;

// Values kept in a block of m values at `density` (in (0, 1]): ceil(density·m), at least 1.
size_t KeptPerBlock(size_t m, double density);

// The most bytes the body of `count` values can take at this density (each block: its header,
// the smaller of bitmap and Rice indices bounded by the bitmap, and k codes).
uint64_t MaxSparseBodySize(uint64_t count, int bits, uint64_t block_size, double density);
// The fewest: every block a header only (k = 0).
uint64_t MinSparseBodySize(uint64_t count, uint64_t block_size);

// Appends the encoded blocks of `values` to `out`.
void EncodeSparse(absl::Span<const float> values, int bits, size_t block_size, double density, std::string* out);

// InvalidArgument naming the block and what is wrong unless `body` is exactly the blocks of
// `count` values: every k ≤ its block, reserved bits zero, a Rice parameter ≤ 16, every index in
// its block and increasing, a bitmap's set bits k and none past the block, padding bits zero,
// scales finite and ≥ 0 or NaN with k = 0, no byte read past the end and none left over.
absl::Status CheckSparse(absl::string_view body, uint64_t count, int bits, size_t block_size);

// kAdd false: out = x̂ (the values not kept are 0; a NaN block all NaN); true: out += weight·x̂,
// touching only the kept values (and every value of a NaN block). `body` must have passed
// CheckSparse for out.size() values.
template <bool kAdd>
void DecodeSparse(absl::string_view body, int bits, size_t block_size, float weight, absl::Span<float> out);

}  // namespace pcp::codec::internal

#endif  // PCP_CODEC_SRC_SPARSE_H_
