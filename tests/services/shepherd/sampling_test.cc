// Admin.Sample's work (services/shepherd/src/sampling.h) on a byte-level model: whatever bytes
// the model emits, the response's text is valid UTF-8, so the response survives protobuf's
// parse at the client (a stray byte used to lose the whole sample: "String field
// 'pcp.v1.SampleResponse.text' contains invalid UTF-8 data").
#include "sampling.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/utf8.h"
#include "pcp/kernels/backend_factory.h"
#include "pcp/models/gpt.h"
#include "pcp/models/stablehlo_model.h"
#include "pcp/training/model_program.h"
#include "pcp/training/text_sampler.h"

namespace pcp::shepherd {
namespace {

// A byte-level GPT with nanoGPT's initialisation.
ParamsSnapshot ByteModel(int64_t block_size) {
  ParamsSnapshot snap;
  snap.job_id = "job-0001";
  snap.model =
      GPTConfig{.vocab_size = 256, .block_size = block_size, .n_layer = 1, .n_head = 2, .n_embd = 16, .bias = false};
  absl::StatusOr<std::vector<NamedTensor>> init = InitGptParams(*snap.model, 5);
  EXPECT_TRUE(init.ok()) << init.status();
  for (NamedTensor& t : *init) {
    snap.names.push_back(t.name);
    snap.params.push_back(std::move(t.tensor));
  }
  return snap;
}

TEST(SamplingTest, ByteLevelTextIsValidUtf8) {
  const ParamsSnapshot snap = ByteModel(16);  // 200 new bytes: the context is cropped to 16
  v1::SampleRequest request;
  request.set_max_new_tokens(200);
  request.set_temperature(50.0f);  // near uniform over the 256 bytes: many are not UTF-8
  request.set_top_k(0);
  request.set_seed(3);
  absl::StatusOr<v1::SampleResponse> r = SampleText(snap, request, /*threads=*/1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tokens_generated(), 200u);
  const std::string& text = r->text();
  EXPECT_NE(text.find("\xEF\xBF\xBD"), std::string::npos) << "no stray byte in 200 near-uniform bytes";
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(absl::string_view(text).substr(i));
    ASSERT_GT(n, 0u) << "invalid UTF-8 at byte " << i;
    i += n;
  }
  v1::SampleResponse parsed;
  EXPECT_TRUE(parsed.ParseFromString(r->SerializeAsString()));
  EXPECT_EQ(parsed.text(), text);
}

// A sample shorter than the block runs over a shorter context (the next power of two that
// holds it), and draws the same tokens as over the whole block, as nanoGPT's generate().
TEST(SamplingTest, AShortSampleGivesWhatTheWholeBlockGives) {
  const ParamsSnapshot snap = ByteModel(64);
  v1::SampleRequest request;
  request.set_prompt("ab");
  request.set_max_new_tokens(20);  // 22 tokens: a context of 32
  request.set_temperature(1.0f);
  request.set_top_k(0);
  request.set_seed(9);
  absl::StatusOr<v1::SampleResponse> r = SampleText(snap, request, /*threads=*/1);
  ASSERT_TRUE(r.ok()) << r.status();

  absl::StatusOr<Function> logits = BuildSampleLogits(*snap.model, /*tokens=*/64);  // the whole block
  ASSERT_TRUE(logits.ok()) << logits.status();
  absl::StatusOr<std::unique_ptr<Backend>> cpu = CreateBackend("cpu", 1);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<std::unique_ptr<TextSampler>> sampler = TextSampler::Create(**cpu, *logits, snap.params);
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  absl::StatusOr<std::vector<int32_t>> ids =
      (*sampler)->Generate({'a', 'b'}, {.max_new_tokens = 20, .temperature = 1.0, .top_k = 0, .seed = 9});
  ASSERT_TRUE(ids.ok()) << ids.status();
  std::string whole_block;
  for (size_t i = 2; i < ids->size(); ++i) whole_block.push_back(static_cast<char>((*ids)[i]));
  EXPECT_EQ(r->text(), ToValidUtf8(whole_block));
}

// An imported model (the same GPT printed as StableHLO: its loss as @main and its logits as
// @logits, batch 3, imported with model.logits) samples the text the built-in GPT samples.
TEST(SamplingTest, AnImportedModelWithLogitsSamplesLikeTheBuiltInModel) {
  const ParamsSnapshot gpt = ByteModel(16);
  Module module;
  for (bool loss : {true, false}) {
    absl::StatusOr<Function> f = loss ? BuildGptForwardLoss(*gpt.model, 3, 16) : BuildGptLogits(*gpt.model, 3, 16);
    ASSERT_TRUE(f.ok()) << f.status();
    f->name = loss ? "main" : "logits";
    module.functions.push_back(*f);
  }
  StableHloImportOptions options;
  options.logits = "logits";
  options.params.emplace();
  for (size_t i = 0; i < gpt.names.size(); ++i) options.params->push_back({gpt.names[i], gpt.params[i]});
  absl::StatusOr<ImportedModel> m = ImportStableHloModel(PrintModule(module, TextForm::kPretty), "gpt.mlir", options);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->logits.has_value());
  ParamsSnapshot imported;
  imported.job_id = "job-0002";
  imported.imported_logits = std::make_shared<const Function>(*m->logits);
  imported.names = m->names;
  imported.params = m->initial;

  v1::SampleRequest request;
  request.set_prompt("To be");
  request.set_max_new_tokens(24);  // past the block of 16: the context is cropped
  request.set_temperature(1.0f);
  request.set_top_k(0);
  request.set_seed(4);
  absl::StatusOr<v1::SampleResponse> want = SampleText(gpt, request, /*threads=*/1);
  absl::StatusOr<v1::SampleResponse> got = SampleText(imported, request, /*threads=*/1);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->tokens_generated(), 24u);
  EXPECT_EQ(got->text(), want->text());

  // Without logits it is refused, with the reason.
  imported.imported_logits = nullptr;
  absl::StatusOr<v1::SampleResponse> refused = SampleText(imported, request, /*threads=*/1);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(), absl::StrCat("job job-0002: ", kNoLogitsReason));
}

}  // namespace
}  // namespace pcp::shepherd
