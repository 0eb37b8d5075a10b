// Jobs whose model is a StableHLO module (model.stablehlo). The oracle: PCP's own GPT printed as
// StableHLO (pretty form) with its nanoGPT initialisation in a params file, imported through a
// job file, must give the built-in GPT's losses and train-step results, in the program and in
// `pcp-local train` / `pcp-local eval` runs. Plus the job file's errors at their line:col,
// frozen arguments, checkpoints and the sampling refusal.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/status_macros.h"
#include "pcp/models/gpt.h"
#include "pcp/training/checkpoint.h"
#include "pcp/training/job_config.h"
#include "pcp/training/model_program.h"

namespace pcp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

constexpr int64_t kBatch = 4;
const GPTConfig kGpt{.vocab_size = 65, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 16, .bias = true};
const std::string kData = PCP_DATA_DIR "/tiny_shakespeare.txt";
const std::string kPcpLocal = PCP_BINARY_DIR "/tools/pcp-local/pcp-local";

std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / "pcp_imported_job_test" / info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// gpt.mlir: BuildGptForwardLoss as "main" in the pretty form; gpt.safetensors: InitGptParams
// (seed 1337, the jobs' seed) in parameter order.
void WriteGptExport(const std::string& dir) {
  absl::StatusOr<Function> fwd = BuildGptForwardLoss(kGpt, kBatch, kGpt.block_size);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  fwd->name = "main";
  Module m;
  m.functions.push_back(*fwd);
  Write(dir + "/gpt.mlir", PrintModule(m, TextForm::kPretty));
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(kGpt, 1337);
  ASSERT_TRUE(init.ok()) << init.status();
  ASSERT_TRUE(WriteSafetensorsFile(dir + "/gpt.safetensors", *init, {}).ok());
}

std::string Training(const std::string& out_dir) {
  return absl::StrCat("training:\n  max_iters: 3\n  eval_interval: 1000\n  eval_iters: 2\n  log_interval: 1\n",
                      "  threads: 1\n  out_dir: ", out_dir, "\n");
}
std::string DataSection() { return absl::StrCat("data:\n  path: ", kData, "\n"); }

// The imported job (model section `model`) and its built-in twin.
std::string ImportedJob(const std::string& dir, const std::string& model = "") {
  return absl::StrCat("model:\n  stablehlo: gpt.mlir\n  params: gpt.safetensors\n", model, DataSection(),
                      Training(dir + "/out_imported"));
}
std::string GptJob(const std::string& dir) {
  return absl::StrCat("model:\n  block_size: 16\n  n_layer: 2\n  n_head: 2\n  n_embd: 16\n  bias: true\n",
                      DataSection(), Training(dir + "/out_gpt"), "  batch_size: 4\n");
}

absl::StatusOr<JobConfig> ParseIn(const std::string& dir, const std::string& yaml) {
  return ParseJobConfig(yaml, "job.yaml", dir, DataRoots::Unconfined());
}

absl::StatusOr<ModelProgram> ProgramOf(const std::string& dir, const std::string& yaml) {
  PCP_ASSIGN_OR_RETURN(JobConfig job, ParseIn(dir, yaml));
  PCP_ASSIGN_OR_RETURN(Dataset data, LoadJobDataset(&job, DataRoots::Unconfined()));
  return BuildJobProgram(job, DataRoots::Unconfined());
}

Tensor Batch(int offset) {
  std::vector<int32_t> v(kBatch * kGpt.block_size);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((7 * i + static_cast<size_t>(offset)) % 65);
  return Tensor::FromVector<int32_t>({kBatch, kGpt.block_size}, v);
}

Tensor ScalarOf(const TensorType& type, double value) {
  Tensor t(type.dtype, type.shape);
  if (type.dtype == DType::kF32) t.data<float>()[0] = static_cast<float>(value);
  if (type.dtype == DType::kI32) t.data<int32_t>()[0] = static_cast<int32_t>(value);
  if (type.dtype == DType::kI64) t.data<int64_t>()[0] = static_cast<int64_t>(value);
  return t;
}

double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    m = std::max(m, std::abs(double{a.data<float>()[i]} - b.data<float>()[i]));
  return m;
}

