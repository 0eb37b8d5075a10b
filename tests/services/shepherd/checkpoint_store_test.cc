// DiLoCo checkpoints: round trip of θ, outer momentum and run state; LATEST moves only once a
// folder is complete; old folders are pruned; mismatches are errors, not silent resumes.
#include "pcp/shepherd/checkpoint_store.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/training/checkpoint.h"
#include "process_harness.h"

namespace pcp::shepherd {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kNames = {"transformer.wte.weight", "transformer.ln_f.weight"};

DilocoCheckpoint Make(uint64_t round, float v) {
  DilocoCheckpoint c;
  c.state.round = round;
  c.state.program_hash = "sha256:abc";
  c.state.slots = {{.supervisor_id = "node-1",
                    .sampler_seed = 0xfedcba9876543210ULL,
                    .sampler_cursor = round * 10,
                    .rounds_done = round},
                   {.supervisor_id = "", .sampler_seed = 7, .sampler_cursor = 0, .rounds_done = 0}};
  c.state.tokens_processed = round * 1280;
  c.state.train_loss = 3.25;
  c.state.val_round = round;
  c.state.screen_medians = {0.125, 2.5, 1e-3 * static_cast<double>(round) + 0.1};
  c.params = {Tensor::FromVector<float>({2, 2}, {v, v + 1, v + 2, v + 3}), Tensor::FromVector<float>({2}, {1, 1})};
  c.momentum = {Tensor::FromVector<float>({2, 2}, {0.5f, 0, 0, -0.5f}), Tensor::FromVector<float>({2}, {0, v})};
  return c;
}

TEST(CheckpointStoreTest, RoundTripAndPruning) {
  absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcp-ckpt");
  ASSERT_TRUE(dir.ok());
  const std::string job_dir = dir->path();
  absl::StatusOr<std::optional<DilocoCheckpoint>> none = ReadLatestDilocoCheckpoint(job_dir, kNames);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(LatestCheckpointPath(job_dir), "");

  for (uint64_t r : {2, 4, 6}) {
    absl::StatusOr<std::string> path = WriteDilocoCheckpoint(job_dir, kNames, Make(r, r), {{"pcp.model", "{}"}});
    ASSERT_TRUE(path.ok()) << path.status();
    EXPECT_EQ(*path, LatestCheckpointPath(job_dir));
  }
  EXPECT_FALSE(std::filesystem::exists(job_dir + "/checkpoints/round-000002"));
  EXPECT_TRUE(std::filesystem::exists(job_dir + "/checkpoints/round-000004"));
  absl::StatusOr<std::optional<DilocoCheckpoint>> latest = ReadLatestDilocoCheckpoint(job_dir, kNames);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  const DilocoCheckpoint& c = **latest;
  EXPECT_EQ(c.state, Make(6, 6).state);
  EXPECT_THAT(c.params[0].ToVector<float>(), ::testing::ElementsAre(6, 7, 8, 9));
  EXPECT_THAT(c.momentum[1].ToVector<float>(), ::testing::ElementsAre(0, 6));
  // The params file is a model checkpoint any PCP tool reads (nanoGPT names + lm_head).
  absl::StatusOr<ModelCheckpoint> model = ReadModelCheckpoint(LatestCheckpointPath(job_dir));
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->Meta("pcp.round"), "6");
}

TEST(CheckpointStoreTest, MismatchesAreErrors) {
  absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcp-ckpt");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(WriteDilocoCheckpoint(dir->path(), kNames, Make(3, 1), {}).ok());
  absl::Status missing = ReadLatestDilocoCheckpoint(dir->path(), {"transformer.wte.weight", "other"}).status();
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.message()), HasSubstr("other"));
  // A state file of another round than the parameters: refused.
  ASSERT_TRUE(
      WriteFileAtomic(
          dir->path() + "/checkpoints/round-000003/state.json",
          "{\"round\":\"9\",\"program_hash\":\"x\",\"slots\":[],\"tokens_processed\":\"0\",\"val_round\":\"0\"}")
          .ok());
  absl::Status mixed = ReadLatestDilocoCheckpoint(dir->path(), kNames).status();
  EXPECT_EQ(mixed.code(), absl::StatusCode::kDataLoss);
  // A state written before screening kept its history reads with none; a malformed one is refused.
  const std::string old_state =
      "{\"round\":\"3\",\"program_hash\":\"x\",\"slots\":[],\"tokens_processed\":\"0\",\"val_round\":\"0\"";
  ASSERT_TRUE(WriteFileAtomic(dir->path() + "/checkpoints/round-000003/state.json", old_state + "}").ok());
  absl::StatusOr<std::optional<DilocoCheckpoint>> old = ReadLatestDilocoCheckpoint(dir->path(), kNames);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE((*old)->state.screen_medians.empty());
  ASSERT_TRUE(WriteFileAtomic(dir->path() + "/checkpoints/round-000003/state.json",
                              old_state + ",\"screen_medians\":[1,\"x\"]}")
                  .ok());
  absl::Status bad = ReadLatestDilocoCheckpoint(dir->path(), kNames).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("screen_medians"));
  ASSERT_TRUE(WriteFileAtomic(dir->path() + "/checkpoints/LATEST", "../../etc\n").ok());
  EXPECT_EQ(ReadLatestDilocoCheckpoint(dir->path(), kNames).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteDilocoCheckpoint(dir->path(), {"a"}, Make(1, 1), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pcp::shepherd
