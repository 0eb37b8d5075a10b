// A training job as written in YAML: the schema as structs, a validating parser whose every
// error is one line "FILE:LINE:COL: key: problem", and a printer of the effective config.
//
//   PCP_ASSIGN_OR_RETURN(JobConfig job, LoadJobConfig("config/jobs/shakespeare_char.yaml"));
//   PCP_ASSIGN_OR_RETURN(Dataset data, LoadJobDataset(&job, DataRoots::Unconfined()));
//                                                              // fills model.vocab_size
//   GPTConfig gpt = job.model.ToGPTConfig();
//   double lr = job.optimizer.Schedule().At(step);
//   std::string effective = ToYaml(job);   // parses back to an equal JobConfig
//
// The file (every section and key optional except data.path; defaults are nanoGPT's
// shakespeare_char CPU settings):
//
//   name: shakespeare_char      # [A-Za-z0-9._-]+; default: the file's stem
//   model:    {vocab_size: 0 (= from the data), block_size: 64, n_layer: 4, n_head: 4,
//              n_embd: 128, bias: false, dropout: 0 (must be 0)}
//     or an imported StableHLO loss function (pcp/models/stablehlo_model.h):
//   model:    {stablehlo: (path, relative to the job file; read through the data roots),
//              function: main (the loss; "" = formed from `logits`), logits: (optional: a
//              function returning logits [B, T, V] from the loss's arguments less the targets;
//              makes the model sampleable; given alone, `function` defaults to "" and the loss
//              is the mean cross-entropy of these logits), params: (optional safetensors: one tensor per non-data argument,
//              matched by name (`names`, or the module's argument names when the file has
//              them all), else in argument order), names: [...]
//              (one per non-data argument), data_args: [tokens, targets] (names or %argN / N;
//              default the last two), frozen: [...] (inputs, not trained: values from params),
//              init: {std: 0.02, ones: ["*norm*weight", "*norm*scale", "*ln*weight",
//              "*ln*scale"]} (without params: normal(0, std) for rank >= 2 seeded with
//              training.seed, 1-D matching `ones` 1, other 1-D 0), block_size: (T of the data
//              arguments; must agree)}
//              n_layer, n_head, n_embd, bias and vocab_size are errors with stablehlo, and
//              training.batch_size defaults to the data arguments' B (must agree).
//   data:     {path: (required; relative to the job file), format: text_char|text_byte|bin
//              (default: .bin -> bin, else text_char), val_path: (bin only; default
//              val.bin beside train.bin), shared: false}
//   optimizer: {lr: 1e-3, min_lr: 1e-4, warmup_iters: 100, lr_decay_iters: (max_iters),
//              beta1: 0.9, beta2: 0.99, eps: 1e-8, weight_decay: 0.1, grad_clip: 1.0 (0: off),
//              schedule: cosine|constant}
//   training: {max_iters: 2000, batch_size: 12, eval_interval: 250, eval_iters: 200,
//              log_interval: 10, seed: 1337, out_dir: out, threads: 0 (auto),
//              backend: cpu|vulkan|auto, precision: f32|bf16|f16 (products and their
//              outputs rounded to bf16 / f16, f32 master weights and optimizer;
//              pcp/autodiff/mixed_precision.h; f16 with a static loss scale of 1024),
//              attention: decomposed|fused (fused: softmax(q kᵀ) v as one pcp.attention op
//              with FlashAttention's backward, pcp/autodiff/attention.h)}
//   diloco:   {workers: 2, inner_steps: 50, outer_lr: 0.7, outer_momentum: 0.9,
//              nesterov: true, rounds: (ceil(max_iters / steps per round)), min_workers: 1,
//              round_deadline_s: 600, checkpoint_every: 5 (rounds), eval_every: 1 (rounds),
//              screening: {norm_k: 5, max_norm: 1e4 (0: no cap), action: reject|clip,
//                          quarantine_after: 3 (0: never), max_rollbacks: 3,
//                          trimmed_mean: 0.0 (fraction trimmed at each end, [0, 0.5))},
//              compression: {up: f32|bf16|int8|int4|topk2|topk4|topk8, down: (same),
//                            error_feedback: auto|true|false, density: 0.02 (sparse
//                            codecs: fraction of each block sent, [2^-16, 1]),
//                            ef_decay: 1 ((0, 1]), down_mode: feedback|union (union:
//                            sparse down, outer_momentum 0), scheme: none|sparseloco
//                            (sets the keys left out: pcp/codec/compression.h)},
//              streaming: {fragments: 1 (P <= inner_steps), overlap_steps: 0
//                          (< inner_steps / P), alpha: 0.5 ([0, 1))},
//              time_budget: {seconds: 0 (off), min_steps: 1, max_steps: (4 × inner_steps)}
//                           (no streaming; pcp/training/round_budget.h),
//              aggregation: auto|streaming|buffered (streaming: no trimmed_mean),
//              orphan_slots: takeover|idle, mode: sync|async (async: no streaming),
//              async: {quorum: 1 ([1, workers]), grace_ms: 0,
//                      staleness: beyond_round|inverse|none, momentum: delayed|every_group}}
//              (screening: see pcp/diloco/screening.h; compression: pcp/codec/compression.h;
//              streaming: pcp/diloco/streaming.h; aggregation: pcp/diloco/delta_sum.h;
//              orphan_slots: pcp/diloco/slot_takeover.h; mode and async: pcp/diloco/async.h. A
//              round is about inner_steps / P steps: DiLoCoConfig::StepsOfRound.)
//   sample:   {prompt: "\n", max_new_tokens: 500, temperature: 0.8, top_k: 200 (0: off)}
//
// Every number has an upper bound (the error names it): vocab_size 65536, block_size and
// n_embd 2^20, n_layer 1024, n_head 2^14, batch_size 2^20, threads 4096, workers and
// min_workers 65536; max_iters, warmup_iters, lr_decay_iters, eval_interval, log_interval 10^9;
// inner_steps, rounds, checkpoint_every, eval_every 10^6; eval_iters 10^5; round_deadline_s
// 7 days; max_new_tokens 10000 (kMaxSampleTokens); top_k 65536; temperature 1000.
#ifndef PCP_TRAINING_JOB_CONFIG_H_
#define PCP_TRAINING_JOB_CONFIG_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/attention.h"
#include "pcp/autodiff/mixed_precision.h"
#include "pcp/codec/compression.h"
#include "pcp/diloco/async.h"
#include "pcp/diloco/delta_sum.h"
#include "pcp/diloco/screening.h"
#include "pcp/diloco/slot_takeover.h"
#include "pcp/diloco/streaming.h"
#include "pcp/models/gpt_config.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/dataset.h"
#include "pcp/training/lr_schedule.h"

