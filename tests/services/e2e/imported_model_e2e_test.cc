// A cluster (shepherd + 2 workers on loopback) trains an imported StableHLO model: PCP's own
// GPT printed as StableHLO (its loss as @main, its logits as @logits) with its initial values
// in a params file, named by the job's model.stablehlo and model.logits. The job completes,
// the loss falls, the checkpoint records the module, and the model is sampled through the
// logits: by Admin.Sample from the live snapshot, then by `pcpctl sample` from the checkpoint
// after the shepherd restarts.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster_harness.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/file.h"
#include "pcp/models/gpt.h"
#include "pcp/tensor/safetensors.h"

namespace pcp::testing {
namespace {

TEST(ImportedModelE2eTest, TwoWorkersTrainAnImportedModel) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string models = dir->path() + "/models";
  ASSERT_TRUE(MakeDirs(models).ok());
  E2eJob spec;
  spec.name = "imported_e2e";
  spec.rounds = 4;
  spec.inner_steps = 10;
  spec.checkpoint_every = 2;
  const GPTConfig gpt{
      .vocab_size = 65, .block_size = spec.block_size, .n_layer = 1, .n_head = 2, .n_embd = 16, .bias = false};
  absl::StatusOr<Function> fwd = BuildGptForwardLoss(gpt, spec.batch_size, gpt.block_size);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  fwd->name = "main";
  absl::StatusOr<Function> logits = BuildGptLogits(gpt, spec.batch_size, gpt.block_size);
  ASSERT_TRUE(logits.ok()) << logits.status();
  logits->name = "logits";
  Module module;
  module.functions.push_back(*fwd);
  module.functions.push_back(*logits);
  ASSERT_TRUE(WriteFileAtomic(models + "/gpt.mlir", PrintModule(module, TextForm::kPretty)).ok());
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(gpt, 1337);
  ASSERT_TRUE(init.ok()) << init.status();
  ASSERT_TRUE(WriteSafetensorsFile(models + "/gpt.safetensors", *init, {}).ok());
  spec.model_yaml = absl::StrCat("model:\n  stablehlo: ", models, "/gpt.mlir\n  logits: logits\n  params: ", models,
                                 "/gpt.safetensors\n");

  ClusterHarness cluster(dir->path());
  // The module lives outside the example data: the shepherd's data roots must include it.
  cluster.SetSecurity(
      ClusterSecurity{.shepherd_yaml = absl::StrCat("data_roots: [\"", PCP_DATA_DIR, "\", \"", models, "\"]\n")});
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();
  absl::StatusOr<ClusterHarness::FinishedJob> run = cluster.RunJob(spec, absl::Seconds(600));
  ASSERT_TRUE(run.ok()) << run.status() << cluster.Logs();
  const v1::Job& job = run->job;
  ASSERT_EQ(job.state(), v1::JOB_STATE_COMPLETED) << job.reason() << cluster.Logs();
  EXPECT_TRUE(absl::StartsWith(job.model(), "stablehlo:gpt.mlir, 0.")) << job.model();

  // The loss falls.
  std::vector<double> losses;
  for (const v1::RoundRecord& r : run->history) {
    if (r.has_train_loss()) losses.push_back(r.train_loss());
  }
  ASSERT_GE(losses.size(), 3u);
  std::printf("imported model: train loss %.4f -> %.4f over %zu rounds\n", losses.front(), losses.back(),
              losses.size());
  EXPECT_LT(losses.back(), losses.front() - 0.1);
  EXPECT_TRUE(job.progress().has_val_loss());

  // The checkpoint names the module.
  absl::StatusOr<SafetensorsContents> ckpt = ReadSafetensorsFile(job.checkpoint_path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_NE(ckpt->Find("transformer.wte.weight"), nullptr);
  std::string source;
  for (const auto& [k, v] : ckpt->metadata) {
    if (k == "pcp.model") source = v;
  }
  EXPECT_TRUE(absl::StrContains(source, "\"stablehlo\":\"gpt.mlir\"")) << source;

  // pcpctl shows the model; Admin.Sample samples it through its logits (the live snapshot).
  absl::StatusOr<CommandResult> show = cluster.Pcpctl({"status", job.job_id()});
  ASSERT_TRUE(show.ok()) << show.status();
  EXPECT_TRUE(absl::StrContains(show->output, "stablehlo:gpt.mlir")) << show->output;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::SampleRequest request;
  request.set_job_id(job.job_id());
  request.set_prompt("ROMEO:");
  request.set_max_new_tokens(30);
  request.set_seed(7);
  v1::SampleResponse response;
  grpc::Status sample = cluster.admin().Sample(&context, request, &response);
  ASSERT_TRUE(sample.ok()) << sample.error_message();
  EXPECT_EQ(response.tokens_generated(), 30u);
  EXPECT_TRUE(response.final_parameters());

  // After a restart the shepherd samples from the checkpoint, importing the module again:
  // the same text for the same seed.
  ASSERT_TRUE(cluster.shepherd()->Stop().ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.StartShepherd().ok()) << cluster.Logs();
  absl::StatusOr<CommandResult> cli =
      cluster.Pcpctl({"sample", job.job_id(), "--max_new_tokens=30", "--prompt=ROMEO:", "--seed=7"},
                     absl::Seconds(120));
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_EQ(cli->exit_code, 0) << cli->output << cluster.Logs();
  EXPECT_TRUE(absl::StartsWith(cli->output, absl::StrCat("ROMEO:", response.text()))) << cli->output;
  std::printf("imported model sampled from its checkpoint:\n%s", cli->output.c_str());
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
