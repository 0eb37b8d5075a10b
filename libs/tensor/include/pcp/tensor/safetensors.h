// Reading and writing the safetensors format (https://github.com/huggingface/safetensors),
// the interchange format for weights and checkpoints.
//
//   std::vector<NamedTensor> tensors = {{"wte", wte}, {"ln_f.bias", bias}};
//   PCP_RETURN_IF_ERROR(WriteSafetensorsFile("/ckpt/model.safetensors", tensors,
//                                            {{"step", "100"}}));
//   PCP_ASSIGN_OR_RETURN(SafetensorsContents c, ReadSafetensorsFile("/ckpt/model.safetensors"));
//   const Tensor* wte = c.Find("wte");   // nullptr if absent; points into `c`
//
// Layout: an 8-byte little-endian u64 N, then N bytes of JSON header
//   {"__metadata__": {"k": "v", ...}, "<name>": {"dtype": "F32", "shape": [2, 3],
//    "data_offsets": [begin, end]}, ...}
// padded with spaces to a multiple of 8 bytes, then the data section: each tensor's
// elements contiguous, row-major, little-endian, at [begin, end) relative to the start of
// the data section. Supported dtypes: F32, F16, BF16, I32, I64, BOOL (see dtype.h).
//
// The writer lays tensors out in the order given, back to back, with the header written as
// the reference implementation does (metadata first, compact JSON, space padding).
// The reader accepts what the reference implementation accepts: header keys in any order,
// tensors covering the data section exactly (no gaps, no overlaps, no trailing bytes),
// unknown extra fields in a tensor entry ignored. Anything else is an INVALID_ARGUMENT
// error saying what is wrong and where (e.g. "tensor 'w': shape [2, 3] of F32 needs 24
// bytes but data_offsets [0, 20] span 20"); reading from a path prefixes the path.
// Hosts must be little-endian (checked at compile time).
#ifndef PCP_TENSOR_SAFETENSORS_H_
#define PCP_TENSOR_SAFETENSORS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/tensor/tensor.h"

namespace pcp {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

using SafetensorsMetadata = std::vector<std::pair<std::string, std::string>>;

struct SafetensorsContents {
  // In file order: ascending data offset (header order among empty tensors at one offset).
  // Each tensor owns fresh storage, independent of the input bytes.
  std::vector<NamedTensor> tensors;
  // The "__metadata__" entries in header order; empty if the file has none.
  SafetensorsMetadata metadata;

  // The tensor called `name`, or nullptr. Linear scan; the pointer lives as long as this.
  const Tensor* Find(absl::string_view name) const;
};

// Header limit, as in the reference implementation: 100 MB.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Checks what SerializeSafetensors requires: every tensor valid, names non-empty, unique
// and not "__metadata__", metadata keys unique.
[[nodiscard]] absl::Status ValidateSafetensorsInput(const std::vector<NamedTensor>& tensors,
                                                    const SafetensorsMetadata& metadata = {});

// The complete file contents. Requires ValidateSafetensorsInput(...) to pass (asserted in
// debug builds); WriteSafetensorsFile checks it and returns the error instead.
std::string SerializeSafetensors(const std::vector<NamedTensor>& tensors, const SafetensorsMetadata& metadata = {});

// Parses complete file contents held in memory.
[[nodiscard]] absl::StatusOr<SafetensorsContents> ParseSafetensors(absl::string_view bytes);

// Validates, then writes atomically (WriteFileAtomic: the old file, if any, stays intact
// until the new one is complete and durable). Tensor bytes are not copied into one buffer.
[[nodiscard]] absl::Status WriteSafetensorsFile(const std::string& path, const std::vector<NamedTensor>& tensors,
                                                const SafetensorsMetadata& metadata = {});

// Reads and parses `path`; tensor bytes are read straight into the tensors' storage.
[[nodiscard]] absl::StatusOr<SafetensorsContents> ReadSafetensorsFile(const std::string& path);

}  // namespace pcp

#endif  // PCP_TENSOR_SAFETENSORS_H_