TEST(ImportedJobTest, ImportedGptMatchesBuiltInGpt) {
  const std::string dir = TestDir();
  WriteGptExport(dir);
  absl::StatusOr<ModelProgram> gpt = ProgramOf(dir, GptJob(dir));
  ASSERT_TRUE(gpt.ok()) << gpt.status();
  absl::StatusOr<ModelProgram> imp = ProgramOf(dir, ImportedJob(dir));
  ASSERT_TRUE(imp.ok()) << imp.status();
  EXPECT_FALSE(imp->logits.has_value());
  EXPECT_TRUE(gpt->logits.has_value());
  EXPECT_EQ(imp->param_names, gpt->param_names);
  EXPECT_EQ(imp->param_types, gpt->param_types);
  EXPECT_EQ(imp->batch_size, kBatch);
  EXPECT_EQ(imp->block_size, kGpt.block_size);
  EXPECT_THAT(imp->summary, StartsWith("stablehlo:gpt.mlir, 0."));
  ASSERT_EQ(imp->initial_params.size(), gpt->initial_params.size());
  for (size_t i = 0; i < imp->initial_params.size(); ++i) {
    EXPECT_EQ(MaxAbsDiff(imp->initial_params[i], gpt->initial_params[i]), 0.0) << imp->param_names[i];
  }

  // eval_loss on the same params and batch.
  std::vector<Tensor> args = gpt->initial_params;
  args.push_back(Batch(0));
  args.push_back(Batch(1));
  absl::StatusOr<std::vector<Tensor>> want = Interpret(gpt->eval_loss, args);
  absl::StatusOr<std::vector<Tensor>> got = Interpret(imp->eval_loss, args);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_NEAR(got->at(0).data<float>()[0], want->at(0).data<float>()[0], 1e-6);
  EXPECT_GT(want->at(0).data<float>()[0], 3.5);  // about ln 65 at init

  // One train step: every updated parameter, moment and the loss.
  const Function& step = gpt->train_step;
  const size_t p = gpt->param_names.size();
  std::vector<Tensor> in = gpt->initial_params;
  for (size_t k = 0; k < 2 * p; ++k) in.push_back(Tensor(DType::kF32, gpt->param_types[k % p].shape));
  in.push_back(ScalarOf(step.type(step.params[3 * p]), 1));
  in.push_back(ScalarOf(step.type(step.params[3 * p + 1]), 1e-3));
  in.push_back(Batch(2));
  in.push_back(Batch(3));
  absl::StatusOr<std::vector<Tensor>> want_step = Interpret(gpt->train_step, in);
  absl::StatusOr<std::vector<Tensor>> got_step = Interpret(imp->train_step, in);
  ASSERT_TRUE(want_step.ok()) << want_step.status();
  ASSERT_TRUE(got_step.ok()) << got_step.status();
  ASSERT_EQ(got_step->size(), want_step->size());
  for (size_t k = 0; k < want_step->size(); ++k) EXPECT_LE(MaxAbsDiff(got_step->at(k), want_step->at(k)), 1e-6) << k;
  fs::remove_all(dir);
}

// "iter N/3 | loss X" and "step N: train loss X, val loss Y" lines of a pcp-local run.
std::vector<std::string> LossLines(const std::string& output) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StartsWith(line, "iter ") || absl::StartsWith(line, "step ")) {
      std::string l(line);
      // Timings differ between runs: keep up to the loss values.
      const size_t lr = l.find(" | lr");
      const size_t eval = l.find(" (eval");
      lines.push_back(l.substr(0, std::min(lr, eval)));
    }
  }
  return lines;
}

int RunCommand(const std::string& command, std::string* out) {
  const int rc = std::system((command + " >" + ::testing::TempDir() + "/imported_cmd.txt 2>&1").c_str());
  *out = Read(::testing::TempDir() + "/imported_cmd.txt");
  return rc;
}

