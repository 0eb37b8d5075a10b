#include "pcp/shepherd/checkpoint_store.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "pcp/base/status_macros.h"
#include "pcp/training/checkpoint.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

namespace fs = std::filesystem;

constexpr char kFolder[] = "checkpoints";
constexpr char kLatest[] = "LATEST";
constexpr char kParamsFile[] = "ckpt.safetensors";
constexpr char kOuterFile[] = "outer.safetensors";
constexpr char kStateFile[] = "state.json";
constexpr char kMomentumPrefix[] = "momentum.";
constexpr int kKeep = 2;

std::string Root(const std::string& job_dir) { return absl::StrCat(job_dir, "/", kFolder); }

// Unsigned integers are stored as JSON strings: they may exceed 2^63 (sampler seeds).
Json U64(uint64_t v) { return Json(absl::StrCat(v)); }

absl::StatusOr<uint64_t> ReadU64(const Json& obj, absl::string_view key, absl::string_view where) {
  const Json* v = obj.Find(key);
  uint64_t out = 0;
  if (v == nullptr || !v->is_string() || !absl::SimpleAtoi(v->string_value(), &out)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": '", key, "' must be an unsigned integer string"));
  }
  return out;
}

std::string StateToJson(const RunState& s) {
  Json j = Json::Object();
  j.Set("round", U64(s.round));
  j.Set("program_hash", s.program_hash);
  Json slots = Json::Array();
  for (const SlotState& slot : s.slots) {
    Json o = Json::Object();
    o.Set("supervisor_id", slot.supervisor_id);
    o.Set("sampler_seed", U64(slot.sampler_seed));
    o.Set("sampler_cursor", U64(slot.sampler_cursor));
    o.Set("rounds_done", U64(slot.rounds_done));
    slots.Append(std::move(o));
  }
  j.Set("slots", std::move(slots));
  j.Set("tokens_processed", U64(s.tokens_processed));
  if (s.train_loss) j.Set("train_loss", *s.train_loss);
  if (s.val_loss) j.Set("val_loss", *s.val_loss);
  j.Set("val_round", U64(s.val_round));
  Json medians = Json::Array();
  for (double m : s.screen_medians) medians.Append(Json(m));
  j.Set("screen_medians", std::move(medians));
  return j.Serialize() + "\n";
}

absl::StatusOr<RunState> StateFromJson(absl::string_view text, const std::string& where) {
  PCP_ASSIGN_OR_RETURN(Json j, Json::Parse(text), _ << where);
  RunState s;
  PCP_ASSIGN_OR_RETURN(s.round, ReadU64(j, "round", where));
  PCP_ASSIGN_OR_RETURN(s.tokens_processed, ReadU64(j, "tokens_processed", where));
  PCP_ASSIGN_OR_RETURN(s.val_round, ReadU64(j, "val_round", where));
  const Json* hash = j.Find("program_hash");
  const Json* slots = j.Find("slots");
  if (hash == nullptr || !hash->is_string() || slots == nullptr || !slots->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected program_hash and slots"));
  }
  s.program_hash = hash->string_value();
  for (const Json& o : slots->array_items()) {
    SlotState slot;
    const Json* id = o.Find("supervisor_id");
    if (id == nullptr || !id->is_string())
      return absl::InvalidArgumentError(absl::StrCat(where, ": slot without supervisor_id"));
    slot.supervisor_id = id->string_value();
    PCP_ASSIGN_OR_RETURN(slot.sampler_seed, ReadU64(o, "sampler_seed", where));
    PCP_ASSIGN_OR_RETURN(slot.sampler_cursor, ReadU64(o, "sampler_cursor", where));
    PCP_ASSIGN_OR_RETURN(slot.rounds_done, ReadU64(o, "rounds_done", where));
    s.slots.push_back(std::move(slot));
  }
  if (const Json* v = j.Find("train_loss"); v != nullptr && v->is_number()) s.train_loss = v->number_value();
  if (const Json* v = j.Find("val_loss"); v != nullptr && v->is_number()) s.val_loss = v->number_value();
  // Absent in checkpoints written before screening kept its history.
  if (const Json* v = j.Find("screen_medians"); v != nullptr) {
    if (!v->is_array()) return absl::InvalidArgumentError(absl::StrCat(where, ": 'screen_medians' must be an array"));
    for (const Json& m : v->array_items()) {
      if (!m.is_number())
        return absl::InvalidArgumentError(absl::StrCat(where, ": 'screen_medians' must hold numbers"));
      s.screen_medians.push_back(m.number_value());
    }
  }
  return s;
}

absl::StatusOr<std::vector<Tensor>> InOrder(const SafetensorsContents& contents, const std::vector<std::string>& names,
                                            absl::string_view prefix, const std::string& where) {
  std::vector<Tensor> out;
  for (const std::string& n : names) {
    const Tensor* t = contents.Find(absl::StrCat(prefix, n));
    if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat(where, ": no tensor '", prefix, n, "'"));
    out.push_back(*t);
  }
  return out;
}

