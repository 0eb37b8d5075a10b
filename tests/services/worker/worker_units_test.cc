// The worker's parts without a shepherd: reconnect backoff, shard loading (inline and shared
// files), the program cache (hash checks, disk), and one DiLoCo round on the CPU backend
// against the same steps run by hand.
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/file.h"
#include "pcp/base/sha256.h"
#include "pcp/kernels/backend_factory.h"
#include "pcp/models/gpt.h"
#include "pcp/training/gpt_program.h"
#include "pcp/worker/program_cache.h"
#include "pcp/worker/round_runner.h"
#include "pcp/worker/shard_loader.h"
#include "process_harness.h"

namespace pcp::worker {
namespace {

using ::testing::HasSubstr;

TEST(ShardLoaderTest, InlineTokens) {
  v1::DataShard shard;
  shard.mutable_inline_tokens()->set_encoding(v1::TOKEN_ENCODING_U16_LE);
  shard.mutable_inline_tokens()->set_num_tokens(3);
  const std::string bytes("\x01\x00\x02\x01\xff\xff", 6);
  absl::StatusOr<TokenSequence> t = LoadShard(shard, bytes, DataRoots());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->ToVector(), ::testing::ElementsAre(1, 258, 65535));
  absl::Status wrong = LoadShard(shard, bytes.substr(0, 4), DataRoots()).status();
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong.message()), HasSubstr("4 bytes for 3 tokens"));
  EXPECT_FALSE(LoadShard(v1::DataShard(), "", DataRoots()).ok());
}

TEST(ShardLoaderTest, SharedFiles) {
  absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcp-shard");
  ASSERT_TRUE(dir.ok());
  const std::string text_path = dir->path() + "/t.txt";
  ASSERT_TRUE(WriteFileAtomic(text_path, "abcabcxyz").ok());
  const DataRoots roots = *DataRoots::Confined({dir->path()});
  v1::DataShard shard;
  v1::SharedFileShard* s = shard.mutable_shared_file();
  s->set_path(text_path);
  s->set_format(v1::SHARED_FILE_FORMAT_TEXT_CHAR);
  s->set_char_vocabulary("abcxyz");
  s->set_begin_token(2);
  s->set_end_token(7);
  absl::StatusOr<TokenSequence> t = LoadShard(shard, "", roots);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->ToVector(), ::testing::ElementsAre(2, 0, 1, 2, 3));  // "cabcx"
  s->set_format(v1::SHARED_FILE_FORMAT_TEXT_BYTE);
  t = LoadShard(shard, "", roots);
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(t->ToVector(), ::testing::ElementsAre('c', 'a', 'b', 'c', 'x'));
  s->set_end_token(100);
  EXPECT_THAT(std::string(LoadShard(shard, "", roots).status().message()), HasSubstr("the shard ends at 100"));
  s->set_format(v1::SHARED_FILE_FORMAT_TEXT_CHAR);
  s->set_end_token(7);
  s->set_char_vocabulary("ab");  // 'c' is not in it
  EXPECT_FALSE(LoadShard(shard, "", roots).ok());
  const std::string bin_path = dir->path() + "/train.bin";
  ASSERT_TRUE(WriteTokenBin(bin_path, TokenSequence(std::vector<uint16_t>{5, 6, 7, 8, 9})).ok());
  s->set_path(bin_path);
  s->set_format(v1::SHARED_FILE_FORMAT_TOKENS_U16_LE);
  s->set_begin_token(1);
  s->set_end_token(4);
  t = LoadShard(shard, "", roots);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->ToVector(), ::testing::ElementsAre(6, 7, 8));

  // The shepherd names the path; the worker reads only inside its own roots, and says the
  // same whether the file outside exists or not.
  const DataRoots elsewhere = *DataRoots::Confined({dir->path() + "/sub"});
  absl::Status refused = LoadShard(shard, "", elsewhere).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(std::string(refused.message()), elsewhere.RefusalMessage(bin_path));
  for (const std::string path : {"/etc/passwd", "/etc/no_such_file", "/proc/self/environ", "/dev/zero"}) {
    s->set_path(path);
    s->set_format(v1::SHARED_FILE_FORMAT_TEXT_BYTE);
    refused = LoadShard(shard, "", roots).status();
    EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << path;
    EXPECT_EQ(std::string(refused.message()), roots.RefusalMessage(path));
  }
}

// A tiny GPT's train_step as the shepherd sends it.
struct TinyProgram {
  GPTConfig model{.vocab_size = 16, .block_size = 8, .n_layer = 1, .n_head = 2, .n_embd = 8};
  GptProgram program;
  std::string text;
  std::string hash;
};
TinyProgram MakeTinyProgram() {
  TinyProgram t;
  absl::StatusOr<GptProgram> p = BuildGptProgram(t.model, /*batch_size=*/2, AdamWConfig{.grad_clip = 1.0});
  EXPECT_TRUE(p.ok()) << p.status();
  t.program = *std::move(p);
  t.text = PrintFunction(t.program.train_step);
  t.hash = Sha256ContentHash(t.text);
  return t;
}

