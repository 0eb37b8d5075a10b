#include "pcp/shepherd/job_store.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/absl_fmt.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

constexpr char kJobsFolder[] = "jobs";
constexpr char kYamlFile[] = "job.yaml";
constexpr char kStateFile[] = "state.json";

absl::StatusOr<std::string> StateJson(const StoredJob& stored) {
  v1::Job job = stored.job;
  job.clear_effective_yaml();
  std::string proto_json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  auto s = google::protobuf::util::MessageToJsonString(job, &proto_json, options);
  if (!s.ok()) return absl::InternalError(absl::StrCat("encoding job ", job.job_id(), ": ", s.ToString()));
  PCP_ASSIGN_OR_RETURN(Json job_json, Json::Parse(proto_json));
  Json doc = Json::Object();
  doc.Set("file_name", stored.file_name);
  doc.Set("base_dir", stored.base_dir);
  doc.Set("job", std::move(job_json));
  return doc.Serialize() + "\n";
}

absl::StatusOr<StoredJob> ReadJob(const std::string& dir, const std::string& id) {
  PCP_ASSIGN_OR_RETURN(std::string state_text, ReadFile(dir + "/" + kStateFile));
  PCP_ASSIGN_OR_RETURN(Json doc, Json::Parse(state_text), _ << dir << "/" << kStateFile);
  const Json* file_name = doc.Find("file_name");
  const Json* base_dir = doc.Find("base_dir");
  const Json* job = doc.Find("job");
  if (file_name == nullptr || !file_name->is_string() || base_dir == nullptr || !base_dir->is_string() ||
      job == nullptr || !job->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "/", kStateFile, ": expected file_name, base_dir and job"));
  }
  StoredJob stored;
  stored.file_name = file_name->string_value();
  stored.base_dir = base_dir->string_value();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto s = google::protobuf::util::JsonStringToMessage(job->Serialize(), &stored.job, options);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(dir, "/", kStateFile, ": ", s.ToString()));
  if (stored.job.job_id() != id) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, "/", kStateFile, ": job id '", stored.job.job_id(), "' does not match its folder"));
  }
  PCP_ASSIGN_OR_RETURN(stored.yaml, ReadFile(dir + "/" + kYamlFile));
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
  // state.json first: a folder without it is not a job, so a crash part-way loses nothing else.
  std::filesystem::remove(dir + "/" + kStateFile, ec);
  if (ec) return absl::InternalError(absl::StrCat("removing ", dir, "/", kStateFile, ": ", ec.message()));
  std::filesystem::remove_all(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("removing ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status JobStore::SaveState(const StoredJob& job) const {
  PCP_ASSIGN_OR_RETURN(std::string text, StateJson(job));
  return WriteFileAtomic(JobDir(job.job.job_id()) + "/" + kStateFile, text);
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
    if (!std::filesystem::exists(entry.path() / kStateFile)) continue;  // submit interrupted
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
