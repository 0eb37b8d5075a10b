#include "pcp/training/checkpoint.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "pcp/base/json.h"
#include "pcp/base/status_macros.h"
#include "pcp/training/job_model.h"

namespace pcp {

std::string ModelCheckpoint::Meta(absl::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return "";
}

absl::Status WriteModelCheckpoint(const std::string& path, const std::vector<std::string>& names,
                                  const std::vector<Tensor>& params, SafetensorsMetadata metadata) {
  if (names.size() != params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(names.size(), " names for ", params.size(), " parameters"));
  }
  // A model whose lm_head is tied to wte (the GPT) gets the head as nanoGPT's state_dict has it;
  // a model with its own lm_head.weight (an imported one) keeps just that.
  const bool tie = std::find(names.begin(), names.end(), kTiedHeadName) == names.end();
  std::vector<NamedTensor> tensors;
  for (size_t i = 0; i < names.size(); ++i) {
    tensors.push_back({names[i], params[i]});
    if (tie && names[i] == kTiedEmbeddingName) tensors.push_back({kTiedHeadName, params[i]});
  }
  metadata.insert(metadata.begin(), {"pcp.format", kCheckpointFormat});
  if (tensors.size() > names.size()) metadata.push_back({"pcp.tied_lm_head", "true"});
  return WriteSafetensorsFile(path, tensors, metadata);
}

absl::StatusOr<ModelCheckpoint> ReadModelCheckpoint(const std::string& path) {
  PCP_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensorsFile(path));
  ModelCheckpoint ckpt;
  ckpt.metadata = std::move(contents.metadata);
  if (ckpt.Meta("pcp.format") != kCheckpointFormat) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a PCP GPT checkpoint (pcp.format is '",
                                                   ckpt.Meta("pcp.format"), "', expected '", kCheckpointFormat, "')"));
  }
  // The tied head is a copy of wte (WriteModelCheckpoint says so; files from before it said so
  // had one whenever the model was the GPT); an untied model's lm_head.weight is its own.
  const bool tied = ckpt.Meta("pcp.tied_lm_head") == "true" ||
                    (ckpt.Meta("pcp.tied_lm_head").empty() && !IsImportedModelSource(ckpt.Meta("pcp.model")));
  for (NamedTensor& t : contents.tensors) {
    if (!tied || t.name != kTiedHeadName) ckpt.params.push_back(std::move(t));
  }
  return ckpt;
}

absl::StatusOr<std::vector<Tensor>> ParamsInOrder(const ModelCheckpoint& ckpt, const std::vector<std::string>& names) {
  if (ckpt.params.size() != names.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint has ", ckpt.params.size(), " parameters, the model expects ", names.size()));
  }
  std::vector<Tensor> out;
  for (const std::string& n : names) {
    const Tensor* found = nullptr;
    for (const NamedTensor& t : ckpt.params) {
      if (t.name == n) found = &t.tensor;
    }
    if (found == nullptr) return absl::NotFoundError(absl::StrCat("checkpoint has no parameter '", n, "'"));
    out.push_back(*found);
  }
  return out;
}

absl::Status WriteOptimizerState(const std::string& path, const std::vector<std::string>& names,
                                 const std::vector<Tensor>& m_then_v, int64_t step) {
  if (m_then_v.size() != 2 * names.size()) {
    return absl::InvalidArgumentError("optimizer state must hold m and v for every parameter");
  }
  std::vector<NamedTensor> tensors;
  for (size_t i = 0; i < names.size(); ++i) tensors.push_back({"m." + names[i], m_then_v[i]});
  for (size_t i = 0; i < names.size(); ++i) tensors.push_back({"v." + names[i], m_then_v[names.size() + i]});
  return WriteSafetensorsFile(path, tensors, {{"pcp.format", "pcp-adamw-1"}, {"pcp.step", absl::StrCat(step)}});
}

