// The shepherd's job state stays bounded in bytes (issue 31, item 4): a real pcp-shepherd on
// loopback takes many submit-and-cancel cycles of jobs with large job files; its state
// folder and memory stay under a bound set by max_job_yaml_bytes and max_finished_job_yamls
// (finished jobs beyond the newest ones keep their record but not their file), a restart
// keeps every record and is quick, and a job file over max_job_yaml_bytes is refused.
// Prints RSS, state-folder bytes and restart time.
//
// PCP_JOB_STATE_CYCLES (default 300) and PCP_JOB_STATE_YAML_KIB (default 200) set the load;
// bench/job_state.sh runs 10,000 cycles.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "process_harness.h"

namespace pcp::testing {
namespace {

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  int64_t n = 0;
  return value != nullptr && absl::SimpleAtoi(value, &n) && n > 0 ? n : fallback;
}

struct FolderSize {
  int64_t bytes = 0;       // the files' sizes
  int64_t disk_bytes = 0;  // blocks allocated, folders included (what du counts)
  int64_t files = 0;
};
FolderSize SizeOf(const std::string& dir) {
  FolderSize size;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    struct stat st {};
    if (lstat(entry.path().c_str(), &st) != 0) continue;
    size.disk_bytes += static_cast<int64_t>(st.st_blocks) * 512;
    if (S_ISREG(st.st_mode)) {
      size.bytes += st.st_size;
      ++size.files;
    }
  }
  return size;
}

class JobStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TempDir> dir = TempDir::Create();
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<TempDir>(*std::move(dir));
    data_root_ = dir_->path() + "/data";
    std::filesystem::create_directories(data_root_);
    // A small data file: each submit reads and tokenizes it.
    absl::StatusOr<std::string> text = ReadFile(std::string(PCP_DATA_DIR) + "/tiny_shakespeare.txt");
    ASSERT_TRUE(text.ok()) << text.status();
    ASSERT_TRUE(WriteFileAtomic(data_root_ + "/small.txt", text->substr(0, 16384)).ok());
    cluster_ = std::make_unique<ClusterHarness>(dir_->path());
  }
  void TearDown() override {
    if (cluster_ != nullptr) {
      EXPECT_TRUE(cluster_->StopAll().ok()) << cluster_->Logs();
    }
  }
  void Start(std::vector<std::string> flags) {
    flags.push_back("--data_roots=" + data_root_);
    cluster_->SetShepherdFlags(std::move(flags));
    ASSERT_TRUE(cluster_->StartShepherd().ok()) << cluster_->Logs();
  }
  // A small valid job padded with comments to `bytes`.
  std::string Job(int64_t bytes) const {
    std::string yaml =
        absl::StrCat("model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 16}\n",
                     "training: {batch_size: 2, eval_iters: 2}\n", "data: {path: ", data_root_, "/small.txt}\n");
    const std::string line = "# " + std::string(1021, 'x') + "\n";  // 1 KiB
    while (static_cast<int64_t>(yaml.size() + line.size()) <= bytes) yaml += line;
    return yaml;
  }
  grpc::Status Submit(const std::string& yaml, v1::SubmitJobResponse* response) {
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(60));
    v1::SubmitJobRequest request;
    request.set_yaml(yaml);
    request.set_file_name("big.yaml");
    return cluster_->admin().SubmitJob(&context, request, response);
  }
  grpc::Status Cancel(const std::string& id) {
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(60));
    v1::CancelJobRequest request;
    request.set_job_id(id);
    v1::Job job;
    return cluster_->admin().CancelJob(&context, request, &job);
  }
  absl::StatusOr<v1::Job> Get(const std::string& id) {
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(60));
    v1::GetJobRequest request;
    request.set_job_id(id);
    v1::Job job;
    grpc::Status s = cluster_->admin().GetJob(&context, request, &job);
    if (!s.ok()) return absl::UnknownError(s.error_message());
    return job;
  }
  int64_t CountJobs() {
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(60));
    v1::ListJobsResponse response;
    grpc::Status s = cluster_->admin().ListJobs(&context, v1::ListJobsRequest(), &response);
    return s.ok() ? response.jobs_size() : -1;
  }

  std::unique_ptr<TempDir> dir_;
  std::string data_root_;
  std::unique_ptr<ClusterHarness> cluster_;
};