TEST(ImportedJobTest, PcpLocalTrainsAndEvaluatesLikeTheBuiltInGpt) {
  const std::string dir = TestDir();
  WriteGptExport(dir);
  Write(dir + "/imported.yaml", ImportedJob(dir));
  Write(dir + "/gpt.yaml", GptJob(dir));
  std::string gpt_out, imp_out;
  ASSERT_EQ(RunCommand(kPcpLocal + " train " + dir + "/gpt.yaml", &gpt_out), 0) << gpt_out;
  ASSERT_EQ(RunCommand(kPcpLocal + " train " + dir + "/imported.yaml", &imp_out), 0) << imp_out;
  const std::vector<std::string> want = LossLines(gpt_out), got = LossLines(imp_out);
  EXPECT_EQ(want.size(), 5u) << gpt_out;  // evals at 0 and 3, iters 0, 1, 2
  EXPECT_EQ(got, want) << imp_out;
  EXPECT_THAT(imp_out, HasSubstr("no sample: the model is an imported StableHLO loss function without logits"));
  EXPECT_THAT(imp_out, HasSubstr("stablehlo:gpt.mlir"));

  // The checkpoint: the job's names, the model's source.
  absl::StatusOr<ModelCheckpoint> ckpt = ReadModelCheckpoint(dir + "/out_imported/ckpt.safetensors");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->params.front().name, "transformer.wte.weight");
  EXPECT_THAT(ckpt->Meta("pcp.model"), HasSubstr("\"stablehlo\":\"gpt.mlir\""));
  EXPECT_THAT(ckpt->Meta("pcp.model"), HasSubstr("\"sha256\":\"sha256:"));
  EXPECT_TRUE(IsImportedModelSource(ckpt->Meta("pcp.model")));

  // Sampling it is refused with the reason.
  std::string sample_out;
  EXPECT_NE(RunCommand(kPcpLocal + " sample " + dir + "/out_imported/ckpt.safetensors", &sample_out), 0);
  EXPECT_THAT(sample_out, HasSubstr("without logits; sampling needs logits"));

  // eval: initial values on the first batch, then the trained checkpoints; both models agree.
  std::string e_gpt, e_imp;
  ASSERT_EQ(RunCommand(kPcpLocal + " eval " + dir + "/gpt.yaml", &e_gpt), 0) << e_gpt;
  ASSERT_EQ(RunCommand(kPcpLocal + " eval " + dir + "/imported.yaml", &e_imp), 0) << e_imp;
  EXPECT_EQ(e_imp, e_gpt);
  EXPECT_THAT(want[1], HasSubstr(e_gpt.substr(0, 5))) << "eval prints the first step's loss";
  ASSERT_EQ(RunCommand(kPcpLocal + " eval " + dir + "/gpt.yaml --params=" + dir + "/out_gpt/ckpt.safetensors", &e_gpt),
            0)
      << e_gpt;
  ASSERT_EQ(RunCommand(kPcpLocal + " eval " + dir + "/imported.yaml --params=" + dir + "/out_imported/ckpt.safetensors",
                       &e_imp),
            0)
      << e_imp;
  EXPECT_EQ(e_imp, e_gpt);
  // A batch file with i64 tokens.
  std::vector<NamedTensor> batch;
  for (const char* name : {"tokens", "targets"}) {
    std::vector<int64_t> v(kBatch * kGpt.block_size);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 3 + (name[1] == 'a')) % 65);
    batch.push_back({name, Tensor::FromVector<int64_t>({kBatch, kGpt.block_size}, v)});
  }
  ASSERT_TRUE(WriteSafetensorsFile(dir + "/batch.safetensors", batch, {}).ok());
  ASSERT_EQ(RunCommand(kPcpLocal + " eval " + dir + "/gpt.yaml --batch=" + dir + "/batch.safetensors", &e_gpt), 0)
      << e_gpt;
  ASSERT_EQ(RunCommand(kPcpLocal + " eval " + dir + "/imported.yaml --batch=" + dir + "/batch.safetensors", &e_imp), 0)
      << e_imp;
  EXPECT_EQ(e_imp, e_gpt);
  // A checkpoint of another model is refused.
  EXPECT_NE(RunCommand(kPcpLocal + " eval " + dir + "/imported.yaml --params=" + dir + "/out_gpt/ckpt.safetensors",
                       &e_imp),
            0);
  EXPECT_THAT(e_imp, HasSubstr("the checkpoint was written for model"));
  fs::remove_all(dir);
}

