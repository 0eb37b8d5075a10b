// Local training end to end on the tiny job: progress output, a falling loss, a checkpoint
// that PyTorch's strict load_state_dict accepts, sampling from it, and checkpoint errors.
#include "pcp/training/local_training.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/training/checkpoint.h"
#include "pcp/training/gpt_program.h"
#include "pcp/training/text_sampler.h"
#include "pcp/training/tokenizer.h"

namespace pcp {
namespace {

namespace fs = std::filesystem;

std::string TempDir(absl::string_view name) {
  std::string dir = absl::StrCat(::testing::TempDir(), "pcp_local_", name, "_", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string ReadAll(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), f)) s.append(buf, n);
  return s;
}

class LocalTrainingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_dir_ = new std::string(TempDir("tiny"));
    auto job = LoadJobConfig(std::string(PCP_SOURCE_DIR) + "/config/jobs/tiny.yaml");
    ASSERT_TRUE(job.ok()) << job.status();
    job->training.out_dir = *out_dir_;
    job->training.max_iters = 60;
    job->training.eval_interval = 30;
    job->training.eval_iters = 5;
    auto backend = CreateCpuBackend({.threads = 1});
    std::FILE* log = std::tmpfile();
    records_ = new std::vector<LocalRecord>;
    auto result = RunLocalTraining(*job, *backend, log, [](const LocalRecord& r) { records_->push_back(r); });
    ASSERT_TRUE(result.ok()) << result.status();
    result_ = new LocalTrainingResult(*result);
    log_ = new std::string(ReadAll(log));
    std::fclose(log);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*out_dir_);
    delete out_dir_;
    delete result_;
    delete log_;
    delete records_;
  }

  static std::string* out_dir_;
  static LocalTrainingResult* result_;
  static std::string* log_;
  static std::vector<LocalRecord>* records_;
};
std::vector<LocalRecord>* LocalTrainingTest::records_ = nullptr;
std::string* LocalTrainingTest::out_dir_ = nullptr;
LocalTrainingResult* LocalTrainingTest::result_ = nullptr;
std::string* LocalTrainingTest::log_ = nullptr;

// One record per log line (log_interval 5: after steps 1, 6, ..., 56 and the last, 60) and
// per evaluation (before steps 0 and 30, and after the last).
TEST_F(LocalTrainingTest, RecordsEveryLogLineAndEvaluation) {
  ASSERT_NE(records_, nullptr);
  std::vector<int64_t> train_steps, val_steps;
  int64_t tokens = 0;
  for (const LocalRecord& r : *records_) {
    EXPECT_EQ(r.tokens_total, r.step * 4 * 32) << r.step;
    EXPECT_LE(r.start_unix_ms, r.end_unix_ms);
    if (r.train_loss) {
      train_steps.push_back(r.step);
      tokens += r.tokens;
      EXPECT_GT(r.lr, 0);
      EXPECT_GT(r.seconds, 0);
      EXPECT_TRUE(std::isfinite(*r.train_loss));
    }
    if (r.val_loss) val_steps.push_back(r.step);
  }
  EXPECT_EQ(train_steps, (std::vector<int64_t>{1, 6, 11, 16, 21, 26, 31, 36, 41, 46, 51, 56, 60}));
  EXPECT_EQ(val_steps, (std::vector<int64_t>{0, 30, 60}));
  EXPECT_EQ(tokens, 60 * 4 * 32);  // every step counted once
  EXPECT_FLOAT_EQ(static_cast<float>(*records_->back().val_loss), result_->final_val_loss);
}

TEST_F(LocalTrainingTest, PrintsProgressAndLossFalls) {
  ASSERT_NE(result_, nullptr);
  EXPECT_NE(log_->find("iter 0/60 | loss"), std::string::npos) << *log_;
  EXPECT_NE(log_->find("ms/step"), std::string::npos);
  EXPECT_NE(log_->find("tok/s | ETA"), std::string::npos);
  EXPECT_NE(log_->find("step 30: train loss"), std::string::npos);
  EXPECT_NE(log_->find("step 60: train loss"), std::string::npos);
  // Untrained loss is ~ln(65) = 4.17; 60 steps must make progress.
  EXPECT_LT(result_->final_val_loss, 3.9f) << *log_;
  EXPECT_EQ(result_->iters, 60);
}

