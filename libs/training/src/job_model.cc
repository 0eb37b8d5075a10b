#include "pcp/training/job_model.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/sha256.h"
#include "pcp/base/status_macros.h"
#include "pcp/models/gpt.h"

namespace pcp {
namespace {

// A read refused or failed, under the key that named the file.
absl::Status UnderKey(absl::string_view key, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("model.", key, ": ", status.message()));
}

}  // namespace

absl::StatusOr<JobModelImport> ImportJobModel(const ModelConfig& model, int64_t seed, const DataRoots& roots) {
  if (!model.imported())
    return absl::InvalidArgumentError("model.stablehlo: not set (the job trains the built-in GPT)");
  absl::StatusOr<std::string> text = roots.Read(model.stablehlo);
  if (!text.ok()) return UnderKey("stablehlo", text.status());
  StableHloImportOptions options;
  options.function = model.function;
  options.logits = model.logits;
  options.names = model.names;
  options.data_args = model.data_args;
  options.frozen = model.frozen;
  options.init = StableHloInit{.std = model.init.std, .ones = model.init.ones, .seed = static_cast<uint64_t>(seed)};
  if (!model.params.empty()) {
    absl::StatusOr<std::string> bytes = roots.Read(model.params);
    if (!bytes.ok()) return UnderKey("params", bytes.status());
    absl::StatusOr<SafetensorsContents> contents = ParseSafetensors(*bytes);
    if (!contents.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.params: ", model.params, ": ", contents.status().message()));
    }
    options.params = std::move(contents->tensors);
    options.params_file = std::filesystem::path(model.params).filename().string();
  }
  JobModelImport out;
  const std::string file_name = std::filesystem::path(model.stablehlo).filename().string();
  PCP_ASSIGN_OR_RETURN(out.model, ImportStableHloModel(*text, file_name, options));
  out.sha256 = Sha256ContentHash(*text);
  return out;
}

std::string ModelSummary(const ModelConfig& model) {
  if (model.imported()) {
    return absl::StrFormat("stablehlo:%s, %.2fM params", std::filesystem::path(model.stablehlo).filename().string(),
                           static_cast<double>(model.imported_params) / 1e6);
  }
  GPTConfig gpt = model.ToGPTConfig();
  if (gpt.vocab_size == 0) gpt.vocab_size = 1;
  absl::StatusOr<int64_t> n = GptNumParams(gpt, /*non_embedding=*/false);
  return absl::StrFormat("gpt: %d layers x %d heads x %d wide%s", model.n_layer, model.n_head, model.n_embd,
                         n.ok() ? absl::StrFormat(", %.2fM params", static_cast<double>(*n) / 1e6) : "");
}

}  // namespace pcp
