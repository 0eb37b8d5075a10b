#include "pcp/training/job_config.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// gmock string matchers want std::string; absl::Status::message() is absl::string_view.
std::string Message(const absl::Status& s) { return std::string(s.message()); }

const std::string kDataDir = PCP_DATA_DIR;
const std::string kJobsDir = PCP_SOURCE_DIR "/config/jobs";
// The lines every case below needs unless it tests them: 2 lines.
const std::string kData = "data:\n  path: tiny_shakespeare.txt\n";

std::string Normal(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / "pcp_job_config_test" / info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

absl::StatusOr<JobConfig> Parse(const std::string& yaml) {
  return ParseJobConfig(yaml, "job.yaml", kDataDir, DataRoots::Unconfined());
}

TEST(JobConfigTest, ShakespeareCharJobParses) {
  absl::StatusOr<JobConfig> job = LoadJobConfig(kJobsDir + "/shakespeare_char.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->name, "shakespeare_char");
  EXPECT_EQ(job->model,
            (ModelConfig{.vocab_size = 0, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128, .bias = false}));
  EXPECT_EQ(job->data.path, Normal(kDataDir + "/tiny_shakespeare.txt"));
  EXPECT_EQ(job->data.format, DataFormat::kTextChar);
  EXPECT_EQ(job->optimizer.lr, 1e-3);
  EXPECT_EQ(job->optimizer.min_lr, 1e-4);
  EXPECT_EQ(job->optimizer.warmup_iters, 100);
  EXPECT_EQ(job->optimizer.lr_decay_iters, 2000);
  EXPECT_EQ(job->optimizer.beta2, 0.99);
  EXPECT_EQ(job->optimizer.weight_decay, 0.1);
  EXPECT_EQ(job->optimizer.grad_clip, 1.0);
  EXPECT_EQ(job->training.max_iters, 2000);
  EXPECT_EQ(job->training.batch_size, 12);
  EXPECT_EQ(job->training.eval_interval, 250);
  EXPECT_EQ(job->training.eval_iters, 200);
  EXPECT_EQ(job->diloco.rounds, 40);
  EXPECT_EQ(job->sample.prompt, "\n");
}

// nanoGPT's GPU config, the model of the GPU run's convergence check (bench/gpu/run.sh).
TEST(JobConfigTest, ShakespeareCharGpuJobParses) {
  absl::StatusOr<JobConfig> job = LoadJobConfig(kJobsDir + "/shakespeare_char_gpu.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->model,
            (ModelConfig{.vocab_size = 0, .block_size = 256, .n_layer = 6, .n_head = 6, .n_embd = 384, .bias = false}));
  EXPECT_EQ(job->optimizer.lr_decay_iters, 5000);
  EXPECT_EQ(job->training.max_iters, 5000);
  EXPECT_EQ(job->training.batch_size, 64);
  EXPECT_EQ(job->training.precision, Precision::kF32);
}

TEST(JobConfigTest, TinyJobParsesAndLoadsItsData) {
  absl::StatusOr<JobConfig> job = LoadJobConfig(kJobsDir + "/tiny.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->name, "tiny");
  EXPECT_EQ(job->model.n_layer, 2);
  EXPECT_EQ(job->model.n_embd, 32);
  EXPECT_EQ(job->model.block_size, 32);
  EXPECT_EQ(job->training.max_iters, 50);
  EXPECT_EQ(job->optimizer.lr_decay_iters, 50);  // derived from max_iters
  EXPECT_EQ(job->diloco.rounds, 5);              // ceil(50 / 10)

  absl::StatusOr<Dataset> data = LoadJobDataset(&*job, DataRoots::Unconfined());
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(job->model.vocab_size, 65);
  EXPECT_EQ(data->train().size(), 1003854);
  EXPECT_TRUE(job->model.ToGPTConfig().Validate().ok());
}

TEST(JobConfigTest, DefaultsAreNanoGptCpuSettings) {
  absl::StatusOr<JobConfig> job = ParseJobConfig(kData, "configs/my-run.yaml", kDataDir, DataRoots::Unconfined());
  ASSERT_TRUE(job.ok()) << job.status();
  JobConfig expected;
  expected.name = "my-run";  // the file's stem
  expected.data.path = Normal(kDataDir + "/tiny_shakespeare.txt");
  EXPECT_EQ(*job, expected);
  EXPECT_EQ(job->optimizer.Schedule().At(2000), 1e-4);
  EXPECT_EQ(job->training.seed, 1337);
  EXPECT_EQ(job->training.backend, BackendChoice::kCpu);
  EXPECT_EQ(job->diloco.inner_steps, 50);
  EXPECT_EQ(job->diloco.rounds, 40);
  EXPECT_EQ(job->sample.top_k, 200);

  // Derived defaults follow the keys they derive from; explicit values win.
  absl::StatusOr<JobConfig> derived = Parse(kData + "training:\n  max_iters: 130\ndiloco:\n  inner_steps: 50\n");
  ASSERT_TRUE(derived.ok()) << derived.status();
  EXPECT_EQ(derived->optimizer.lr_decay_iters, 130);
  EXPECT_EQ(derived->diloco.rounds, 3);
  // Streaming: a round is inner_steps / fragments steps (one fragment's sync).
  absl::StatusOr<JobConfig> streaming =
      Parse(kData + "training:\n  max_iters: 130\ndiloco:\n  inner_steps: 50\n  streaming: {fragments: 5}\n");
  ASSERT_TRUE(streaming.ok()) << streaming.status();
  EXPECT_EQ(streaming->diloco.StepsOfRound(1), 10);
  EXPECT_EQ(streaming->diloco.rounds, 13);
  // τ = 50, P = 4: rounds of 12 and 13 steps, each fragment every 50 steps.
  absl::StatusOr<JobConfig> uneven =
      Parse(kData + "training:\n  max_iters: 2000\ndiloco:\n  inner_steps: 50\n  streaming: {fragments: 4}\n");
  ASSERT_TRUE(uneven.ok()) << uneven.status();
  EXPECT_EQ(uneven->diloco.rounds, 160);
  EXPECT_EQ(uneven->diloco.FirstStep(1), 0);
  EXPECT_EQ(uneven->diloco.StepsOfRound(1), 12);
  EXPECT_EQ(uneven->diloco.StepsOfRound(2), 13);
  EXPECT_EQ(uneven->diloco.FirstStep(5), 50);
  EXPECT_EQ(uneven->diloco.FirstStep(161), 2000);
  EXPECT_EQ(uneven->diloco.max_steps_per_round(), 13);
  EXPECT_TRUE(streaming->diloco.streaming.enabled());
  EXPECT_EQ(streaming->diloco.streaming.alpha, 0.5);
  absl::StatusOr<JobConfig> explicit_values =
      Parse(kData + "optimizer:\n  lr_decay_iters: 77\ndiloco:\n  rounds: 9\nsample:\n");
  ASSERT_TRUE(explicit_values.ok()) << explicit_values.status();
  EXPECT_EQ(explicit_values->optimizer.lr_decay_iters, 77);
  EXPECT_EQ(explicit_values->diloco.rounds, 9);
}

TEST(JobConfigTest, ToYamlRoundTrips) {
  absl::StatusOr<JobConfig> job = LoadJobConfig(kJobsDir + "/shakespeare_char.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  std::string yaml = ToYaml(*job);
  for (const std::string& key : JobConfigKeys()) {
    // An imported model's keys are printed only for imported jobs (imported_job_test.cc).
    if (key.rfind("model.", 0) == 0 && (key == "model.stablehlo" || key == "model.function" || key == "model.logits" ||
                                        key == "model.params" || key == "model.names" || key == "model.data_args" ||
                                        key == "model.frozen" || key.rfind("model.init", 0) == 0)) {
      EXPECT_THAT(yaml, Not(HasSubstr(key.substr(6) + ":"))) << key;
      continue;
    }
    std::string leaf = key.substr(key.rfind('.') + 1);
    EXPECT_THAT(yaml, HasSubstr(leaf + ":")) << key;
  }
  // Paths are absolute, so any base directory reads the same file.
  absl::StatusOr<JobConfig> back = ParseJobConfig(yaml, "effective.yaml", "/", DataRoots::Unconfined());
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  EXPECT_EQ(*back, *job);

  // Every field away from its default, awkward strings and reals included.
  JobConfig odd = *job;
  odd.name = "odd.job-2";
  odd.model = {.vocab_size = 97, .block_size = 17, .n_layer = 3, .n_head = 3, .n_embd = 48, .bias = true};
  odd.data.format = DataFormat::kTextByte;
  odd.data.shared = true;
  odd.optimizer = {.lr = 0.1 + 0.2,
                   .min_lr = 1e-300,
                   .warmup_iters = 0,
                   .lr_decay_iters = 3,
                   .beta1 = 0.0,
                   .beta2 = 0.999999,
                   .eps = 3e-7,
                   .weight_decay = 0.0,
                   .grad_clip = 0.0,
                   .schedule = LrScheduleKind::kConstant};
  odd.training = {.max_iters = 7,
                  .batch_size = 1,
                  .eval_interval = 2,
                  .eval_iters = 3,
                  .log_interval = 4,
                  .seed = 9007199254740993,
                  .out_dir = "out dir/#x: y",
                  .threads = 2,
                  .backend = BackendChoice::kVulkan};
  odd.diloco = {.workers = 8,
                .inner_steps = 500,
                .outer_lr = 1.0 / 3,
                .outer_momentum = 0.0,
                .nesterov = false,
                .rounds = 1,
                .min_workers = 8,
                .round_deadline_s = 0.25,
                .checkpoint_every = 2,
                .eval_every = 3,
                .screening = {.norm_k = 2.5,
                              .max_norm = 0,
                              .action = diloco::ScreenAction::kClip,
                              .quarantine_after = 0,
                              .max_rollbacks = 7,
                              .trimmed_mean = 0.25},
                .compression = {.up = codec::Codec::kTopk2,
                                .down = codec::Codec::kBf16,
                                .error_feedback = codec::FeedbackMode::kOff,
                                .density = 0.015,
                                .ef_decay = 0.125},
                .streaming = {.fragments = 4, .overlap_steps = 3, .alpha = 0.25}};
  odd.sample = {.prompt = "He said: \"to be\\or\tnot\"\n\x01 caf\xc3\xa9",
                .max_new_tokens = 1,
                .temperature = 1e-3,
                .top_k = 0};
  std::string odd_yaml = ToYaml(odd);
  absl::StatusOr<JobConfig> odd_back = ParseJobConfig(odd_yaml, "odd.yaml", "/", DataRoots::Unconfined());
  ASSERT_TRUE(odd_back.ok()) << odd_back.status() << "\n" << odd_yaml;
  EXPECT_EQ(*odd_back, odd) << odd_yaml;
}

// diloco.compression.scheme: sparseloco is SparseLoCo in one line: every key the job leaves out
// takes the scheme's value (codec/compression.h; streaming.alpha 0), keys the job sets stay; the effective
// configuration round-trips; without a scheme nothing changes.
TEST(JobConfigTest, SparseLocoSchemeSetsWhatTheJobLeavesOut) {
  absl::StatusOr<JobConfig> job = Parse(kData + "diloco:\n  compression: {scheme: sparseloco}\n");
  ASSERT_TRUE(job.ok()) << job.status();
  const codec::CompressionOptions& c = job->diloco.compression;
  EXPECT_EQ(c.scheme, codec::CompressionScheme::kSparseLoco);
  EXPECT_EQ(c.up, codec::Codec::kTopk2);
  EXPECT_EQ(c.down, codec::Codec::kTopk2);
  EXPECT_EQ(c.down_mode, codec::DownMode::kUnion);
  EXPECT_EQ(c.error_feedback, codec::FeedbackMode::kOn);
  EXPECT_EQ(c.density, codec::kSparseLocoDensity);
  EXPECT_EQ(c.ef_decay, codec::kSparseLocoEfDecay);
  EXPECT_EQ(job->diloco.outer_momentum, 0.0);
  EXPECT_EQ(job->diloco.outer_lr, codec::kSparseLocoOuterLr);
  EXPECT_EQ(job->diloco.streaming.alpha, 0.0);  // the merge takes θ_global whole (error feedback)
  EXPECT_TRUE(c.FeedbackUp());
  EXPECT_FALSE(c.FeedbackDown());
  EXPECT_EQ(c.DownDensity(), 1.0);
  absl::StatusOr<JobConfig> back = ParseJobConfig(ToYaml(*job), "effective.yaml", "/", DataRoots::Unconfined());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *job);

  absl::StatusOr<JobConfig> own = Parse(kData +
                                        "diloco:\n  outer_lr: 0.8\n  compression: {scheme: sparseloco, density: 0.015, "
                                        "ef_decay: 0.9, down: topk4}\n");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->diloco.outer_lr, 0.8);
  EXPECT_EQ(own->diloco.outer_momentum, 0.0);
  EXPECT_EQ(own->diloco.compression.density, 0.015);
  EXPECT_EQ(own->diloco.compression.ef_decay, 0.9);
  EXPECT_EQ(own->diloco.compression.down, codec::Codec::kTopk4);
  EXPECT_EQ(own->diloco.compression.down_mode, codec::DownMode::kUnion);
  absl::StatusOr<JobConfig> mixed = Parse(kData +
                                          "diloco:\n  streaming: {fragments: 4, overlap_steps: 5, alpha: 0.5}\n"
                                          "  compression: {scheme: sparseloco}\n");
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_EQ(mixed->diloco.streaming.alpha, 0.5);

  // down_mode feedback is allowed with momentum (the scheme's other settings stay).
  absl::StatusOr<JobConfig> momentum =
      Parse(kData + "diloco:\n  outer_momentum: 0.9\n  compression: {scheme: sparseloco, down_mode: feedback}\n");
  ASSERT_TRUE(momentum.ok()) << momentum.status();
  EXPECT_EQ(momentum->diloco.compression.ef_decay, codec::kSparseLocoEfDecay);
  EXPECT_TRUE(momentum->diloco.compression.FeedbackDown());

  absl::StatusOr<JobConfig> plain = Parse(kData);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->diloco.compression, codec::CompressionOptions{});
  EXPECT_EQ(plain->diloco.compression.ef_decay, 1.0);
  EXPECT_EQ(plain->diloco.outer_momentum, 0.9);
}

TEST(JobConfigTest, BinDataFindsValBinBesideTrainBin) {
  const std::string dir = TestDir();
  fs::create_directories(dir + "/d");
  WriteFile(dir + "/d/train.bin", std::string(400, '\x01'));
  WriteFile(dir + "/job.yaml", "data:\n  path: d/train.bin\n");
  absl::StatusOr<JobConfig> missing_val = LoadJobConfig(dir + "/job.yaml");
  ASSERT_FALSE(missing_val.ok());
  EXPECT_THAT(Message(missing_val.status()),
              StartsWith(dir + "/job.yaml:2:9: data.val_path: file not found: " + Normal(dir + "/d/val.bin")));

  WriteFile(dir + "/d/val.bin", std::string(200, '\x02'));
  absl::StatusOr<JobConfig> job = LoadJobConfig(dir + "/job.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->data.format, DataFormat::kBin);
  EXPECT_EQ(job->data.path, Normal(dir + "/d/train.bin"));
  EXPECT_EQ(job->data.val_path, Normal(dir + "/d/val.bin"));
  absl::StatusOr<Dataset> data = LoadJobDataset(&*job, DataRoots::Unconfined());
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(job->model.vocab_size, 0x0202 + 1);  // largest id + 1
  EXPECT_EQ(data->train().size(), 200);

  // An explicit vocabulary must cover the data.
  WriteFile(dir + "/small_vocab.yaml", "model:\n  vocab_size: 300\ndata:\n  path: d/train.bin\n");
  absl::StatusOr<JobConfig> small = LoadJobConfig(dir + "/small_vocab.yaml");
  ASSERT_TRUE(small.ok()) << small.status();
  absl::StatusOr<Dataset> bad = LoadJobDataset(&*small, DataRoots::Unconfined());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("token id 514"));

  WriteFile(dir + "/d/tokens.bin", std::string(400, '\x01'));
  WriteFile(dir + "/other.yaml", "data:\n  path: d/tokens.bin\n");
  absl::StatusOr<JobConfig> no_val = LoadJobConfig(dir + "/other.yaml");
  ASSERT_FALSE(no_val.ok());
  EXPECT_THAT(Message(no_val.status()), StartsWith(dir + "/other.yaml:2:9: data.val_path: required for format bin"));
  WriteFile(dir + "/explicit.yaml", "data:\n  path: d/tokens.bin\n  val_path: d/val.bin\n");
  absl::StatusOr<JobConfig> explicit_val = LoadJobConfig(dir + "/explicit.yaml");
  ASSERT_TRUE(explicit_val.ok()) << explicit_val.status();
  EXPECT_EQ(explicit_val->data.val_path, Normal(dir + "/d/val.bin"));
}

TEST(JobConfigTest, MissingJobFileIsNotFound) {
  absl::StatusOr<JobConfig> job = LoadJobConfig("/nonexistent/dir/job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(job.status()), HasSubstr("/nonexistent/dir/job.yaml"));
}

struct BadCase {
  std::string yaml;
  std::string where;                   // "LINE:COL"
  std::vector<std::string> fragments;  // must all appear, the first names the key
};

TEST(JobConfigTest, BadInputsGiveOneLineWithPositionAndKey) {
  const std::vector<BadCase> cases = {
      {kData + "optimizer:\n  lrr: 0.1\n",
       "4:3",
       {"unknown key 'lrr' in section 'optimizer' (did you mean 'lr'?)",
        "valid keys: lr, min_lr, warmup_iters, lr_decay_iters, beta1, beta2, eps, "
        "weight_decay, grad_clip, schedule"}},
      {"modle:\n  n_layer: 2\n" + kData,
       "1:1",
       {"unknown top-level key 'modle' (did you mean 'model'?)",
        "valid keys: name, model, data, optimizer, training, diloco, sample"}},
      {kData + "training:\n  max_iters: abc\n", "4:14", {"training.max_iters: expected an integer, got 'abc'"}},
      {kData + "training:\n  batch_size: 1.5\n", "4:15", {"training.batch_size: expected an integer, got '1.5'"}},
      {kData + "training:\n  max_iters: [1, 2]\n", "4:14", {"training.max_iters: expected an integer, got a sequence"}},
      {kData + "training:\n  max_iters:\n", "4:3", {"training.max_iters: expected an integer, got nothing"}},
      {kData + "training:\n  threads: -1\n", "4:12", {"training.threads: must be in [0, 4096], got -1"}},
      {kData + "training:\n  seed: 1\n  seed: 2\n", "5:3", {"training.seed: duplicate key (first given at line 4)"}},
      {kData + "optimizer:\n  lr: -0.1\n", "4:7", {"optimizer.lr: must be > 0.0, got -0.1"}},
      {kData + "optimizer:\n  beta2: 1.0\n", "4:10", {"optimizer.beta2: must be in [0.0, 1.0), got 1.0"}},
      {kData + "optimizer:\n  eps: nan\n", "4:8", {"optimizer.eps: expected a (finite) number, got 'nan'"}},
      {kData + "optimizer:\n  schedule: linear\n",
       "4:13",
       {"optimizer.schedule: expected one of cosine, constant, got 'linear'"}},
      {kData + "optimizer:\n  lr: 1e-4\n  min_lr: 1e-3\n",
       "5:11",
       {"optimizer.min_lr: 0.001 is above optimizer.lr (0.0001)"}},
      {kData + "model:\n  n_head: 3\n  n_embd: 128\n",
       "5:11",
       {"model.n_embd: 128 is not divisible by model.n_head (3)"}},
      {kData + "model:\n  n_head: 5\n", "4:11", {"model.n_embd: 128 is not divisible by model.n_head (5)"}},
      {kData + "model:\n  dropout: 0.1\n",
       "4:12",
       {"model.dropout: must be 0 (PCP trains without dropout), got '0.1'"}},
      {kData + "model:\n  vocab_size: 70000\n", "4:15", {"model.vocab_size: must be in [0, 65536], got 70000"}},
      {kData + "model: 5\n", "3:8", {"model: expected a mapping with keys vocab_size, block_size, n_layer", "got '5'"}},
      {"data:\n  path: nope/missing.txt\n",
       "2:9",
       {"data.path: file not found: " + Normal(kDataDir + "/nope/missing.txt")}},
      {"data:\n  path: .\n", "2:9", {"data.path: is a directory"}},
      {"model:\n  n_layer: 2\n", "1:1", {"data.path: missing"}},
      {"name: x\ndata:\n  shared: true\n", "2:1", {"data.path: missing"}},
      {"data:\n  path: tiny_shakespeare.txt\n  shared: maybe\n",
       "3:11",
       {"data.shared: expected true or false, got 'maybe'"}},
      {"data:\n  path: tiny_shakespeare.txt\n  format: csv\n",
       "3:11",
       {"data.format: expected one of text_char, text_byte, bin, got 'csv'"}},
      {"data:\n  path: tiny_shakespeare.txt\n  val_path: x.bin\n",
       "3:13",
       {"data.val_path: only used with format bin"}},
      {kData + "diloco:\n  workers: 2\n  min_workers: 3\n",
       "5:16",
       {"diloco.min_workers: 3 is more than diloco.workers (2)"}},
      {kData + "diloco:\n  screening:\n    action: drop\n",
       "5:13",
       {"diloco.screening.action: expected one of reject, clip, got 'drop'"}},
      {kData + "diloco:\n  screening:\n    norm_k: 0.5\n", "5:13", {"diloco.screening.norm_k: must be"}},
      {kData + "diloco:\n  aggregation: streaming\n  screening:\n    trimmed_mean: 0.2\n",
       "4:16",
       {"diloco.aggregation: streaming cannot take a trimmed mean"}},
      {kData + "diloco:\n  aggregation: streamed\n", "4:16", {"diloco.aggregation", "streamed"}},
      {kData + "diloco:\n  screening:\n    trimmed_mean: 0.5\n",
       "5:19",
       {"diloco.screening.trimmed_mean: must be in [0.0, 0.5), got 0.5"}},
      {kData + "diloco:\n  screening:\n    norm_kk: 3\n",
       "5:5",
       {"unknown key 'norm_kk' in section 'diloco.screening' (did you mean 'norm_k'?)"}},
      {kData + "diloco:\n  compression: {up: int3}\n",
       "4:21",
       {"diloco.compression.up: expected one of f32, bf16, int8, int4, topk2, topk4, topk8, got 'int3'"}},
      {kData + "diloco:\n  compression: {up: topk2, density: 1.5}\n",
       "4:37",
       {"diloco.compression.density: must be in"}},
      {kData + "diloco:\n  compression:\n    error_feedback: yes\n",
       "5:21",
       {"diloco.compression.error_feedback: expected one of auto, true, false, got 'yes'"}},
      // SparseLoCo's settings (issue 33).
      {kData + "diloco:\n  compression: {ef_decay: 0}\n", "4:27", {"diloco.compression.ef_decay: must be in"}},
      {kData + "diloco:\n  compression: {down: int4, down_mode: union}\n",
       "4:23",
       {"diloco.compression.down_mode: union sends the update's nonzeros with a sparse codec (topk2, topk4, topk8), "
        "not int4"}},
      {kData + "diloco:\n  compression: {up: topk2, down: topk8, down_mode: union}\n",
       "4:52",
       {"diloco.compression.down_mode: union needs diloco.outer_momentum 0 (with momentum 0.9 the update is dense)"}},
      {kData + "diloco:\n  outer_momentum: 0.5\n  compression: {scheme: sparseloco}\n",
       "4:19",
       {"diloco.compression.down_mode: union needs diloco.outer_momentum 0"}},
      {kData + "diloco:\n  compression: {scheme: sparse}\n",
       "4:25",
       {"diloco.compression.scheme: expected one of none, sparseloco, got 'sparse'"}},
      {kData + "diloco:\n  inner_steps: 50\n  streaming: {fragments: 51}\n",
       "5:26",
       {"diloco.streaming.fragments: 51 is more than diloco.inner_steps (50)"}},
      {kData + "diloco:\n  inner_steps: 50\n  streaming: {fragments: 5, overlap_steps: 10}\n",
       "5:44",
       {"diloco.streaming.overlap_steps: 10 must be below diloco.inner_steps / fragments (10)"}},
      {kData + "diloco:\n  streaming: {alpha: 1}\n", "4:22", {"diloco.streaming.alpha: must be in [0.0, 1.0), got 1"}},
      // Data follows the work and asynchronous rounds (issue 32).
      {kData + "diloco:\n  orphan_slots: drop\n",
       "4:17",
       {"diloco.orphan_slots: expected one of takeover, idle, got 'drop'"}},
      {kData + "diloco:\n  mode: asynch\n", "4:9", {"diloco.mode: expected one of sync, async, got 'asynch'"}},
      {kData + "diloco:\n  async: {quorum: 5}\n", "4:19", {"diloco.async.quorum: 5 is more than diloco.workers (2)"}},
      {kData + "diloco:\n  async: {staleness: square}\n",
       "4:22",
       {"diloco.async.staleness: expected one of inverse, beyond_round, none, got 'square'"}},
      {kData + "diloco:\n  mode: async\n  streaming: {fragments: 2}\n",
       "4:9",
       {"diloco.mode: async cannot be streamed"}},
      {kData + "diloco:\n  mode: async\n  aggregation: streaming\n", "4:9", {"diloco.mode: async keeps each Δ whole"}},
      {kData + "diloco:\n  outer_momentum: 1\n", "4:19", {"diloco.outer_momentum: must be in [0.0, 1.0), got 1"}},
      {kData + "sample:\n  temperature: 0\n", "4:16", {"sample.temperature: must be in (0.0, 1000.0], got 0"}},
      // Every number has an upper bound (issue 10).
      {kData + "diloco:\n  inner_steps: 1000000000\n",
       "4:16",
       {"diloco.inner_steps: must be in [1, 1000000], got 1000000000"}},
      {kData + "diloco:\n  round_deadline_s: 1e18\n",
       "4:21",
       {"diloco.round_deadline_s: must be in (0.0, 604800.0], got 1e18"}},
      {kData + "sample:\n  max_new_tokens: 1000000000\n",
       "4:19",
       {"sample.max_new_tokens: must be in [1, 10000], got 1000000000"}},
      {kData + "training:\n  eval_iters: 1000000\n",
       "4:15",
       {"training.eval_iters: must be in [1, 100000], got 1000000"}},
      {kData + "training:\n  max_iters: 1000000000\n",
       "4:14",
       {"diloco.rounds: ceil(training.max_iters × fragments / diloco.inner_steps) = 20000000 is more than 1000000"}},
      {"name: my job\n" + kData, "1:7", {"name: expected letters, digits"}},
      {kData + "model: {n_layer: 2\n", "4:1", {"YAML syntax error: end of map flow not found"}},
      {"", "1:1", {"the job file is empty"}},
      {"- a\n- b\n", "1:1", {"job file: expected a mapping with keys name, model, data"}},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<JobConfig> job = Parse(c.yaml);
    ASSERT_FALSE(job.ok()) << "accepted:\n" << c.yaml;
    const std::string message = Message(job.status());
    EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(message, StartsWith(absl::StrCat("job.yaml:", c.where, ": ", c.fragments[0]))) << "for:\n" << c.yaml;
    for (const std::string& f : c.fragments) EXPECT_THAT(message, HasSubstr(f)) << c.yaml;
    EXPECT_THAT(message, Not(HasSubstr("\n"))) << "not one line: " << message;
  }
}

TEST(JobConfigTest, UnknownKeyFarFromAnyValidOneGetsNoSuggestion) {
  absl::StatusOr<JobConfig> job = Parse(kData + "training:\n  frobnicate: 1\n");
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(Message(job.status()), StartsWith("job.yaml:4:3: unknown key 'frobnicate'"));
  EXPECT_THAT(Message(job.status()), Not(HasSubstr("did you mean")));
  EXPECT_THAT(Message(job.status()), HasSubstr("valid keys: max_iters, batch_size"));
}

TEST(JobConfigTest, DamagedFilesNeverCrashAndErrorsStayOneLine) {
  std::ifstream in(kJobsDir + "/shakespeare_char.yaml");
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(ParseJobConfig(good, "job.yaml", kJobsDir, DataRoots::Unconfined()).ok());
  int failures = 0;
  // Drop, duplicate or replace one byte at every 7th position.
  for (size_t i = 0; i < good.size(); i += 7) {
    for (const std::string& damaged :
         {good.substr(0, i) + good.substr(i + 1), good.substr(0, i) + good[i] + good.substr(i),
          good.substr(0, i) + ":" + good.substr(i + 1), good.substr(0, i) + "\t" + good.substr(i + 1),
          good.substr(0, i) + "[" + good.substr(i + 1)}) {
      absl::StatusOr<JobConfig> job = ParseJobConfig(damaged, "job.yaml", kJobsDir, DataRoots::Unconfined());
      if (job.ok()) continue;
      ++failures;
      EXPECT_THAT(Message(job.status()), StartsWith("job.yaml:"));
      EXPECT_THAT(Message(job.status()), Not(HasSubstr("\n")));
    }
  }
  EXPECT_GT(failures, 100);
}

TEST(JobConfigTest, KeysAreListedOnce) {
  std::vector<std::string> keys = JobConfigKeys();
  EXPECT_EQ(keys.front(), "name");
  EXPECT_EQ(keys.size(), 1u + (7 + 7 + 2) + 4 + 10 + 11 /* training, precision and attention included */ +
                             (11 + 6 + 3 + 3) + 4 + 3 /* diloco.time_budget */ + 1 /* diloco.compression.density */ +
                             3 /* diloco.compression.{ef_decay, down_mode, scheme} */ +
                             6 /* diloco.orphan_slots, mode, async.{quorum, grace_ms, staleness, momentum} */);
  EXPECT_NE(std::find(keys.begin(), keys.end(), "model.init.ones"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "diloco.aggregation"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "diloco.screening.norm_k"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "diloco.compression.error_feedback"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "diloco.streaming.overlap_steps"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "diloco.round_deadline_s"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "diloco.time_budget.max_steps"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "diloco.orphan_slots"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "diloco.async.staleness"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "training.attention"), keys.end());
  EXPECT_EQ(BackendChoiceName(BackendChoice::kAuto), "auto");
  EXPECT_EQ(DataFormatName(DataFormat::kTextByte), "text_byte");
}

// training.precision (pcp/autodiff/mixed_precision.h): f32 by default, bf16 and f16 parse,
// anything else is one line naming the key, the position and the accepted values.
TEST(JobConfigTest, PrecisionParsesAndBadValuesNameTheKey) {
  absl::StatusOr<JobConfig> plain = Parse(kData);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->training.precision, Precision::kF32);
  for (Precision p : {Precision::kBF16, Precision::kF16, Precision::kF32}) {
    absl::StatusOr<JobConfig> job = Parse(kData + "training:\n  precision: " + std::string(PrecisionName(p)) + "\n");
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->training.precision, p);
    absl::StatusOr<JobConfig> back = ParseJobConfig(ToYaml(*job), "effective.yaml", "/", DataRoots::Unconfined());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->training.precision, p);
  }
  absl::StatusOr<JobConfig> bad = Parse(kData + "training:\n  precision: fp8\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("job.yaml:4:14"));
  EXPECT_THAT(Message(bad.status()), HasSubstr("training.precision: expected one of f32, bf16, f16, got 'fp8'"));
}

// training.attention (pcp/autodiff/attention.h): decomposed by default, fused parses and
// survives the effective config, anything else names the key and the accepted values.
TEST(JobConfigTest, AttentionParsesAndBadValuesNameTheKey) {
  absl::StatusOr<JobConfig> plain = Parse(kData);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->training.attention, AttentionMode::kDecomposed);
  absl::StatusOr<JobConfig> job = Parse(kData + "training:\n  attention: fused\n");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->training.attention, AttentionMode::kFused);
  absl::StatusOr<JobConfig> back = ParseJobConfig(ToYaml(*job), "effective.yaml", "/", DataRoots::Unconfined());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->training.attention, AttentionMode::kFused);
  absl::StatusOr<JobConfig> bad = Parse(kData + "training:\n  attention: flash\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("training.attention: expected one of decomposed, fused, got 'flash'"));
}

}  // namespace
}  // namespace pcp