TEST(ImportedJobTest, FrozenArgumentsAreInputsNotParameters) {
  const std::string dir = TestDir();
  WriteGptExport(dir);
  const std::string frozen = "  frozen: [transformer.wpe.weight]\n";
  absl::StatusOr<ModelProgram> p = ProgramOf(dir, ImportedJob(dir, frozen));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(std::find(p->param_names.begin(), p->param_names.end(), "transformer.wpe.weight"), p->param_names.end());
  EXPECT_EQ(p->train_step.FindParam("transformer.wpe.weight"), -1);
  EXPECT_EQ(p->train_step.params.size(), 3 * p->param_names.size() + 4);
  std::vector<Tensor> args = p->initial_params;
  args.push_back(Batch(0));
  args.push_back(Batch(1));
  absl::StatusOr<std::vector<Tensor>> base = Interpret(p->eval_loss, args);
  ASSERT_TRUE(base.ok()) << base.status();

  // Another value for wpe in the params file: another loss.
  absl::StatusOr<SafetensorsContents> file = ReadSafetensorsFile(dir + "/gpt.safetensors");
  ASSERT_TRUE(file.ok());
  for (NamedTensor& t : file->tensors) {
    if (t.name != "transformer.wpe.weight") continue;
    t.tensor = t.tensor.Clone();
    for (int64_t i = 0; i < t.tensor.num_elements(); ++i) t.tensor.data<float>()[i] = 0.5f;
  }
  ASSERT_TRUE(WriteSafetensorsFile(dir + "/gpt.safetensors", file->tensors, {}).ok());
  absl::StatusOr<ModelProgram> q = ProgramOf(dir, ImportedJob(dir, frozen));
  ASSERT_TRUE(q.ok()) << q.status();
  absl::StatusOr<std::vector<Tensor>> changed = Interpret(q->eval_loss, args);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_GT(std::abs(changed->at(0).data<float>()[0] - base->at(0).data<float>()[0]), 1e-3);

  // Not in the checkpoint of a run.
  Write(dir + "/frozen.yaml", ImportedJob(dir, frozen));
  std::string out;
  ASSERT_EQ(RunCommand(kPcpLocal + " train " + dir + "/frozen.yaml --max_iters=1", &out), 0) << out;
  absl::StatusOr<ModelCheckpoint> ckpt = ReadModelCheckpoint(dir + "/out_imported/ckpt.safetensors");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  for (const NamedTensor& t : ckpt->params) EXPECT_NE(t.name, "transformer.wpe.weight");
  EXPECT_EQ(ckpt->params.size(), p->param_names.size());
  fs::remove_all(dir);
}

TEST(ImportedJobTest, CheckpointModelSourceMustMatch) {
  const std::string dir = TestDir();
  WriteGptExport(dir);
  absl::StatusOr<JobConfig> imp = ParseIn(dir, ImportedJob(dir));
  absl::StatusOr<JobConfig> gpt = ParseIn(dir, GptJob(dir));
  ASSERT_TRUE(imp.ok()) << imp.status();
  ASSERT_TRUE(gpt.ok()) << gpt.status();
  ASSERT_TRUE(LoadJobDataset(&*gpt, DataRoots::Unconfined()).ok());  // vocab_size from the data
  const std::string imp_json = ModelSourceJson(imp->model);
  EXPECT_TRUE(CheckModelSource(imp->model, imp_json).ok());
  EXPECT_TRUE(CheckModelSource(gpt->model, ModelSourceJson(gpt->model)).ok());
  EXPECT_EQ(CheckModelSource(gpt->model, imp_json).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CheckModelSource(imp->model, ModelSourceJson(gpt->model)).code(), absl::StatusCode::kFailedPrecondition);
  // The module edited: another content hash.
  Write(dir + "/gpt.mlir", Read(dir + "/gpt.mlir") + "\n// edited\n");
  absl::StatusOr<JobConfig> edited = ParseIn(dir, ImportedJob(dir));
  ASSERT_TRUE(edited.ok()) << edited.status();
  absl::Status changed = CheckModelSource(edited->model, imp_json);
  EXPECT_EQ(changed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(changed), HasSubstr("the checkpoint was written for model"));
  // A program built from a job parsed before the edit refuses the changed file.
  JobConfig stale = *imp;
  absl::StatusOr<Dataset> data = LoadJobDataset(&stale, DataRoots::Unconfined());
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(BuildJobProgram(stale, DataRoots::Unconfined()).status().code(), absl::StatusCode::kFailedPrecondition);
  fs::remove_all(dir);
}

