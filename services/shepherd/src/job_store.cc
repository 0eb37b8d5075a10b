#include "pcp/shepherd/job_store.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "pcp/base/status_macros.h"
#include "pcp/v1/shepherd_state.pb.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

constexpr char kJobsFolder[] = "jobs";
constexpr char kYamlFile[] = "job.yaml";
constexpr char kHistoryFile[] = "history.pb";
constexpr char kStateFile[] = "state.pb";
// Shepherds before state.pb wrote {"file_name", "base_dir", "job": <Job as proto JSON>}.
constexpr char kLegacyStateFile[] = "state.json";

absl::StatusOr<StoredJob> ReadLegacyState(const std::string& path) {
  PCP_ASSIGN_OR_RETURN(std::string state_text, ReadFile(path));
  PCP_ASSIGN_OR_RETURN(Json doc, Json::Parse(state_text), _ << path);
  const Json* file_name = doc.Find("file_name");
  const Json* base_dir = doc.Find("base_dir");
  const Json* job = doc.Find("job");
  if (file_name == nullptr || !file_name->is_string() || base_dir == nullptr || !base_dir->is_string() ||
      job == nullptr || !job->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected file_name, base_dir and job"));
  }
  StoredJob stored;
  stored.file_name = file_name->string_value();
  stored.base_dir = base_dir->string_value();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto s = google::protobuf::util::JsonStringToMessage(job->Serialize(), &stored.job, options);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.ToString()));
  return stored;
}

absl::StatusOr<StoredJob> ReadState(const std::string& path) {
  PCP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  v1::StoredJobState state;
  if (!state.ParseFromString(bytes)) return absl::DataLossError(absl::StrCat(path, ": not a StoredJobState"));
  StoredJob stored;
  stored.file_name = state.file_name();
  stored.base_dir = state.base_dir();
  stored.job = std::move(*state.mutable_job());
  return stored;
}

absl::StatusOr<StoredJob> ReadJob(const std::string& dir, const std::string& id) {
  const std::string state_path = dir + "/" + kStateFile;
  absl::StatusOr<StoredJob> read =
      std::filesystem::exists(state_path) ? ReadState(state_path) : ReadLegacyState(dir + "/" + kLegacyStateFile);
  PCP_RETURN_IF_ERROR(read.status());
  StoredJob stored = *std::move(read);
  if (stored.job.job_id() != id) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": state names job '", stored.job.job_id(), "', not its folder's"));
  }
  const std::string yaml_path = dir + "/" + kYamlFile;
  const v1::JobState state = stored.job.state();
  if ((state == v1::JOB_STATE_COMPLETED || state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED) &&
      !std::filesystem::exists(yaml_path)) {
    stored.yaml_dropped = true;  // DropYaml: the record is the job now
    return stored;
  }
  PCP_ASSIGN_OR_RETURN(stored.yaml, ReadFile(yaml_path));
  return stored;
}

}  // namespace

std::string JobIdForSeq(int64_t seq) { return absl::StrFormat("job-%04d", seq); }

std::string JobStore::JobDir(const std::string& job_id) const {
  return absl::StrCat(state_dir_, "/", kJobsFolder, "/", job_id);
}

absl::Status JobStore::Create(const StoredJob& job) const {
  const std::string dir = JobDir(job.job.job_id());
  PCP_RETURN_IF_ERROR(MakeDirs(dir));
  PCP_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kYamlFile, job.yaml));
  return SaveState(job);
}

absl::Status JobStore::Remove(const std::string& job_id) const {
  const std::string dir = JobDir(job_id);
  std::error_code ec;
  // The state file first: a folder without one is not a job, so a crash part-way loses
  // nothing else.
  for (const char* file : {kStateFile, kLegacyStateFile}) {
    std::filesystem::remove(dir + "/" + file, ec);
    if (ec) return absl::InternalError(absl::StrCat("removing ", dir, "/", file, ": ", ec.message()));
  }
  std::filesystem::remove_all(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("removing ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status JobStore::DropYaml(const std::string& job_id) const {
  const std::string path = JobDir(job_id) + "/" + kYamlFile;
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("removing ", path, ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status JobStore::SaveState(const StoredJob& job) const {
  v1::StoredJobState state;
  state.set_file_name(job.file_name);
  state.set_base_dir(job.base_dir);
  *state.mutable_job() = job.job;
  state.mutable_job()->clear_effective_yaml();
  const std::string dir = JobDir(job.job.job_id());
  PCP_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kStateFile, state.SerializeAsString()));
  // A job from an older shepherd: state.pb supersedes its state.json from now on.
  std::error_code ec;
  std::filesystem::remove(dir + "/" + kLegacyStateFile, ec);
  return absl::OkStatus();
}

std::string JobStore::HistoryPath(const std::string& job_id) const {
  return absl::StrCat(JobDir(job_id), "/", kHistoryFile);
}

absl::StatusOr<std::vector<StoredJob>> JobStore::LoadAll(int64_t* max_seq) const {
  if (max_seq != nullptr) *max_seq = 0;
  const std::string root = absl::StrCat(state_dir_, "/", kJobsFolder);
  PCP_RETURN_IF_ERROR(MakeDirs(root));
  std::vector<StoredJob> jobs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string id = entry.path().filename().string();
    int64_t seq = 0;
    if (!entry.is_directory() || id.rfind("job-", 0) != 0 || !absl::SimpleAtoi(id.substr(4), &seq)) continue;
    if (max_seq != nullptr) *max_seq = std::max(*max_seq, seq);
    if (!std::filesystem::exists(entry.path() / kStateFile) &&
        !std::filesystem::exists(entry.path() / kLegacyStateFile)) {
      continue;  // submit interrupted
    }
    absl::StatusOr<StoredJob> job = ReadJob(entry.path().string(), id);
    if (!job.ok()) {
      spdlog::warn("skipping job folder {}: {}", entry.path().string(), job.status().message());
      continue;
    }
    job->seq = seq;
    jobs.push_back(*std::move(job));
  }
  if (ec) return absl::UnavailableError(absl::StrCat("listing '", root, "': ", ec.message()));
  std::sort(jobs.begin(), jobs.end(), [](const StoredJob& a, const StoredJob& b) { return a.seq < b.seq; });
  return jobs;
}

}  // namespace pcp::shepherd