TEST_F(JobStateTest, SubmitCancelCyclesKeepStateBoundedAndRestartKeepsRecords) {
  const int64_t cycles = EnvInt("PCP_JOB_STATE_CYCLES", 300);
  const int64_t yaml_bytes = EnvInt("PCP_JOB_STATE_YAML_KIB", 200) * 1024;
  constexpr int64_t kMaxJobs = 1000, kKeptYamls = 100;
  Start({});
  const pid_t pid = cluster_->shepherd()->pid();
  const int64_t rss_start = RssKiB(pid);
  const std::string yaml = Job(yaml_bytes);
  const absl::Time load_start = absl::Now();
  std::string first_id, last_id;
  for (int64_t i = 0; i < cycles; ++i) {
    v1::SubmitJobResponse submitted;
    grpc::Status s = Submit(yaml, &submitted);
    ASSERT_TRUE(s.ok()) << "cycle " << i << ": " << s.error_message() << cluster_->Logs();
    ASSERT_TRUE(Cancel(submitted.job_id()).ok()) << "cycle " << i;
    if (first_id.empty()) first_id = submitted.job_id();
    last_id = submitted.job_id();
  }
  const double load_s = absl::ToDoubleSeconds(absl::Now() - load_start);
  const int64_t rss_loaded = RssKiB(pid);
  const FolderSize state = SizeOf(cluster_->state_dir());
  const int64_t kept = std::min(cycles, kMaxJobs);
  EXPECT_EQ(CountJobs(), kept);

  ASSERT_TRUE(cluster_->shepherd()->Stop().ok());
  const absl::Time restart_start = absl::Now();
  ASSERT_TRUE(cluster_->StartShepherd().ok()) << cluster_->Logs();
  const double restart_s = absl::ToDoubleSeconds(absl::Now() - restart_start);
  const int64_t rss_restarted = RssKiB(cluster_->shepherd()->pid());
  std::printf(
      "%lld submit/cancel cycles of %lld KiB job files in %.1f s: shepherd RSS %lld KiB at start, %lld KiB "
      "after; state folder %lld bytes in %lld files (%lld on disk); restart %.2f s to serving, RSS %lld KiB "
      "after it\n",
      static_cast<long long>(cycles), static_cast<long long>(yaml_bytes / 1024), load_s,
      static_cast<long long>(rss_start), static_cast<long long>(rss_loaded), static_cast<long long>(state.bytes),
      static_cast<long long>(state.files), static_cast<long long>(state.disk_bytes), restart_s,
      static_cast<long long>(rss_restarted));

  // The restart keeps every record.
  EXPECT_EQ(CountJobs(), kept);
  absl::StatusOr<v1::Job> last = Get(last_id);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_FALSE(last->effective_yaml().empty());  // among the newest finished: its file is kept
  if (cycles <= kMaxJobs) {
    absl::StatusOr<v1::Job> first = Get(first_id);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->state(), v1::JOB_STATE_CANCELLED);
    EXPECT_EQ(first->name(), "big");
    if (cycles > kKeptYamls) EXPECT_TRUE(first->effective_yaml().empty());  // its file was dropped
  }
  // The bound: the newest kKeptYamls files, and a few KiB of record per job kept.
  const int64_t bound = std::min(cycles, kKeptYamls) * yaml_bytes + kept * 16 * 1024 + (1 << 20);
  EXPECT_LT(state.bytes, bound);
  EXPECT_LT(state.disk_bytes, bound);
}

TEST_F(JobStateTest, AJobFileOverTheCapIsRefusedNamingIt) {
  Start({"--max_job_yaml_bytes=65536"});
  v1::SubmitJobResponse submitted;
  grpc::Status s = Submit(Job(70 * 1024), &submitted);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "max_job_yaml_bytes 65536")) << s.error_message();
  std::printf("refused: %s\n", s.error_message().c_str());
  EXPECT_TRUE(Submit(Job(60 * 1024), &submitted).ok());
  EXPECT_EQ(CountJobs(), 1);
}

}  // namespace
}  // namespace pcp::testing