namespace pcp {

// The most tokens one sample may generate (a job's sample.max_new_tokens, Admin.Sample's).
inline constexpr int64_t kMaxSampleTokens = 10000;

enum class BackendChoice { kCpu, kVulkan, kAuto };
// Every backend choice with its name in job files: the one place the names are spelled.
inline constexpr std::pair<BackendChoice, absl::string_view> kBackendChoiceNames[] = {
    {BackendChoice::kCpu, "cpu"},
    {BackendChoice::kVulkan, "vulkan"},
    {BackendChoice::kAuto, "auto"},
};
absl::string_view BackendChoiceName(BackendChoice backend);

// model.init: initial values of an imported model without a params file (StableHloInit).
struct StableHloInitConfig {
  double std = 0.02;  // normal(0, std) for parameters of rank >= 2
  // 1-D (and scalar) parameters whose name matches one of these globs start at 1, others at 0.
  std::vector<std::string> ones = {"*norm*weight", "*norm*scale", "*ln*weight", "*ln*scale"};
  bool operator==(const StableHloInitConfig&) const = default;
};

struct ModelConfig {
  int64_t vocab_size = 0;  // 0: the data's vocabulary (see LoadJobDataset); at most 65536
  int64_t block_size = 64;
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;  // divisible by n_head
  bool bias = false;     // nanoGPT train.py's default
  // (dropout is accepted in the file only as 0: PCP trains without dropout.)