// The same job with training.precision: bf16 and f16 (pcp/autodiff/mixed_precision.h):
// its program rounds the products, and it learns as the f32 run above does (same data, seed
// and schedule; 16-bit products move the final loss by a little, not by learning less).
TEST_F(LocalTrainingTest, MixedPrecisionJobsLearnAsF32Does) {
  ASSERT_NE(result_, nullptr);
  for (Precision p : {Precision::kBF16, Precision::kF16}) {
    const std::string dir = TempDir(absl::StrCat("tiny_", PrecisionName(p)));
    auto job = LoadJobConfig(std::string(PCP_SOURCE_DIR) + "/config/jobs/tiny.yaml");
    ASSERT_TRUE(job.ok()) << job.status();
    job->training.out_dir = dir;
    job->training.max_iters = 60;
    job->training.eval_interval = 30;
    job->training.eval_iters = 5;
    job->training.precision = p;
    auto backend = CreateCpuBackend({.threads = 1});
    std::FILE* log = std::tmpfile();
    auto result = RunLocalTraining(*job, *backend, log, nullptr);
    std::fclose(log);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_LT(result->final_val_loss, 3.9f) << PrecisionName(p);
    EXPECT_NEAR(result->final_val_loss, result_->final_val_loss, 0.05) << PrecisionName(p);
    EXPECT_NE(result->final_val_loss, result_->final_val_loss) << PrecisionName(p) << ": the rounding must show";
    fs::remove_all(dir);
  }
}

TEST_F(LocalTrainingTest, CheckpointHasNanoGptNamesAndMetadata) {
  ASSERT_NE(result_, nullptr);
  auto ckpt = ReadModelCheckpoint(result_->checkpoint_path);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->Meta("pcp.iter"), "60");
  auto model = GptConfigFromJson(ckpt->Meta("pcp.model"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->vocab_size, 65);
  EXPECT_FALSE(ckpt->Meta("pcp.tokenizer").empty());
  EXPECT_FALSE(ckpt->Meta("pcp.job").empty());
  EXPECT_EQ(ckpt->params.front().name, "transformer.wte.weight");
  EXPECT_TRUE(fs::exists(*out_dir_ + "/optimizer.safetensors"));
  // The raw file carries lm_head.weight, equal to the tied wte.
  auto raw = ReadSafetensorsFile(result_->checkpoint_path);
  ASSERT_TRUE(raw.ok());
  ASSERT_NE(raw->Find("lm_head.weight"), nullptr);
  EXPECT_TRUE(BitwiseEqual(*raw->Find("lm_head.weight"), *raw->Find("transformer.wte.weight")));
}

TEST_F(LocalTrainingTest, PyTorchStrictlyLoadsTheCheckpoint) {
  ASSERT_NE(result_, nullptr);
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
  }
  auto ckpt = ReadModelCheckpoint(result_->checkpoint_path);
  ASSERT_TRUE(ckpt.ok());
  std::string script =
      absl::StrCat("import json,sys; sys.path.insert(0, '", PCP_SOURCE_DIR,
                   "/tests/libs/models'); import gpt_reference as g\n", "sd = g.read_safetensors('",
                   result_->checkpoint_path, "')\n", "c = json.loads('", ckpt->Meta("pcp.model"),
                   "'); c['dtype'] = 'float32'\n",
                   "m = g.Gpt(c).float(); m.load_state_dict(sd, strict=True); print('loaded', len(sd))\n");
  std::string path = *out_dir_ + "/load.py";
  std::ofstream(path) << script;
  EXPECT_EQ(std::system(("/usr/bin/python3 " + path).c_str()), 0);
}