TEST(ImportedJobTest, EffectiveYamlRoundTrips) {
  const std::string dir = TestDir();
  WriteGptExport(dir);
  absl::StatusOr<JobConfig> job =
      ParseIn(dir, ImportedJob(dir, "  frozen: [transformer.wpe.weight]\n  init: {std: 0.01}\n"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->model.block_size, 16);
  EXPECT_EQ(job->training.batch_size, kBatch);
  EXPECT_THAT(job->model.stablehlo_sha256, StartsWith("sha256:"));
  const std::string yaml = ToYaml(*job);
  EXPECT_THAT(yaml, HasSubstr("stablehlo:"));
  EXPECT_THAT(yaml, Not(HasSubstr("n_layer")));
  absl::StatusOr<JobConfig> back = ParseJobConfig(yaml, "effective.yaml", "/", DataRoots::Unconfined());
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  EXPECT_EQ(*back, *job);
  fs::remove_all(dir);
}

// A forward-only export (the GPT's logits function as @main, no loss) named by model.logits:
// PCP forms the loss from the logits, so training gives the built-in GPT's losses; the
// effective YAML (function "", no params file) reads back; the checkpoint samples.
TEST(ImportedJobTest, ForwardOnlyExportTrainsLikeTheBuiltInGptAndSamples) {
  const std::string dir = TestDir();
  WriteGptExport(dir);
  absl::StatusOr<Function> logits = BuildGptLogits(kGpt, kBatch, kGpt.block_size);
  ASSERT_TRUE(logits.ok()) << logits.status();
  logits->name = "main";
  Module m;
  m.functions.push_back(*logits);
  Write(dir + "/forward.mlir", PrintModule(m, TextForm::kPretty));
  Write(dir + "/gpt.yaml", GptJob(dir));
  Write(dir + "/forward.yaml",
        absl::StrCat("model:\n  stablehlo: forward.mlir\n  logits: main\n  params: gpt.safetensors\n", DataSection(),
                     Training(dir + "/out_imported")));
  std::string gpt_out, fwd_out;
  ASSERT_EQ(RunCommand(kPcpLocal + " train " + dir + "/gpt.yaml", &gpt_out), 0) << gpt_out;
  ASSERT_EQ(RunCommand(kPcpLocal + " train " + dir + "/forward.yaml", &fwd_out), 0) << fwd_out;
  EXPECT_EQ(LossLines(fwd_out), LossLines(gpt_out)) << fwd_out;
  EXPECT_THAT(fwd_out, HasSubstr("sample with: pcp-local sample"));
  std::string sample_out;
  ASSERT_EQ(RunCommand(kPcpLocal + " sample " + dir +
                           "/out_imported/ckpt.safetensors --prompt=ROMEO: --max_new_tokens=20",
                       &sample_out),
            0)
      << sample_out;
  EXPECT_THAT(sample_out, StartsWith("ROMEO:"));
  EXPECT_EQ(sample_out.size(), std::string("ROMEO:").size() + 20 + 1) << sample_out;  // 20 characters and a newline

  for (const std::string& params : {std::string("  params: gpt.safetensors\n"), std::string()}) {
    absl::StatusOr<JobConfig> job = ParseIn(dir, absl::StrCat("model:\n  stablehlo: forward.mlir\n  logits: main\n",
                                                              params, DataSection(), Training(dir + "/out")));
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->model.function, "");
    const std::string yaml = ToYaml(*job);
    absl::StatusOr<JobConfig> back = ParseJobConfig(yaml, "effective.yaml", "/", DataRoots::Unconfined());
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
    EXPECT_EQ(*back, *job);
  }
  fs::remove_all(dir);
}

// A module whose first result is not a scalar (line 1 is the module line).
std::string NotALossModule() {
  return "module {\n"
         "  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4x16xi32>, %arg2: tensor<4x16xi32>) -> tensor<4xf32> {\n"
         "    return %arg0 : tensor<4xf32>\n"
         "  }\n"
         "}\n";
}

