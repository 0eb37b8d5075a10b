// Test-only: the per-slot data streams of a job's checkpoint (state.json beside its
// ckpt.safetensors; pcp/shepherd/checkpoint_store.h), to check which shards were trained.
//
//   absl::StatusOr<std::vector<CheckpointSlot>> slots = ReadCheckpointSlots(job.checkpoint_path());
//   for (const CheckpointSlot& s : *slots) ...s.supervisor_id, s.sampler_cursor, s.rounds_done...
#ifndef PCP_TESTS_SERVICES_E2E_CHECKPOINT_SLOTS_H_
#define PCP_TESTS_SERVICES_E2E_CHECKPOINT_SLOTS_H_

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/json.h"

namespace pcp::testing {

struct CheckpointSlot {
  std::string supervisor_id;
  uint64_t sampler_cursor = 0;  // batches drawn from the slot's shard and used
  uint64_t rounds_done = 0;     // the slot's Δs that went into θ
};

// The slots of the checkpoint whose ckpt.safetensors is `checkpoint_path`.
inline absl::StatusOr<std::vector<CheckpointSlot>> ReadCheckpointSlots(const std::string& checkpoint_path) {
  const std::string path = (std::filesystem::path(checkpoint_path).parent_path() / "state.json").string();
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<Json> json = Json::Parse(text.str());
  if (!json.ok()) return json.status();
  const Json* slots = json->Find("slots");
  if (slots == nullptr || !slots->is_array()) return absl::InvalidArgumentError(absl::StrCat(path, ": no slots"));
  std::vector<CheckpointSlot> out;
  for (const Json& o : slots->array_items()) {
    CheckpointSlot s;
    const Json* id = o.Find("supervisor_id");
    const Json* cursor = o.Find("sampler_cursor");
    const Json* rounds = o.Find("rounds_done");
    if (id == nullptr || cursor == nullptr || rounds == nullptr || !id->is_string() || !cursor->is_string() ||
        !rounds->is_string() || !absl::SimpleAtoi(cursor->string_value(), &s.sampler_cursor) ||
        !absl::SimpleAtoi(rounds->string_value(), &s.rounds_done)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a malformed slot"));
    }
    s.supervisor_id = id->string_value();
    out.push_back(s);
  }
  return out;
}

}  // namespace pcp::testing

#endif  // PCP_TESTS_SERVICES_E2E_CHECKPOINT_SLOTS_H_