TEST_F(LocalTrainingTest, SamplesTextFromTheCheckpoint) {
  ASSERT_NE(result_, nullptr);
  auto ckpt = ReadModelCheckpoint(result_->checkpoint_path);
  ASSERT_TRUE(ckpt.ok());
  auto model = GptConfigFromJson(ckpt->Meta("pcp.model"));
  auto tokenizer = Tokenizer::Deserialize(ckpt->Meta("pcp.tokenizer"));
  ASSERT_TRUE(model.ok() && tokenizer.ok());
  auto program = BuildGptProgram(*model, 1, AdamWConfig{});
  ASSERT_TRUE(program.ok());
  std::vector<std::string> names(program->logits.param_names.begin(), program->logits.param_names.end() - 1);
  auto params = ParamsInOrder(*ckpt, names);
  ASSERT_TRUE(params.ok()) << params.status();
  auto backend = CreateCpuBackend({.threads = 1});
  auto sampler = TextSampler::Create(*backend, program->logits, *params);
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  auto prompt = tokenizer->Encode("ROMEO:");
  ASSERT_TRUE(prompt.ok());
  // Longer than block_size (32) so the context window slides.
  auto ids = (*sampler)->Generate(*prompt, {.max_new_tokens = 50, .temperature = 0.8, .top_k = 10, .seed = 3});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), prompt->size() + 50);
  auto again = (*sampler)->Generate(*prompt, {.max_new_tokens = 50, .temperature = 0.8, .top_k = 10, .seed = 3});
  EXPECT_EQ(*ids, *again);  // seeded
  auto greedy = (*sampler)->Generate(*prompt, {.max_new_tokens = 5, .temperature = 1.0, .top_k = 1, .seed = 1});
  auto greedy2 = (*sampler)->Generate(*prompt, {.max_new_tokens = 5, .temperature = 1.0, .top_k = 1, .seed = 2});
  EXPECT_EQ(*greedy, *greedy2);  // top_k = 1 ignores the seed
  EXPECT_FALSE((*sampler)->Generate({}, {}).ok());
  EXPECT_FALSE((*sampler)->Generate(*prompt, {.temperature = 0}).ok());
  EXPECT_FALSE((*sampler)->Generate({1000}, {}).ok());
}

// A model with more outputs than the tokenizer has tokens (8 logits, 4 decodable ids) never
// draws an id the tokenizer cannot decode, even where those logits are the largest.
TEST(TextSamplerTest, DrawsOnlyIdsTheTokenizerHas) {
  FunctionBuilder b("logits");
  ValueId bias = b.Parameter(TensorType{DType::kF32, {8}}, "bias");
  b.Parameter(TensorType{DType::kI32, {1, 4}}, "tokens");
  b.Return({b.BroadcastInDim(bias, {1, 4, 8}, {2})});
  absl::StatusOr<Function> fn = b.Build();
  ASSERT_TRUE(fn.ok()) << fn.status();
  auto backend = CreateCpuBackend({.threads = 1});
  auto sampler = TextSampler::Create(*backend, *fn, {Tensor::FromVector<float>({8}, {0, 0, 3, 1, 0, 0, 9, 8})});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  auto all = (*sampler)->Generate({0}, {.max_new_tokens = 1, .top_k = 1});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->back(), 6);  // no limit: the largest of the 8
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto ids =
        (*sampler)->Generate({0}, {.max_new_tokens = 3, .temperature = 2.0, .top_k = 0, .seed = seed, .vocab = 4});
    ASSERT_TRUE(ids.ok()) << ids.status();
    for (int32_t id : *ids) EXPECT_LT(id, 4) << "seed " << seed;
  }
  auto greedy = (*sampler)->Generate({0}, {.max_new_tokens = 1, .top_k = 1, .vocab = 4});
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(greedy->back(), 2);                                // the largest of the first 4
  EXPECT_FALSE((*sampler)->Generate({0}, {.vocab = 9}).ok());  // more tokens than outputs
  EXPECT_FALSE((*sampler)->Generate({5}, {.vocab = 4}).ok());  // a prompt id the tokenizer lacks
}

// A sample's logits run over the shortest power-of-two context holding all its tokens, the
// block at most.
TEST(SampleLogitsTest, ContextIsThePowerOfTwoThatHoldsTheSample) {
  const GPTConfig model{.vocab_size = 65, .block_size = 48, .n_layer = 1, .n_head = 2, .n_embd = 16};
  for (auto [tokens, context] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 2}, {22, 32}, {32, 32}, {33, 48}, {500, 48}}) {
    absl::StatusOr<Function> f = BuildSampleLogits(model, tokens);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->type(f->params.back()).shape, (Shape{1, context})) << tokens << " tokens";
  }
}