TEST(ProgramCacheTest, ChecksHashesAndKeepsTextsOnDisk) {
  absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcp-cache");
  ASSERT_TRUE(dir.ok());
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  TinyProgram tiny = MakeTinyProgram();
  {
    ProgramCache cache(**backend, dir->path());
    EXPECT_TRUE(cache.Hashes().empty());
    absl::Status bad = cache.AddText("sha256:" + std::string(64, '0'), tiny.text);
    EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(bad.message()), HasSubstr("hashes to " + tiny.hash));
    EXPECT_EQ(cache.Get(tiny.hash).status().code(), absl::StatusCode::kNotFound);
    ASSERT_TRUE(cache.AddText(tiny.hash, tiny.text).ok());
    absl::StatusOr<ProgramCache::Entry*> e = cache.Get(tiny.hash);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ((*e)->loop->num_params(), static_cast<int>(tiny.program.train_step.params.size() - 4) / 3);
    EXPECT_THAT(cache.Hashes(), ::testing::ElementsAre(tiny.hash));
  }
  // A new process (new cache) finds the text on disk and compiles it without a transfer.
  ProgramCache again(**backend, dir->path());
  EXPECT_THAT(again.Hashes(), ::testing::ElementsAre(tiny.hash));
  absl::StatusOr<ProgramCache::Entry*> e = again.Get(tiny.hash);
  ASSERT_TRUE(e.ok()) << e.status();
  // A corrupt file is detected and removed.
  ProgramCache third(**backend, dir->path());
  const std::string file = dir->path() + "/" + tiny.hash.substr(7) + ".mlir";
  ASSERT_TRUE(WriteFileAtomic(file, tiny.text + " ").ok());
  EXPECT_EQ(third.Get(tiny.hash).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(std::filesystem::exists(file));
}

// The tiny model's initial θ (seed 3); empty, with a test failure, if it cannot be made.
std::vector<Tensor> InitialTheta(const TinyProgram& tiny) {
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(tiny.model, 3);
  std::vector<Tensor> theta;
  if (!init.ok()) {
    ADD_FAILURE() << init.status();
    return theta;
  }
  for (NamedTensor& t : *init) theta.push_back(t.tensor);
  return theta;
}

// 500 tokens over the tiny model's 16-token vocabulary.
TokenSequence TinyShard() {
  std::vector<uint16_t> ids;
  for (int i = 0; i < 500; ++i) ids.push_back(static_cast<uint16_t>((i * 7 + i / 13) % 16));
  return TokenSequence(std::move(ids));
}

TEST(RoundRunnerTest, DeltaIsStartMinusEndOfTheSameStepsRunByHand) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  TinyProgram tiny = MakeTinyProgram();
  const std::vector<Tensor> theta = InitialTheta(tiny);
  ASSERT_FALSE(theta.empty());
  const TokenSequence shard = TinyShard();

  RoundInput in{.round = 4,
                .theta = theta,
                .reset_optimizer = true,
                .learning_rates = {1e-2f, 2e-2f, 3e-2f},
                .sampler_seed = 99,
                .sampler_cursor = 10,
                .batch_size = 2,
                .block_size = 8};
  absl::StatusOr<std::unique_ptr<InnerLoop>> loop = InnerLoop::Create(**backend, tiny.program.train_step);
  ASSERT_TRUE(loop.ok());
  absl::StatusOr<RoundOutput> out = RunRound(**loop, shard, in, [](uint32_t) { return true; });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->complete);
  EXPECT_EQ(out->result.round(), 4u);
  EXPECT_EQ(out->result.steps(), 3u);
  EXPECT_EQ(out->result.tokens_processed(), 3u * 2 * 8);
  EXPECT_EQ(out->result.sampler_cursor(), 13u);
  EXPECT_GT(out->result.tokens_per_second(), 0);

  // By hand on a fresh loop: the same batches (seed 99, cursors 10..12) and rates.
  absl::StatusOr<std::unique_ptr<InnerLoop>> ref = InnerLoop::Create(**backend, tiny.program.train_step);
  ASSERT_TRUE(ref.ok());
  ASSERT_TRUE((*ref)->SetParams(theta).ok());
  BatchSampler sampler(99, 10);
  double loss_sum = 0;
  for (float lr : in.learning_rates) {
    absl::StatusOr<Batch> b = sampler.Next(shard, 2, 8);
    ASSERT_TRUE(b.ok());
    absl::StatusOr<float> loss = (*ref)->Step(*b, lr);
    ASSERT_TRUE(loss.ok());
    loss_sum += *loss;
  }
  EXPECT_NEAR(out->result.mean_loss(), loss_sum / 3, 1e-6);
  absl::StatusOr<std::vector<Tensor>> end = (*ref)->GetParams();
  ASSERT_TRUE(end.ok());
  ASSERT_EQ(out->delta.size(), theta.size());
  double moved = 0;
  for (size_t i = 0; i < theta.size(); ++i) {
    for (int64_t k = 0; k < theta[i].num_elements(); ++k) {
      const float want = theta[i].data<float>()[k] - (*end)[i].data<float>()[k];
      ASSERT_EQ(out->delta[i].data<float>()[k], want) << "tensor " << i << " element " << k;
      moved += std::abs(want);
    }
  }
  EXPECT_GT(moved, 0);

  // The next round keeps AdamW's state (step count 3 -> 4), unlike reset_optimizer.
  in.reset_optimizer = false;
  in.round = 5;
  in.sampler_cursor = 13;
  out = RunRound(**loop, shard, in, [](uint32_t) { return true; });
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*loop)->step(), 6);

  // Stopping early: no delta, the steps done reported.
  in.round = 6;
  out = RunRound(**loop, shard, in, [](uint32_t done) { return done < 1; });
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->complete);
  EXPECT_TRUE(out->delta.empty());
  EXPECT_EQ(out->result.steps(), 1u);

  // θ that does not fit the program.
  in.theta.pop_back();
  EXPECT_FALSE(RunRound(**loop, shard, in, [](uint32_t) { return true; }).ok());
}

