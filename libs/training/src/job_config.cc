#include "pcp/training/job_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/enum_names.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/config/yaml_fields.h"
#include "pcp/training/job_model.h"

namespace pcp {
namespace {

namespace fs = std::filesystem;
using yaml_fields::BoolField;
using yaml_fields::Context;
using yaml_fields::EnumField;
using yaml_fields::Field;
using yaml_fields::IntField;
using yaml_fields::IntRange;
using yaml_fields::kAtLeast0;
using yaml_fields::kAtLeast1;
using yaml_fields::kNonNegative;
using yaml_fields::kPositive;
using yaml_fields::kUnitHalfOpen;
using yaml_fields::RealField;
using yaml_fields::SectionField;
using yaml_fields::StringField;
using yaml_fields::StringListField;
using yaml_fields::Value;

// ------------------------------------------------------------------ the schema, key by key
//
// Every number has an upper bound: a job is submitted by someone else, and each of these
// sizes a loop, a wait or an allocation. With these bounds every shape product of a model
// fits int64 (EstimateJobMemory in job_memory.h checks them anyway).

using yaml_fields::RealRange;
// Steps of a schedule (nanoGPT counts iterations in the thousands; 10^9 is decades of them).
constexpr IntRange kIters0{0, 1'000'000'000};
constexpr IntRange kIters1{1, 1'000'000'000};
// Rounds and steps per round: a million each.
constexpr IntRange kRounds{1, 1'000'000};

bool IsValidJobName(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

Field<JobConfig> NameField() {
  return {"name",
          [](const Value& v, Context& ctx, JobConfig& out) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(std::string name, yaml_fields::ReadScalar(v, ctx, "a string"));
            if (!IsValidJobName(name)) {
              return ctx.Error(v.mark, absl::StrCat("name: expected letters, digits, '.', '_' "
                                                    "or '-', got ",
                                                    yaml_fields::Describe(v.node)));
            }
            out.name = std::move(name);
            return absl::OkStatus();
          },
          [](const JobConfig& in, int) { return absl::StrCat(" ", yaml_fields::EmitString(in.name)); }};
}

// Accepted only as 0, so that nanoGPT configs carry over and nobody expects dropout.
Field<ModelConfig> DropoutField() {
  return {"dropout",
          [](const Value& v, Context& ctx, ModelConfig&) -> absl::Status {
            PCP_ASSIGN_OR_RETURN(double p, yaml_fields::ReadReal(v, ctx, kNonNegative));
            if (p != 0.0) {
              return ctx.Error(v.mark, absl::StrCat(v.qkey,
                                                    ": must be 0 (PCP trains without "
                                                    "dropout), got ",
                                                    yaml_fields::Describe(v.node)));
            }
            return absl::OkStatus();
          },
          [](const ModelConfig&, int) { return std::string(" 0.0"); }};
}

const std::vector<Field<StableHloInitConfig>>* InitFields() {
  static const auto* fields = new std::vector<Field<StableHloInitConfig>>{
      RealField("std", &StableHloInitConfig::std, kNonNegative),
      StringListField("ones", &StableHloInitConfig::ones),
  };
  return fields;
}

const std::vector<Field<ModelConfig>>* ModelFields() {
  static const auto* fields = new std::vector<Field<ModelConfig>>{
      IntField("vocab_size", &ModelConfig::vocab_size, IntRange{0, kMaxTokenVocab}),
      IntField("block_size", &ModelConfig::block_size, IntRange{1, 1 << 20}),
      IntField("n_layer", &ModelConfig::n_layer, IntRange{1, 1024}),
      IntField("n_head", &ModelConfig::n_head, IntRange{1, 1 << 14}),
      IntField("n_embd", &ModelConfig::n_embd, IntRange{1, 1 << 20}),
      BoolField("bias", &ModelConfig::bias),
      DropoutField(),
      StringField("stablehlo", &ModelConfig::stablehlo, /*allow_empty=*/false),
      StringField("function", &ModelConfig::function, /*allow_empty=*/true),
      StringField("logits", &ModelConfig::logits, /*allow_empty=*/false),
      StringField("params", &ModelConfig::params, /*allow_empty=*/false),
      StringListField("names", &ModelConfig::names),
      StringListField("data_args", &ModelConfig::data_args),
      StringListField("frozen", &ModelConfig::frozen),
      SectionField("init", &ModelConfig::init, InitFields()),
  };
  return fields;
}

// Keys only the built-in GPT reads (an error with model.stablehlo), and keys only an imported
// model reads (not printed for a GPT job). block_size serves both.
constexpr absl::string_view kGptOnlyKeys[] = {"vocab_size", "n_layer", "n_head", "n_embd", "bias"};
constexpr absl::string_view kImportOnlyKeys[] = {"stablehlo", "function",  "logits", "params",
                                                 "names",     "data_args", "frozen", "init"};

bool IsIn(absl::Span<const absl::string_view> keys, absl::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// The model section, printed with the keys of its kind of model only.
Field<JobConfig> ModelSectionField() {
  Field<JobConfig> field = SectionField("model", &JobConfig::model, ModelFields());
  field.emit = [](const JobConfig& in, int indent) {
    std::vector<Field<ModelConfig>> shown;
    for (const Field<ModelConfig>& f : *ModelFields()) {
      // An imported model's optional files and functions are left out when unset: "" is not a
      // value the parser takes back for them.
      const bool unset =
          (f.key == "params" && in.model.params.empty()) || (f.key == "logits" && in.model.logits.empty());
      const bool skip = in.model.imported() ? (IsIn(kGptOnlyKeys, f.key) || f.key == "dropout" || unset)
                                            : IsIn(kImportOnlyKeys, f.key);
      if (!skip) shown.push_back(f);
    }
    return absl::StrCat("\n", yaml_fields::EmitMapping(shown, in.model, indent + 2));
  };
  return field;
}

const std::vector<Field<DataConfig>>* DataFields() {
  static const auto* fields = new std::vector<Field<DataConfig>>{
      StringField("path", &DataConfig::path, /*allow_empty=*/false),
      EnumField("format", &DataConfig::format, absl::MakeConstSpan(kDataFormatNames)),
      StringField("val_path", &DataConfig::val_path, /*allow_empty=*/true),
      BoolField("shared", &DataConfig::shared),
  };
  return fields;
}

const std::vector<Field<OptimizerConfig>>* OptimizerFields() {
  static const auto* fields = new std::vector<Field<OptimizerConfig>>{
      RealField("lr", &OptimizerConfig::lr, kPositive),
      RealField("min_lr", &OptimizerConfig::min_lr, kNonNegative),
      IntField("warmup_iters", &OptimizerConfig::warmup_iters, kIters0),
      IntField("lr_decay_iters", &OptimizerConfig::lr_decay_iters, kIters0),
      RealField("beta1", &OptimizerConfig::beta1, kUnitHalfOpen),
      RealField("beta2", &OptimizerConfig::beta2, kUnitHalfOpen),
      RealField("eps", &OptimizerConfig::eps, kPositive),
      RealField("weight_decay", &OptimizerConfig::weight_decay, kNonNegative),
      RealField("grad_clip", &OptimizerConfig::grad_clip, kNonNegative),
      EnumField("schedule", &OptimizerConfig::schedule, absl::MakeConstSpan(kLrScheduleNames)),
  };
  return fields;
}

const std::vector<Field<TrainingConfig>>* TrainingFields() {
  static const auto* fields = new std::vector<Field<TrainingConfig>>{
      IntField("max_iters", &TrainingConfig::max_iters, kIters1),
      IntField("batch_size", &TrainingConfig::batch_size, IntRange{1, 1 << 20}),
      IntField("eval_interval", &TrainingConfig::eval_interval, kIters1),
      IntField("eval_iters", &TrainingConfig::eval_iters, IntRange{1, 100000}),
      IntField("log_interval", &TrainingConfig::log_interval, kIters1),
      IntField("seed", &TrainingConfig::seed, kAtLeast0),
      StringField("out_dir", &TrainingConfig::out_dir, /*allow_empty=*/false),
      IntField("threads", &TrainingConfig::threads, IntRange{0, 4096}),
      EnumField("backend", &TrainingConfig::backend, absl::MakeConstSpan(kBackendChoiceNames)),
      EnumField("precision", &TrainingConfig::precision, absl::MakeConstSpan(kPrecisionNames)),
      EnumField("attention", &TrainingConfig::attention, absl::MakeConstSpan(kAttentionModeNames)),
  };
  return fields;
}

const std::vector<Field<diloco::ScreeningOptions>>* ScreeningFields() {
  using diloco::ScreeningOptions;
  static const auto* fields = new std::vector<Field<ScreeningOptions>>{
      RealField("norm_k", &ScreeningOptions::norm_k, yaml_fields::RealRange{1.0}),
      RealField("max_norm", &ScreeningOptions::max_norm, kNonNegative),
      EnumField("action", &ScreeningOptions::action, absl::MakeConstSpan(diloco::kScreenActionNames)),
      IntField("quarantine_after", &ScreeningOptions::quarantine_after, kAtLeast0),
      IntField("max_rollbacks", &ScreeningOptions::max_rollbacks, kAtLeast1),
      RealField("trimmed_mean", &ScreeningOptions::trimmed_mean, yaml_fields::RealRange{0.0, 0.5, false, true}),
  };
  return fields;
}

const std::vector<Field<codec::CompressionOptions>>* CompressionFields() {
  using codec::CompressionOptions;
  static const auto* fields = new std::vector<Field<CompressionOptions>>{
      EnumField("up", &CompressionOptions::up, absl::MakeConstSpan(codec::kCodecNames)),
      EnumField("down", &CompressionOptions::down, absl::MakeConstSpan(codec::kCodecNames)),
      EnumField("error_feedback", &CompressionOptions::error_feedback, absl::MakeConstSpan(codec::kFeedbackModeNames)),
      RealField("density", &CompressionOptions::density, RealRange{codec::kMinDensity, 1.0, false, false}),
      RealField("ef_decay", &CompressionOptions::ef_decay, RealRange{0.0, 1.0, true, false}),
      EnumField("down_mode", &CompressionOptions::down_mode, absl::MakeConstSpan(codec::kDownModeNames)),
      EnumField("scheme", &CompressionOptions::scheme, absl::MakeConstSpan(codec::kCompressionSchemeNames)),
  };
  return fields;
}

const std::vector<Field<diloco::StreamingOptions>>* StreamingFields() {
  using diloco::StreamingOptions;
  static const auto* fields = new std::vector<Field<StreamingOptions>>{
      IntField("fragments", &StreamingOptions::fragments, IntRange{1, 1024}),
      IntField("overlap_steps", &StreamingOptions::overlap_steps, kAtLeast0),
      RealField("alpha", &StreamingOptions::alpha, yaml_fields::RealRange{0.0, 1.0, false, true}),
  };
  return fields;
}

const std::vector<Field<TimeBudgetConfig>>* TimeBudgetFields() {
  static const auto* fields = new std::vector<Field<TimeBudgetConfig>>{
      RealField("seconds", &TimeBudgetConfig::seconds, RealRange{0.0, 24 * 3600.0, false, false}),
      IntField("min_steps", &TimeBudgetConfig::min_steps, IntRange{1, 1'000'000}),
      IntField("max_steps", &TimeBudgetConfig::max_steps, IntRange{1, 1'000'000}),
  };
  return fields;
}

const std::vector<Field<diloco::AsyncOptions>>* AsyncFields() {
  using diloco::AsyncOptions;
  static const auto* fields = new std::vector<Field<AsyncOptions>>{
      IntField("quorum", &AsyncOptions::quorum, IntRange{1, 1 << 16}),
      IntField("grace_ms", &AsyncOptions::grace_ms, IntRange{0, 3600 * 1000}),
      EnumField("staleness", &AsyncOptions::staleness, absl::MakeConstSpan(diloco::kStalenessRuleNames)),
      EnumField("momentum", &AsyncOptions::momentum, absl::MakeConstSpan(diloco::kAsyncMomentumNames)),
  };
  return fields;
}

const std::vector<Field<DiLoCoConfig>>* DiLoCoFields() {
  static const auto* fields = new std::vector<Field<DiLoCoConfig>>{
      IntField("workers", &DiLoCoConfig::workers, IntRange{1, 1 << 16}),
      IntField("inner_steps", &DiLoCoConfig::inner_steps, kRounds),
      RealField("outer_lr", &DiLoCoConfig::outer_lr, kPositive),
      RealField("outer_momentum", &DiLoCoConfig::outer_momentum, kUnitHalfOpen),
      BoolField("nesterov", &DiLoCoConfig::nesterov),
      IntField("rounds", &DiLoCoConfig::rounds, kRounds),
      IntField("min_workers", &DiLoCoConfig::min_workers, IntRange{1, 1 << 16}),
      RealField("round_deadline_s", &DiLoCoConfig::round_deadline_s, RealRange{0.0, 7 * 24 * 3600.0, true, false}),
      IntField("checkpoint_every", &DiLoCoConfig::checkpoint_every, kRounds),
      IntField("eval_every", &DiLoCoConfig::eval_every, kRounds),
      SectionField("screening", &DiLoCoConfig::screening, ScreeningFields()),
      SectionField("compression", &DiLoCoConfig::compression, CompressionFields()),
      SectionField("streaming", &DiLoCoConfig::streaming, StreamingFields()),
      SectionField("time_budget", &DiLoCoConfig::time_budget, TimeBudgetFields()),
      EnumField("aggregation", &DiLoCoConfig::aggregation, absl::MakeConstSpan(diloco::kAggregationNames)),
      EnumField("orphan_slots", &DiLoCoConfig::orphan_slots, absl::MakeConstSpan(diloco::kOrphanSlotsNames)),
      EnumField("mode", &DiLoCoConfig::mode, absl::MakeConstSpan(diloco::kRoundModeNames)),
      SectionField("async", &DiLoCoConfig::async, AsyncFields()),
  };
  return fields;
}

const std::vector<Field<SampleConfig>>* SampleFields() {
  static const auto* fields = new std::vector<Field<SampleConfig>>{
      StringField("prompt", &SampleConfig::prompt, /*allow_empty=*/true),
      IntField("max_new_tokens", &SampleConfig::max_new_tokens, IntRange{1, kMaxSampleTokens}),
      RealField("temperature", &SampleConfig::temperature, RealRange{0.0, 1000.0, true, false}),
      IntField("top_k", &SampleConfig::top_k, IntRange{0, kMaxTokenVocab}),
  };
  return fields;
}

const std::vector<Field<JobConfig>>& TopFields() {
  static const auto* fields = new std::vector<Field<JobConfig>>{
      NameField(),
      ModelSectionField(),
      SectionField("data", &JobConfig::data, DataFields()),
      SectionField("optimizer", &JobConfig::optimizer, OptimizerFields()),
      SectionField("training", &JobConfig::training, TrainingFields()),
      SectionField("diloco", &JobConfig::diloco, DiLoCoFields()),
      SectionField("sample", &JobConfig::sample, SampleFields()),
  };
  return *fields;
}

// ------------------------------------------------------------------- checks across keys

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  std::error_code ec;
  fs::path joined = fs::path(base_dir) / path;
  fs::path absolute = fs::absolute(joined, ec);
  return (ec ? joined : absolute).lexically_normal().string();
}

// The data roots decide (data_roots.h); the message is theirs, placed at the key's line.
absl::Status CheckFile(const Context& ctx, const YAML::Mark& mark, absl::string_view key, const std::string& path,
                       const DataRoots& roots) {
  absl::StatusOr<std::string> checked = roots.Check(path);
  if (!checked.ok()) return ctx.Error(mark, absl::StrCat(key, ": ", checked.status().message()));
  return absl::OkStatus();
}

absl::Status FinishData(const Context& ctx, const std::string& base_dir, const DataRoots& roots, DataConfig& data) {
  if (!ctx.Has("data.path")) {
    return ctx.Error(ctx.KeyMark("data"),
                     "data.path: missing; the training data (a text file, or nanoGPT's "
                     "train.bin) is required");
  }
  const YAML::Mark path_mark = ctx.ValueMark({"data.path"});
  data.path = ResolvePath(base_dir, data.path);
  PCP_RETURN_IF_ERROR(CheckFile(ctx, path_mark, "data.path", data.path, roots));
  if (!ctx.Has("data.format")) data.format = InferDataFormat(data.path);

  if (data.format != DataFormat::kBin) {
    if (!data.val_path.empty()) {
      return ctx.Error(ctx.ValueMark({"data.val_path"}),
                       absl::StrCat("data.val_path: only used with format bin; ", DataFormatName(data.format),
                                    " data is split 90/10"));
    }
    return absl::OkStatus();
  }
  if (data.val_path.empty()) {
    if (fs::path(data.path).filename() != "train.bin") {
      return ctx.Error(ctx.ValueMark({"data.val_path", "data.path"}),
                       "data.val_path: required for format bin unless data.path is a "
                       "train.bin with val.bin beside it");
    }
    data.val_path = (fs::path(data.path).parent_path() / "val.bin").string();
  } else {
    data.val_path = ResolvePath(base_dir, data.val_path);
  }
  return CheckFile(ctx, ctx.ValueMark({"data.val_path", "data.path"}), "data.val_path", data.val_path, roots);
}

// An import's error, placed at the key it names when the file set it, else at model.stablehlo.
absl::Status PlaceImportError(const Context& ctx, const absl::Status& status) {
  const absl::string_view message = status.message();
  const size_t colon = message.find(':');
  const std::string key(message.substr(0, colon == absl::string_view::npos ? 0 : colon));
  if (absl::StartsWith(key, "model.") && ctx.Has(key)) return ctx.Error(ctx.ValueMark({key}), message);
  if (absl::StartsWith(key, "model.")) return ctx.Error(ctx.ValueMark({"model.stablehlo"}), message);
  return ctx.Error(ctx.ValueMark({"model.stablehlo"}), absl::StrCat("model.stablehlo: ", message));
}

// An imported model: its keys checked against the module, block_size and batch_size from it.
absl::Status FinishImport(const Context& ctx, const std::string& base_dir, const DataRoots& roots, JobConfig& c) {
  ModelConfig& m = c.model;
  for (absl::string_view key : kGptOnlyKeys) {
    const std::string qkey = absl::StrCat("model.", key);
    if (ctx.Has(qkey)) {
      return ctx.Error(ctx.KeyMark(qkey),
                       absl::StrCat(qkey, ": not used with model.stablehlo (the module defines the model)"));
    }
  }
  m.stablehlo = ResolvePath(base_dir, m.stablehlo);
  PCP_RETURN_IF_ERROR(CheckFile(ctx, ctx.ValueMark({"model.stablehlo"}), "model.stablehlo", m.stablehlo, roots));
  // A forward-only export: the logits function alone, the loss formed from its logits.
  if (!m.logits.empty() && !ctx.Has("model.function")) m.function.clear();
  if (!m.params.empty()) {
    m.params = ResolvePath(base_dir, m.params);
    PCP_RETURN_IF_ERROR(CheckFile(ctx, ctx.ValueMark({"model.params"}), "model.params", m.params, roots));
  }
  absl::StatusOr<JobModelImport> import = ImportJobModel(m, c.training.seed, roots);
  if (!import.ok()) return PlaceImportError(ctx, import.status());
  const ImportedModel& model = import->model;
  const std::string shape = absl::StrCat("[", model.batch_size, ", ", model.block_size, "]");
  if (ctx.Has("model.block_size") && m.block_size != model.block_size) {
    return ctx.Error(ctx.ValueMark({"model.block_size"}),
                     absl::StrCat("model.block_size: ", m.block_size, " does not match the module's data arguments ",
                                  shape, " (T = ", model.block_size, "); leave it out or set ", model.block_size));
  }
  if (ctx.Has("training.batch_size") && c.training.batch_size != model.batch_size) {
    return ctx.Error(ctx.ValueMark({"training.batch_size"}),
                     absl::StrCat("training.batch_size: ", c.training.batch_size,
                                  " does not match the module's data arguments ", shape, " (B = ", model.batch_size,
                                  "); leave it out or set ", model.batch_size));
  }
  m.block_size = model.block_size;
  c.training.batch_size = model.batch_size;
  m.stablehlo_sha256 = import->sha256;
  m.imported_params = model.num_params;
  m.imported_value_elements = model.value_elements;
  return absl::OkStatus();
}

// diloco.compression.scheme: sparseloco (SparseLoCo, arXiv 2508.15706) gives every key the job
// leaves out the scheme's value (pcp/codec/compression.h); then down_mode union's conditions.
absl::Status FinishCompression(const Context& ctx, DiLoCoConfig& d) {
  codec::CompressionOptions& c = d.compression;
  if (c.scheme == codec::CompressionScheme::kSparseLoco) {
    auto unset = [&ctx](absl::string_view key) { return !ctx.Has(absl::StrCat("diloco.", key)); };
    if (unset("compression.up")) c.up = codec::Codec::kTopk2;
    if (unset("compression.down")) c.down = codec::Codec::kTopk2;
    if (unset("compression.down_mode")) c.down_mode = codec::DownMode::kUnion;
    if (unset("compression.error_feedback")) c.error_feedback = codec::FeedbackMode::kOn;
    if (unset("compression.density")) c.density = codec::kSparseLocoDensity;
    if (unset("compression.ef_decay")) c.ef_decay = codec::kSparseLocoEfDecay;
    if (unset("outer_momentum")) d.outer_momentum = 0;
    if (unset("outer_lr")) d.outer_lr = codec::kSparseLocoOuterLr;
    // Streaming with overlap: a merge that keeps α of the worker's fragment keeps what the
    // round's sparse Δ left out, which error feedback sends again (counted twice: at α 0.5 the
    // default job diverged at lr 4); α 0 takes θ_global's fragment whole.
    if (unset("streaming.alpha")) d.streaming.alpha = 0;
  }
  if (c.down_mode != codec::DownMode::kUnion) return absl::OkStatus();
  if (!codec::IsSparse(c.down)) {
    return ctx.Error(ctx.ValueMark({"diloco.compression.down", "diloco.compression.down_mode"}),
                     absl::StrCat("diloco.compression.down_mode: union sends the update's nonzeros with a sparse "
                                  "codec (topk2, topk4, topk8), not ",
                                  codec::CodecName(c.down)));
  }
  if (d.outer_momentum != 0) {
    return ctx.Error(ctx.ValueMark({"diloco.outer_momentum", "diloco.compression.down_mode"}),
                     absl::StrCat("diloco.compression.down_mode: union needs diloco.outer_momentum 0 (with momentum ",
                                  yaml_fields::EmitReal(d.outer_momentum),
                                  " the update is dense); set diloco.outer_momentum: 0 or down_mode: feedback"));
  }
  return absl::OkStatus();
}

absl::Status Finish(const Context& ctx, const std::string& base_dir, const DataRoots& roots, JobConfig& c) {
  PCP_RETURN_IF_ERROR(FinishData(ctx, base_dir, roots, c.data));
  if (!ctx.Has("model.stablehlo")) {
    for (absl::string_view key : kImportOnlyKeys) {
      const std::string qkey = absl::StrCat("model.", key);
      if (ctx.Has(qkey) || ctx.Has(absl::StrCat(qkey, ".std")) || ctx.Has(absl::StrCat(qkey, ".ones"))) {
        return ctx.Error(ctx.KeyMark(qkey), absl::StrCat(qkey, ": only used with model.stablehlo"));
      }
    }
  } else {
    PCP_RETURN_IF_ERROR(FinishImport(ctx, base_dir, roots, c));
  }
  if (!c.model.imported() && c.model.n_embd % c.model.n_head != 0) {
    return ctx.Error(ctx.ValueMark({"model.n_embd", "model.n_head"}),
                     absl::StrCat("model.n_embd: ", c.model.n_embd, " is not divisible by model.n_head (",
                                  c.model.n_head, ")"));
  }
  if (!ctx.Has("optimizer.lr_decay_iters")) c.optimizer.lr_decay_iters = c.training.max_iters;
  if (c.optimizer.min_lr > c.optimizer.lr) {
    return ctx.Error(ctx.ValueMark({"optimizer.min_lr", "optimizer.lr"}),
                     absl::StrCat("optimizer.min_lr: ", yaml_fields::EmitReal(c.optimizer.min_lr),
                                  " is above optimizer.lr (", yaml_fields::EmitReal(c.optimizer.lr), ")"));
  }
  if (c.diloco.aggregation == diloco::Aggregation::kStreaming && c.diloco.screening.trimmed_mean > 0) {
    return ctx.Error(ctx.ValueMark({"diloco.aggregation", "diloco.screening.trimmed_mean"}),
                     "diloco.aggregation: streaming cannot take a trimmed mean (it needs every Δ of a "
                     "coordinate at once); use buffered (or auto), or diloco.screening.trimmed_mean: 0");
  }
  PCP_RETURN_IF_ERROR(FinishCompression(ctx, c.diloco));
  const diloco::StreamingOptions& streaming = c.diloco.streaming;
  if (streaming.fragments > c.diloco.inner_steps) {
    return ctx.Error(ctx.ValueMark({"diloco.streaming.fragments", "diloco.inner_steps"}),
                     absl::StrCat("diloco.streaming.fragments: ", streaming.fragments,
                                  " is more than diloco.inner_steps (", c.diloco.inner_steps,
                                  "): each fragment syncs every inner_steps steps, one at a time"));
  }
  if (streaming.overlap_steps >= c.diloco.min_steps_per_round()) {
    return ctx.Error(ctx.ValueMark({"diloco.streaming.overlap_steps", "diloco.inner_steps"}),
                     absl::StrCat("diloco.streaming.overlap_steps: ", streaming.overlap_steps,
                                  " must be below diloco.inner_steps / fragments (", c.diloco.min_steps_per_round(),
                                  "): a fragment's result is merged before the next fragment syncs"));
  }
  TimeBudgetConfig& budget = c.diloco.time_budget;
  if (!ctx.Has("diloco.time_budget.max_steps")) budget.max_steps = 4 * c.diloco.inner_steps;
  if (budget.min_steps > budget.max_steps) {
    return ctx.Error(ctx.ValueMark({"diloco.time_budget.min_steps", "diloco.time_budget.max_steps"}),
                     absl::StrCat("diloco.time_budget.min_steps: ", budget.min_steps,
                                  " is more than diloco.time_budget.max_steps (", budget.max_steps, ")"));
  }
  if (budget.enabled() && streaming.enabled()) {
    return ctx.Error(ctx.ValueMark({"diloco.time_budget.seconds", "diloco.streaming.fragments"}),
                     "diloco.time_budget.seconds: time-budgeted rounds cannot be streamed (diloco.streaming: "
                     "fragments 1, overlap_steps 0), nor streamed rounds time-budgeted");
  }
  if (!ctx.Has("diloco.rounds")) {
    // The fewest rounds whose steps reach max_iters: ceil(max_iters · P / τ).
    const int64_t num = c.training.max_iters * streaming.fragments;
    c.diloco.rounds = num / c.diloco.inner_steps + (num % c.diloco.inner_steps != 0 ? 1 : 0);
  }
  if (c.diloco.rounds > kRounds.max) {
    return ctx.Error(ctx.ValueMark({"training.max_iters", "diloco.inner_steps"}),
                     absl::StrCat("diloco.rounds: ceil(training.max_iters × fragments / diloco.inner_steps) = ",
                                  c.diloco.rounds, " is more than ", kRounds.max,
                                  "; raise inner_steps or set diloco.rounds"));
  }
  if (c.diloco.mode == diloco::RoundMode::kAsync && streaming.enabled()) {
    return ctx.Error(ctx.ValueMark({"diloco.mode", "diloco.streaming.fragments"}),
                     "diloco.mode: async cannot be streamed (diloco.streaming: fragments 1, overlap_steps 0)");
  }
  if (c.diloco.mode == diloco::RoundMode::kAsync && c.diloco.aggregation == diloco::Aggregation::kStreaming) {
    return ctx.Error(ctx.ValueMark({"diloco.mode", "diloco.aggregation"}),
                     "diloco.mode: async keeps each Δ whole until its group is applied (diloco.aggregation: "
                     "buffered or auto)");
  }
  if (c.diloco.async.quorum > c.diloco.workers) {
    return ctx.Error(ctx.ValueMark({"diloco.async.quorum", "diloco.workers"}),
                     absl::StrCat("diloco.async.quorum: ", c.diloco.async.quorum, " is more than diloco.workers (",
                                  c.diloco.workers, ")"));
  }
  if (c.diloco.min_workers > c.diloco.workers) {
    return ctx.Error(ctx.ValueMark({"diloco.min_workers", "diloco.workers"}),
                     absl::StrCat("diloco.min_workers: ", c.diloco.min_workers, " is more than diloco.workers (",
                                  c.diloco.workers, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view BackendChoiceName(BackendChoice backend) { return NameOf(kBackendChoiceNames, backend); }

absl::StatusOr<JobConfig> ParseJobConfig(absl::string_view yaml_text, absl::string_view file_name,
                                         const std::string& base_dir, const DataRoots& data_roots) {
  Context ctx(file_name, "job file");
  JobConfig config;
  std::string stem = fs::path(std::string(file_name)).stem().string();
  if (IsValidJobName(stem)) config.name = stem;
  if (absl::StripAsciiWhitespace(yaml_text).empty()) {
    return ctx.Error(YAML::Mark::null_mark(), "the job file is empty; expected a mapping with at least data.path");
  }
  PCP_RETURN_IF_ERROR(yaml_fields::ParseDocument(yaml_text, TopFields(), ctx, config));
  PCP_RETURN_IF_ERROR(Finish(ctx, base_dir, data_roots, config));
  return config;
}

absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path) {
  PCP_ASSIGN_OR_RETURN(std::string text, ReadFile(path), _ << "reading job file");
  return ParseJobConfig(text, path, fs::path(path).parent_path().string(), DataRoots::Unconfined());
}

std::string ToYaml(const JobConfig& config) {
  return absl::StrCat("# PCP job: the full effective configuration.\n",
                      yaml_fields::EmitMapping(TopFields(), config, 0), "\n");
}

std::vector<std::string> JobConfigKeys() { return yaml_fields::LeafKeysOf(TopFields()); }

absl::StatusOr<Dataset> LoadJobDataset(JobConfig* config, const DataRoots& data_roots) {
  PCP_ASSIGN_OR_RETURN(Dataset data,
                       LoadDataset(config->data.format, config->data.path, config->data.val_path,
                                   config->model.block_size, data_roots),
                       _ << "job '" << config->name << "'");
  if (config->model.vocab_size == 0) {
    config->model.vocab_size = data.vocab_size();
  } else {
    PCP_RETURN_IF_ERROR(data.CheckVocab(config->model.vocab_size),
                        _ << "job '" << config->name << "': " << config->data.path);
  }
  return data;
}

}  // namespace pcp