void RemoveOld(const std::string& root) {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind("round-", 0) == 0) dirs.push_back(name);
  }
  std::sort(dirs.begin(), dirs.end());  // zero-padded: lexical order is round order
  for (size_t i = 0; i + kKeep < dirs.size(); ++i) fs::remove_all(fs::path(root) / dirs[i], ec);
}

}  // namespace

absl::StatusOr<std::string> WriteDilocoCheckpoint(const std::string& job_dir, const std::vector<std::string>& names,
                                                  const DilocoCheckpoint& ckpt, SafetensorsMetadata metadata) {
  if (ckpt.params.size() != names.size() || ckpt.momentum.size() != names.size()) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint: ", names.size(), " names, ", ckpt.params.size(),
                                                   " parameters, ", ckpt.momentum.size(), " momentum tensors"));
  }
  const std::string root = Root(job_dir);
  const std::string folder = absl::StrFormat("round-%06d", ckpt.state.round);
  const std::string dir = absl::StrCat(root, "/", folder);
  PCP_RETURN_IF_ERROR(MakeDirs(dir));
  metadata.push_back({"pcp.round", absl::StrCat(ckpt.state.round)});
  const std::string params_path = absl::StrCat(dir, "/", kParamsFile);
  PCP_RETURN_IF_ERROR(WriteModelCheckpoint(params_path, names, ckpt.params, std::move(metadata)));
  std::vector<NamedTensor> momentum;
  for (size_t i = 0; i < names.size(); ++i)
    momentum.push_back({absl::StrCat(kMomentumPrefix, names[i]), ckpt.momentum[i]});
  PCP_RETURN_IF_ERROR(
      WriteSafetensorsFile(absl::StrCat(dir, "/", kOuterFile), momentum,
                           {{"pcp.format", "pcp-outer-momentum-1"}, {"pcp.round", absl::StrCat(ckpt.state.round)}}));
  PCP_RETURN_IF_ERROR(WriteFileAtomic(absl::StrCat(dir, "/", kStateFile), StateToJson(ckpt.state)));
  PCP_RETURN_IF_ERROR(WriteFileAtomic(absl::StrCat(root, "/", kLatest), folder + "\n"));
  RemoveOld(root);
  return params_path;
}

std::string LatestCheckpointPath(const std::string& job_dir) {
  absl::StatusOr<std::string> latest = ReadFile(absl::StrCat(Root(job_dir), "/", kLatest));
  if (!latest.ok()) return "";
  return absl::StrCat(Root(job_dir), "/", absl::StripAsciiWhitespace(*latest), "/", kParamsFile);
}

absl::StatusOr<std::optional<DilocoCheckpoint>> ReadLatestDilocoCheckpoint(const std::string& job_dir,
                                                                           const std::vector<std::string>& names) {
  const std::string latest_path = absl::StrCat(Root(job_dir), "/", kLatest);
  absl::StatusOr<std::string> latest = ReadFile(latest_path);
  if (absl::IsNotFound(latest.status())) return std::nullopt;
  PCP_RETURN_IF_ERROR(latest.status());
  const std::string folder(absl::StripAsciiWhitespace(*latest));
  if (folder.rfind("round-", 0) != 0 || folder.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(latest_path, ": expected a folder name round-NNNNNN"));
  }
  const std::string dir = absl::StrCat(Root(job_dir), "/", folder);
  DilocoCheckpoint ckpt;
  PCP_ASSIGN_OR_RETURN(std::string state_text, ReadFile(absl::StrCat(dir, "/", kStateFile)));
  PCP_ASSIGN_OR_RETURN(ckpt.state, StateFromJson(state_text, absl::StrCat(dir, "/", kStateFile)));
  PCP_ASSIGN_OR_RETURN(ModelCheckpoint model, ReadModelCheckpoint(absl::StrCat(dir, "/", kParamsFile)));
  PCP_ASSIGN_OR_RETURN(ckpt.params, ParamsInOrder(model, names), _ << dir << "/" << kParamsFile);
  ckpt.model_source = model.Meta("pcp.model");
  const std::string outer_path = absl::StrCat(dir, "/", kOuterFile);
  PCP_ASSIGN_OR_RETURN(SafetensorsContents outer, ReadSafetensorsFile(outer_path));
  PCP_ASSIGN_OR_RETURN(ckpt.momentum, InOrder(outer, names, kMomentumPrefix, outer_path));
  if (model.Meta("pcp.round") != absl::StrCat(ckpt.state.round)) {
    return absl::DataLossError(absl::StrCat(dir, ": parameters are of round '", model.Meta("pcp.round"),
                                            "' but the state is of round ", ckpt.state.round));
  }
  return ckpt;
}

}  // namespace pcp::shepherd