TEST(RoundRunnerTest, TakeAnotherStepRunsMinStepsThenWhatFitsTheBudget) {
  // No budget: every learning rate.
  EXPECT_TRUE(TakeAnotherStep(0, 0, 3, 2, 1e9));
  EXPECT_FALSE(TakeAnotherStep(0, 0, 3, 3, 0));
  // Below min_steps: whatever the time.
  EXPECT_TRUE(TakeAnotherStep(100, 2, 5, 1, 1e6));
  // Past it: the next step (at the mean so far) must end within the budget.
  EXPECT_TRUE(TakeAnotherStep(100, 2, 5, 2, 60));   // 60 + 30 <= 100
  EXPECT_FALSE(TakeAnotherStep(100, 2, 5, 2, 80));  // 80 + 40 > 100
  EXPECT_FALSE(TakeAnotherStep(1e9, 2, 5, 5, 10));  // never past max_steps
}

TEST(RoundRunnerTest, TimeBudgetStopsAtMinStepsOrRunsToMaxAndSlowFactorStretchesSteps) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateBackend("cpu", 1);
  ASSERT_TRUE(backend.ok());
  TinyProgram tiny = MakeTinyProgram();
  const std::vector<Tensor> theta = InitialTheta(tiny);
  ASSERT_FALSE(theta.empty());
  const TokenSequence shard = TinyShard();
  absl::StatusOr<std::unique_ptr<InnerLoop>> loop = InnerLoop::Create(**backend, tiny.program.train_step);
  ASSERT_TRUE(loop.ok());

  // A budget spent by the first step: exactly min_steps run, and the round is complete.
  RoundInput in{.round = 1,
                .theta = theta,
                .reset_optimizer = true,
                .learning_rates = {1e-2f, 1e-2f, 1e-2f, 1e-2f, 1e-2f},
                .sampler_seed = 5,
                .sampler_cursor = 7,
                .batch_size = 2,
                .block_size = 8,
                .budget_ms = 1e-9,
                .min_steps = 2};
  absl::StatusOr<RoundOutput> out = RunRound(**loop, shard, in, [](uint32_t) { return true; });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->complete);
  EXPECT_EQ(out->result.steps(), 2u);
  EXPECT_EQ(out->result.tokens_processed(), 2u * 2 * 8);
  EXPECT_EQ(out->result.sampler_cursor(), 9u);
  EXPECT_EQ(out->delta.size(), theta.size());

  // A budget no step can spend: every learning rate.
  in.budget_ms = 1e12;
  out = RunRound(**loop, shard, in, [](uint32_t) { return true; });
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->complete);
  EXPECT_EQ(out->result.steps(), 5u);

  // Stopped (a Cancel) before min_steps: incomplete, no Δ.
  out = RunRound(**loop, shard, in, [](uint32_t done) { return done < 1; });
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->complete);
  EXPECT_TRUE(out->delta.empty());

  // --fault_slow_factor 3: each step's reported time is at least 3x the time inside the step
  // (sleep_for sleeps at least what it is asked to).
  in.budget_ms = 0;
  in.slow_factor = 3;
  out = RunRound(**loop, shard, in, [](uint32_t) { return true; });
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->result.steps(), 5u);
  EXPECT_GT(out->compute_ms, 0);
  EXPECT_GE(out->result.step_time_ms() * 5, 3 * out->compute_ms * 0.999);
}

}  // namespace
}  // namespace pcp::worker
