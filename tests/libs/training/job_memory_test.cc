#include "pcp/training/job_memory.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/models/gpt.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

int64_t RealParameterCount(const GPTConfig& c) {
  absl::StatusOr<std::vector<NamedTensor>> params = InitGptParams(c, 1);
  EXPECT_TRUE(params.ok()) << params.status();
  int64_t n = 0;
  for (const NamedTensor& p : *params) n += p.tensor.num_elements();
  return n;
}

TEST(JobMemoryTest, ParameterCountIsTheModelsExactly) {
  for (bool bias : {false, true}) {
    JobConfig job;
    job.model = ModelConfig{.vocab_size = 65, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32, .bias = bias};
    absl::StatusOr<JobMemoryEstimate> need = EstimateJobMemory(job);
    ASSERT_TRUE(need.ok()) << need.status();
    EXPECT_EQ(need->parameters, RealParameterCount(job.model.ToGPTConfig())) << "bias " << bias;
    // At least θ, gradient, m, v at a worker; θ, momentum and one Δ per worker at the shepherd.
    EXPECT_GE(need->worker_bytes, 4 * 4 * need->parameters);
    EXPECT_GE(need->shepherd_bytes, 4 * (2 + job.diloco.workers) * need->parameters);
  }
}

TEST(JobMemoryTest, StreamingAggregationHoldsOneSumInsteadOfADeltaPerWorker) {
  JobConfig job;
  job.model = ModelConfig{.vocab_size = 50304, .block_size = 64, .n_layer = 12, .n_head = 12, .n_embd = 768};
  job.diloco.workers = 64;
  job.diloco.aggregation = diloco::Aggregation::kBuffered;
  absl::StatusOr<JobMemoryEstimate> buffered = EstimateJobMemory(job);
  job.diloco.aggregation = diloco::Aggregation::kAuto;  // 64 × 124M × 4 B is far over 256 MiB: streams
  absl::StatusOr<JobMemoryEstimate> streamed = EstimateJobMemory(job);
  ASSERT_TRUE(buffered.ok() && streamed.ok());
  EXPECT_EQ(buffered->shepherd_bytes - streamed->shepherd_bytes, 4 * 63 * streamed->parameters);
  EXPECT_LT(streamed->shepherd_bytes, 6 * 4 * streamed->parameters);  // θ, momentum, snapshot, the sum, a batch
  job.diloco.workers = 2;                                             // small enough to stay buffered under auto
  job.model.n_layer = 1;
  job.model.vocab_size = 65;
  absl::StatusOr<JobMemoryEstimate> small = EstimateJobMemory(job);
  ASSERT_TRUE(small.ok());
  EXPECT_GE(small->shepherd_bytes, 4 * (3 + 2) * small->parameters);
}

TEST(JobMemoryTest, BudgetsNameTheEstimateAndTheBudget) {
  JobConfig job;
  job.name = "big";
  job.model.vocab_size = 65;
  job.model.n_layer = 1024;
  job.model.n_embd = 1 << 20;
  absl::StatusOr<JobMemoryEstimate> need = EstimateJobMemory(job);
  ASSERT_TRUE(need.ok()) << need.status();
  EXPECT_GT(need->parameters, int64_t{10'000'000'000'000'000});  // 1.35e16
  absl::Status s = CheckMemoryBudgets(*need, MemoryBudgets{.worker_bytes = int64_t{8} << 30});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("job 'big' needs an estimated"));
  EXPECT_THAT(Message(s), HasSubstr("over the worker memory budget of 8.0 GiB (8589934592 bytes)"));
  absl::Status shepherd = CheckMemoryBudgets(*need, MemoryBudgets{.shepherd_bytes = 1 << 30});
  EXPECT_THAT(Message(shepherd), HasSubstr("over the shepherd memory budget of 1.0 GiB"));

  JobConfig small;
  need = EstimateJobMemory(small);
  ASSERT_TRUE(need.ok());
  EXPECT_TRUE(CheckMemoryBudgets(*need, MemoryBudgets{.worker_bytes = 1 << 30, .shepherd_bytes = 1 << 30}).ok());
  EXPECT_TRUE(CheckMemoryBudgets(*need, MemoryBudgets{}).ok());  // 0: unchecked
}

TEST(JobMemoryTest, OverflowingShapesAreInvalidArgument) {
  JobConfig job;
  job.model.block_size = 1 << 20;
  job.model.n_head = 1 << 14;
  job.model.n_embd = 1 << 20;
  job.training.batch_size = 1 << 20;
  absl::StatusOr<JobMemoryEstimate> need = EstimateJobMemory(job);
  EXPECT_EQ(need.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(need.status()), HasSubstr("overflow"));
}

TEST(JobMemoryTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 40), "3.0 TiB");
}

}  // namespace
}  // namespace pcp