TEST(ImportedJobTest, ErrorsAtTheirLineAndColumn) {
  const std::string dir = TestDir();
  WriteGptExport(dir);
  Write(dir + "/bad.mlir", NotALossModule());
  {
    // A params file with a wrong shape for wpe.
    absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(kGpt, 1);
    ASSERT_TRUE(init.ok());
    (*init)[1].tensor = Tensor(DType::kF32, {8, 16});
    ASSERT_TRUE(WriteSafetensorsFile(dir + "/wrong.safetensors", *init, {}).ok());
  }
  const std::string head = "model:\n  stablehlo: gpt.mlir\n";  // lines 1-2
  struct Case {
    std::string model;  // lines from 3 on
    std::string extra;  // after the data section (line 5 on)
    std::string want;   // the message's start
  };
  const std::vector<Case> cases = {
      {"  n_layer: 2\n", "", "job.yaml:3:3: model.n_layer: not used with model.stablehlo"},
      {"  vocab_size: 65\n", "", "job.yaml:3:3: model.vocab_size: not used with model.stablehlo"},
      {"  block_size: 8\n", "",
       "job.yaml:3:15: model.block_size: 8 does not match the module's data arguments [4, 16]"},
      {"", "training:\n  batch_size: 3\n",
       "job.yaml:6:15: training.batch_size: 3 does not match the module's data "
       "arguments [4, 16] (B = 4)"},
      {"  frozen: [nope]\n", "", "job.yaml:3:11: model.frozen: 'nope' is not an argument of main"},
      {"  frozen: [transformer.wpe.weight]\n", "", "job.yaml:3:11: model.frozen: 'transformer.wpe.weight'"},
      {"  names: [a, b]\n", "", "job.yaml:3:10: model.names: 2 names for the"},
      {"  data_args: [transformer.wpe.weight, targets]\n", "",
       "job.yaml:3:14: model.data_args: tokens argument %arg1 'transformer.wpe.weight' tensor<16x16xf32>"},
      {"  params: wrong.safetensors\n", "",
       "job.yaml:3:11: model.params: wrong.safetensors: tensor "
       "'transformer.wpe.weight' is tensor<8x16xf32>"},
      {"  params: gpt.safetensors\n  names: [", "", ""},  // filled below
      {"  function: loss\n", "", "job.yaml:3:13: model.function: no function 'loss' in gpt.mlir"},
      {"  params: nowhere.safetensors\n", "", "job.yaml:3:11: model.params:"},
  };
  for (Case c : cases) {
    if (c.want.empty()) {
      // names given: the params file is matched by name, and lacks "extra".
      absl::StatusOr<SafetensorsContents> file = ReadSafetensorsFile(dir + "/gpt.safetensors");
      ASSERT_TRUE(file.ok());
      std::string names;
      for (size_t i = 0; i < file->tensors.size(); ++i) {
        absl::StrAppend(&names, i ? ", " : "", i == 2 ? "extra" : file->tensors[i].name);
      }
      c.model += names + "]\n";
      c.want = "job.yaml:3:11: model.params: gpt.safetensors has no tensor 'extra' (argument %arg2";
    }
    const std::string yaml = absl::StrCat(head, c.model, DataSection(), c.extra);
    absl::StatusOr<JobConfig> job = ParseIn(dir, yaml);
    ASSERT_FALSE(job.ok()) << yaml;
    EXPECT_THAT(Message(job.status()), StartsWith(c.want)) << yaml;
    EXPECT_EQ(Message(job.status()).find('\n'), std::string::npos);
  }
  // The loss must be a scalar: the module's position comes after the job file's.
  absl::StatusOr<JobConfig> bad = ParseIn(dir, absl::StrCat("model:\n  stablehlo: bad.mlir\n", DataSection()));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()),
              StartsWith("job.yaml:2:14: model.stablehlo: bad.mlir:2:13: function 'main' returns "
                         "tensor<4xf32> first; the first result must be the loss"));
  // Import keys without model.stablehlo.
  absl::StatusOr<JobConfig> stray = ParseIn(dir, absl::StrCat("model:\n  n_layer: 2\n  frozen: [x]\n", DataSection()));
  ASSERT_FALSE(stray.ok());
  EXPECT_THAT(Message(stray.status()), StartsWith("job.yaml:3:3: model.frozen: only used with model.stablehlo"));
  // A module the data roots refuse.
  absl::StatusOr<DataRoots> roots = DataRoots::Confined({PCP_DATA_DIR});
  ASSERT_TRUE(roots.ok()) << roots.status();
  absl::StatusOr<JobConfig> refused = ParseJobConfig(absl::StrCat(head, DataSection()), "job.yaml", dir, *roots);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(Message(refused.status()), StartsWith("job.yaml:2:14: model.stablehlo: "));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pcp