TEST(CheckpointTest, AnUntiedLmHeadIsKeptAsItsOwnTensor) {
  // (An imported nanoGPT with its own lm_head.weight once failed: "duplicate tensor name".)
  std::string dir = TempDir("ckpt_untied");
  const std::string path = dir + "/untied.safetensors";
  const std::vector<std::string> names = {kTiedEmbeddingName, kTiedHeadName};
  const std::vector<Tensor> params = {Tensor::FromVector<float>({2}, {1, 2}), Tensor::FromVector<float>({2}, {3, 4})};
  ASSERT_TRUE(WriteModelCheckpoint(path, names, params, {{"pcp.model", R"({"stablehlo":"m.mlir"})"}}).ok());
  auto ckpt = ReadModelCheckpoint(path);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  auto back = ParamsInOrder(*ckpt, names);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)[1].ToVector<float>(), (std::vector<float>{3, 4}));
  // The GPT's tied head: written as nanoGPT has it, dropped again on reading.
  const std::string tied = dir + "/tied.safetensors";
  ASSERT_TRUE(WriteModelCheckpoint(tied, {kTiedEmbeddingName}, {params[0]}, {}).ok());
  auto file = ReadSafetensorsFile(tied);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->tensors.size(), 2u);
  auto gpt = ReadModelCheckpoint(tied);
  ASSERT_TRUE(gpt.ok());
  EXPECT_EQ(gpt->params.size(), 1u);
  fs::remove_all(dir);
}

TEST(CheckpointTest, ErrorsNameTheProblem) {
  std::string dir = TempDir("ckpt");
  std::string path = dir + "/x.safetensors";
  ASSERT_TRUE(WriteSafetensorsFile(path, {{"a", Tensor(DType::kF32, {2})}}).ok());
  auto not_pcp = ReadModelCheckpoint(path);
  EXPECT_NE(not_pcp.status().message().find("not a PCP GPT checkpoint"), absl::string_view::npos);
  ASSERT_TRUE(WriteModelCheckpoint(path, {"a", "b"}, {Tensor(DType::kF32, {2}), Tensor(DType::kF32, {3})}, {}).ok());
  auto ckpt = ReadModelCheckpoint(path);
  ASSERT_TRUE(ckpt.ok());
  EXPECT_EQ(ParamsInOrder(*ckpt, {"a", "c"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(ParamsInOrder(*ckpt, {"a"}).ok());
  auto ordered = ParamsInOrder(*ckpt, {"b", "a"});
  ASSERT_TRUE(ordered.ok());
  EXPECT_EQ((*ordered)[0].num_elements(), 3);
  EXPECT_FALSE(WriteModelCheckpoint(path, {"a"}, {}, {}).ok());
  EXPECT_FALSE(GptConfigFromJson("{").ok());
  EXPECT_FALSE(GptConfigFromJson(R"({"vocab_size":65})").ok());
  auto bad_heads =
      GptConfigFromJson(R"({"vocab_size":65,"block_size":8,"n_layer":1,"n_head":3,"n_embd":16,"bias":true})");
  EXPECT_NE(bad_heads.status().message().find("divisible"), absl::string_view::npos);
  GPTConfig c{.vocab_size = 9, .block_size = 4, .n_layer = 2, .n_head = 2, .n_embd = 8, .bias = false};
  auto back = GptConfigFromJson(GptConfigToJson(c));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->n_embd, 8);
  EXPECT_FALSE(back->bias);
  fs::remove_all(dir);
}

TEST(PcpLocalCliTest, BadJobIsOneLineWithFileAndLine) {
  std::string dir = TempDir("cli");
  std::string job = dir + "/bad.yaml";
  std::ofstream(job) << "name: bad\nmodel:\n  n_embed: 64\n";
  std::string cmd = absl::StrCat(PCP_BINARY_DIR, "/tools/pcp-local/pcp-local train ", job, " 2>", dir, "/err.txt");
  int rc = std::system(cmd.c_str());
  EXPECT_NE(rc, 0);
  std::ifstream err(dir + "/err.txt");
  std::string line;
  std::getline(err, line);
  EXPECT_NE(line.find("bad.yaml:3:3"), std::string::npos) << line;
  EXPECT_NE(line.find("n_embed"), std::string::npos) << line;
  EXPECT_EQ(std::system(absl::StrCat(PCP_BINARY_DIR, "/tools/pcp-local/pcp-local frobnicate x 2>/dev/null").c_str()) >>
                8,
            2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pcp