  // An imported model (model.stablehlo set; pcp/models/stablehlo_model.h says what the
  // import does). Then n_layer, n_head, n_embd, bias and vocab_size are not used (an error
  // in the file), and block_size and training.batch_size come from the data arguments.
  std::string stablehlo;               // absolute, normalized; "" = the built-in GPT
  std::string function = "main";       // "" (only with logits): the loss is formed from the logits
  std::string logits;                  // "" = none: the model cannot be sampled
  std::string params;                  // absolute, normalized, or "": the safetensors file of initial values
  std::vector<std::string> names;      // one per non-data argument (optional)
  std::vector<std::string> data_args;  // [tokens, targets] by name or index; empty: the last two
  std::vector<std::string> frozen;     // arguments that are inputs, not trained (values from params)
  StableHloInitConfig init;
  // Derived from the module while parsing, not written in the file (equal after a re-parse
  // of the same files): Sha256ContentHash of the module text, the trainable elements and the
  // elements of every value of the forward (EstimateJobMemory's bound).
  std::string stablehlo_sha256;
  int64_t imported_params = 0;
  int64_t imported_value_elements = 0;

  bool imported() const { return !stablehlo.empty(); }

  // The model's hyperparameters; vocab_size must have been resolved (non-zero).
  GPTConfig ToGPTConfig() const {
    return GPTConfig{.vocab_size = vocab_size,
                     .block_size = block_size,
                     .n_layer = n_layer,
                     .n_head = n_head,
                     .n_embd = n_embd,
                     .bias = bias};
  }
  bool operator==(const ModelConfig&) const = default;
};

struct DataConfig {
  std::string path;  // absolute, normalized; exists
  DataFormat format = DataFormat::kTextChar;
  std::string val_path;  // kBin: absolute, exists; text formats: empty
  bool shared = false;   // cluster: every worker sees `path` (else the shepherd sends shards)
  bool operator==(const DataConfig&) const = default;
};

struct OptimizerConfig {
  double lr = 1e-3;
  double min_lr = 1e-4;  // <= lr
  int64_t warmup_iters = 100;
  int64_t lr_decay_iters = 2000;  // default: training.max_iters
  double beta1 = 0.9;             // [0, 1)
  double beta2 = 0.99;            // [0, 1)
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // global-norm clip; 0 disables
  LrScheduleKind schedule = LrScheduleKind::kCosine;

