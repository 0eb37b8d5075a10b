// SHA-256 (FIPS 180-4), for content hashes such as a training program's identity
// ("sha256:" + 64 lowercase hex digits, see protos/pcp/v1/training.proto Assignment).
//
//   std::string hex = Sha256Hex("abc");
//   // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
//
//   Sha256 h;                       // incremental, for data that arrives in pieces
//   h.Update(part1);
//   h.Update(part2);
//   std::array<uint8_t, 32> digest = h.Final();   // the hasher is spent afterwards
//
//   std::string id = Sha256ContentHash(program_text);   // "sha256:9f86d0..."
//
// A portable implementation (no SHA extensions): about 200-300 MB/s, plenty for hashing
// program texts of a few MB once per job.
#ifndef PCP_BASE_SHA256_H_
#define PCP_BASE_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace pcp {

class Sha256 {
 public:
  Sha256();
  // Appends bytes to the message.
  void Update(const void* data, size_t size);
  void Update(absl::string_view data) { Update(data.data(), data.size()); }
  // Pads, returns the 32-byte digest. Call once; Update/Final afterwards are not allowed.
  std::array<uint8_t, 32> Final();

 private:
  void Block(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// The digest of `data` as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view data);

// A content hash as PCP's protocol spells it (e.g. a program's identity):
// "sha256:" + Sha256Hex(data).
std::string Sha256ContentHash(absl::string_view data);

}  // namespace pcp

#endif  // PCP_BASE_SHA256_H_
