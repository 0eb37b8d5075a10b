#include "sampling.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/utf8.h"
#include "pcp/kernels/backend_factory.h"
#include "pcp/models/gpt.h"
#include "pcp/training/checkpoint.h"
#include "pcp/training/model_program.h"
#include "pcp/training/text_sampler.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

absl::StatusOr<std::shared_ptr<const ParamsSnapshot>> SnapshotFromCheckpoint(const std::string& job_id,
                                                                             const std::string& path, bool final) {
  PCP_ASSIGN_OR_RETURN(ModelCheckpoint ckpt, ReadModelCheckpoint(path));
  auto snap = std::make_shared<ParamsSnapshot>();
  snap->job_id = job_id;
  snap->final = final;
  const bool imported = IsImportedModelSource(ckpt.Meta("pcp.model"));
  if (!imported) {
    PCP_ASSIGN_OR_RETURN(snap->model, GptConfigFromJson(ckpt.Meta("pcp.model")), _ << path);
  }
  if (const std::string t = ckpt.Meta("pcp.tokenizer"); !t.empty()) {
    PCP_ASSIGN_OR_RETURN(snap->tokenizer, Tokenizer::Deserialize(t), _ << path);
  }
  // The job's sample defaults; a job whose data has moved no longer parses, then the
  // schema's defaults apply.
  absl::StatusOr<JobConfig> job = ParseJobConfig(ckpt.Meta("pcp.job"), "pcp.job", "", DataRoots::Unconfined());
  if (job.ok()) snap->sample = job->sample;
  uint64_t round = 0;
  if (absl::SimpleAtoi(ckpt.Meta("pcp.round"), &round)) snap->round = round;
  if (imported) {
    // The job's model.logits, found by importing its module again; without them the
    // parameters as the file has them (the snapshot can be read, not sampled).
    absl::StatusOr<ImportedSampling> sampling = ImportedSamplingOf(ckpt.Meta("pcp.job"), ckpt.Meta("pcp.model"));
    if (sampling.ok() && sampling->logits.has_value()) {
      snap->imported_logits = std::make_shared<const Function>(*std::move(sampling->logits));
      snap->names = std::move(sampling->names);
      PCP_ASSIGN_OR_RETURN(snap->params, ParamsInOrder(ckpt, snap->names), _ << path);
      return std::shared_ptr<const ParamsSnapshot>(std::move(snap));
    }
    if (!sampling.ok())
      spdlog::warn("job {}: no sampling from {}: {}", job_id, path, std::string(sampling.status().message()));
    for (NamedTensor& t : ckpt.params) {
      snap->names.push_back(t.name);
      snap->params.push_back(std::move(t.tensor));
    }
    return std::shared_ptr<const ParamsSnapshot>(std::move(snap));
  }
  PCP_ASSIGN_OR_RETURN(std::vector<GptParamSpec> specs, GptParamSpecs(*snap->model));
  for (const GptParamSpec& s : specs) snap->names.push_back(s.name);
  PCP_ASSIGN_OR_RETURN(snap->params, ParamsInOrder(ckpt, snap->names), _ << path);
  return std::shared_ptr<const ParamsSnapshot>(std::move(snap));
}

absl::StatusOr<v1::SampleResponse> SampleText(const ParamsSnapshot& snap, const v1::SampleRequest& request,
                                              int threads) {
  if (!snap.model.has_value() && snap.imported_logits == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("job ", snap.job_id, ": ", kNoLogitsReason));
  }
  if (int64_t{request.max_new_tokens()} > kMaxSampleTokens) {
    return absl::InvalidArgumentError(absl::StrCat("max_new_tokens must be 1-", kMaxSampleTokens,
                                                   " (0 = the job's), got ", request.max_new_tokens()));
  }
  if (request.has_temperature() && !(request.temperature() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("temperature must be > 0, got ", request.temperature()));
  }
  const Tokenizer tokenizer = snap.tokenizer.value_or(Tokenizer::Byte());
  const std::string prompt = request.prompt().empty() ? "\n" : request.prompt();
  PCP_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.Encode(prompt), _ << "prompt");
  SampleOptions options{.max_new_tokens =
                            request.max_new_tokens() > 0 ? request.max_new_tokens() : snap.sample.max_new_tokens,
                        .temperature = request.has_temperature() ? request.temperature() : snap.sample.temperature,
                        .top_k = request.has_top_k() ? static_cast<int64_t>(request.top_k()) : snap.sample.top_k,
                        .seed = request.seed(),
                        .vocab = tokenizer.vocab_size()};
  Function gpt_logits;
  if (snap.model.has_value()) {
    PCP_ASSIGN_OR_RETURN(gpt_logits,
                         BuildSampleLogits(*snap.model, static_cast<int64_t>(ids.size()) + options.max_new_tokens));
  }
  const Function& logits = snap.model.has_value() ? gpt_logits : *snap.imported_logits;
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend("cpu", threads));
  PCP_ASSIGN_OR_RETURN(auto sampler, TextSampler::Create(*backend, logits, snap.params));
  PCP_ASSIGN_OR_RETURN(std::vector<int32_t> out, sampler->Generate(ids, options));
  std::vector<int32_t> generated(out.begin() + static_cast<std::ptrdiff_t>(ids.size()), out.end());
  PCP_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(generated));
  v1::SampleResponse response;
  // A byte-level model may emit bytes that are not UTF-8 (a stray byte, half a character);
  // a protobuf string holding them fails to parse at the client, losing the whole sample.
  response.set_text(ToValidUtf8(text));
  response.set_job_id(snap.job_id);
  response.set_round(snap.round);
  response.set_final_parameters(snap.final);
  response.set_tokens_generated(static_cast<uint32_t>(generated.size()));
  return response;
}

}  // namespace pcp::shepherd