std::string GptConfigToJson(const GPTConfig& c) {
  Json j = Json::Object();
  j.Set("vocab_size", c.vocab_size);
  j.Set("block_size", c.block_size);
  j.Set("n_layer", c.n_layer);
  j.Set("n_head", c.n_head);
  j.Set("n_embd", c.n_embd);
  j.Set("bias", c.bias);
  return j.Serialize();
}

std::string ModelSourceJson(const ModelConfig& model) {
  if (!model.imported()) return GptConfigToJson(model.ToGPTConfig());
  Json j = Json::Object();
  j.Set("stablehlo", std::filesystem::path(model.stablehlo).filename().string());
  j.Set("function", model.function);
  if (!model.logits.empty()) j.Set("logits", model.logits);  // absent before model.logits existed
  j.Set("sha256", model.stablehlo_sha256);
  return j.Serialize();
}

bool IsImportedModelSource(absl::string_view json) {
  absl::StatusOr<Json> j = Json::Parse(json);
  return j.ok() && j->is_object() && j->Find("stablehlo") != nullptr;
}

absl::Status CheckModelSource(const ModelConfig& model, absl::string_view json) {
  const std::string want = ModelSourceJson(model);
  if (model.imported() == IsImportedModelSource(json)) {
    if (!model.imported()) {
      // vocab_size may still be 0 in `model` (not yet read from the data): compare the rest.
      absl::StatusOr<GPTConfig> have = GptConfigFromJson(json);
      const GPTConfig w = model.ToGPTConfig();
      if (have.ok() && have->block_size == w.block_size && have->n_layer == w.n_layer && have->n_head == w.n_head &&
          have->n_embd == w.n_embd && have->bias == w.bias && (w.vocab_size == 0 || have->vocab_size == w.vocab_size)) {
        return absl::OkStatus();
      }
    } else if (json == want) {
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat("the checkpoint was written for model ", json, ", the job's model is ", want));
}

absl::StatusOr<ImportedSampling> ImportedSamplingOf(absl::string_view job_yaml, absl::string_view model_json) {
  PCP_ASSIGN_OR_RETURN(JobConfig job, ParseJobConfig(job_yaml, "pcp.job", "", DataRoots::Unconfined()),
                       _ << "the checkpoint's job");
  if (!job.model.imported()) return absl::InvalidArgumentError("the checkpoint's job trains the built-in GPT");
  PCP_RETURN_IF_ERROR(CheckModelSource(job.model, model_json));
  PCP_ASSIGN_OR_RETURN(JobModelImport import, ImportJobModel(job.model, job.training.seed, DataRoots::Unconfined()));
  return ImportedSampling{.logits = std::move(import.model.logits), .names = std::move(import.model.names)};
}

absl::StatusOr<GPTConfig> GptConfigFromJson(absl::string_view text) {
  PCP_ASSIGN_OR_RETURN(Json j, Json::Parse(text), _ << "model config");
  if (!j.is_object()) return absl::InvalidArgumentError("model config: expected a JSON object");
  GPTConfig c;
  for (auto [key, field] : {std::pair<const char*, int64_t*>{"vocab_size", &c.vocab_size},
                            {"block_size", &c.block_size},
                            {"n_layer", &c.n_layer},
                            {"n_head", &c.n_head},
                            {"n_embd", &c.n_embd}}) {
    const Json* v = j.Find(key);
    if (v == nullptr || !v->is_int()) {
      return absl::InvalidArgumentError(absl::StrCat("model config: '", key, "' must be an integer"));
    }
    *field = v->int_value();
  }
  const Json* bias = j.Find("bias");
  if (bias == nullptr || !bias->is_bool())
    return absl::InvalidArgumentError("model config: 'bias' must be true or false");
  c.bias = bias->bool_value();
  PCP_RETURN_IF_ERROR(c.Validate(), _ << "model config");
  return c;
}

}  // namespace pcp