  LrSchedule Schedule() const {
    return LrSchedule{
        .kind = schedule, .lr = lr, .min_lr = min_lr, .warmup_iters = warmup_iters, .lr_decay_iters = lr_decay_iters};
  }
  bool operator==(const OptimizerConfig&) const = default;
};

struct TrainingConfig {
  int64_t max_iters = 2000;
  int64_t batch_size = 12;
  int64_t eval_interval = 250;
  int64_t eval_iters = 200;
  int64_t log_interval = 10;
  int64_t seed = 1337;  // >= 0
  std::string out_dir = "out";
  int64_t threads = 0;  // 0: automatic
  BackendChoice backend = BackendChoice::kCpu;
  Precision precision = Precision::kF32;                 // mixed precision of the compiled programs
  AttentionMode attention = AttentionMode::kDecomposed;  // fused: pcp.attention ops
  bool operator==(const TrainingConfig&) const = default;
};

// Job YAML diloco.time_budget: time-budgeted rounds (dynamic local updates). Each worker
// trains for `seconds` per round, at least min_steps and at most max_steps steps, and the
// round's Δs are averaged weighted by their tokens; the job ends at the tokens a fixed-τ run
// would train (pcp/training/round_budget.h). Off with seconds 0: every round is inner_steps.
struct TimeBudgetConfig {
  double seconds = 0;       // a worker's training time per round
  int64_t min_steps = 1;    // steps run whatever the worker's speed
  int64_t max_steps = 200;  // steps run at most; default 4 × inner_steps
  bool enabled() const { return seconds > 0; }
  bool operator==(const TimeBudgetConfig&) const = default;
};

struct DiLoCoConfig {
  int64_t workers = 2;
  int64_t inner_steps = 50;  // tau: local steps per round
  double outer_lr = 0.7;
  double outer_momentum = 0.9;  // [0, 1)
  bool nesterov = true;
  int64_t rounds = 40;      // default: the rounds that cover training.max_iters steps
  int64_t min_workers = 1;  // <= workers: results needed to close a round
  double round_deadline_s = 600.0;
  int64_t checkpoint_every = 5;           // rounds
  int64_t eval_every = 1;                 // rounds
  diloco::ScreeningOptions screening;     // Δ screening, rollback, trimmed mean
  codec::CompressionOptions compression;  // codecs of Δ (up) and θ updates (down)
  diloco::StreamingOptions streaming;     // fragments synced in turn, overlap, merge α
  TimeBudgetConfig time_budget;           // rounds of a time budget instead of τ steps
  // How the shepherd combines the Δs (pcp/diloco/delta_sum.h): streaming sums them as they
  // arrive in O(|θ|) memory; auto streams once workers × |Δ| passes 256 MiB.
  diloco::Aggregation aggregation = diloco::Aggregation::kAuto;
  // A slot whose worker is quarantined, lost or missing: its shard is trained by the workers
  // that are working (takeover) or not at all (idle).
  diloco::OrphanSlots orphan_slots = diloco::OrphanSlots::kTakeover;
  // Rounds in lockstep (sync) or Δs applied as they arrive (async, with `async`'s settings).
  diloco::RoundMode mode = diloco::RoundMode::kSync;
  diloco::AsyncOptions async;
  // Round r (from 1) runs global inner steps [FirstStep(r), FirstStep(r + 1)): τ steps, or with
  // streaming ⌊r·τ/P⌋ − ⌊(r−1)·τ/P⌋ (each round syncs one fragment, so fragment p syncs every
  // τ steps; with τ = 50 and P = 4 the rounds are 12, 13, 12, 13, ... steps).
  int64_t FirstStep(uint64_t round) const {
    return static_cast<int64_t>((round - 1) * static_cast<uint64_t>(inner_steps) /
                                static_cast<uint64_t>(streaming.fragments));
  }
  int64_t StepsOfRound(uint64_t round) const { return FirstStep(round + 1) - FirstStep(round); }
  // The longest round's steps (⌈τ/P⌉, or time_budget.max_steps) and the shortest (⌊τ/P⌋).
  int64_t max_steps_per_round() const {
    if (time_budget.enabled()) return time_budget.max_steps;
    return (inner_steps + streaming.fragments - 1) / streaming.fragments;
  }
  int64_t min_steps_per_round() const { return inner_steps / streaming.fragments; }
  bool operator==(const DiLoCoConfig&) const = default;
};

struct SampleConfig {
  std::string prompt = "\n";
  int64_t max_new_tokens = 500;
  double temperature = 0.8;
  int64_t top_k = 200;  // 0: no top-k filtering
  bool operator==(const SampleConfig&) const = default;
};

struct JobConfig {
  std::string name = "job";
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  TrainingConfig training;
  DiLoCoConfig diloco;
  SampleConfig sample;
  bool operator==(const JobConfig&) const = default;
};

// Parses and validates a job. `file_name` is used in messages only; relative data paths are
// resolved against `base_dir` (the job file's folder; "" = the working directory) and must
// be files `data_roots` lets be read (data_roots.h: a service passes its confined roots).
// Errors are InvalidArgument, one line "FILE:LINE:COL: key: problem" (for a refused data path
// the problem is DataRoots::RefusalMessage: the same whether or not the file exists).
absl::StatusOr<JobConfig> ParseJobConfig(absl::string_view yaml_text, absl::string_view file_name,
                                         const std::string& base_dir, const DataRoots& data_roots);
// Reads `path` and parses it with base_dir = its folder. For a user's own job files (the
// local tools): data paths are not confined (DataRoots::Unconfined()).
absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path);

// The full effective configuration as YAML (every key, derived defaults filled in);
// ParseJobConfig(ToYaml(c), ...) == c.
std::string ToYaml(const JobConfig& config);

// Every key of the schema, qualified ("name", "model.n_layer", ...), in file order.
std::vector<std::string> JobConfigKeys();

// Loads the job's data through `data_roots` (checking it against model.block_size), then sets
// model.vocab_size from the data when it is 0, or checks every token is below it.
absl::StatusOr<Dataset> LoadJobDataset(JobConfig* config, const DataRoots& data_roots);

}  // namespace pcp

#endif  // PCP_TRAINING_JOB_CONFIG_H_
