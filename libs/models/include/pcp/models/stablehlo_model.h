// A model given as a StableHLO loss function (exported by JAX, torch-mlir or PCP itself),
// turned into PCP's training convention:
//   forward_loss(trainable params..., tokens: i32[B, T], targets: i32[B, T]) -> (loss: f32[])
//
//   StableHloImportOptions options;
//   options.data_args = {"tokens", "targets"};      // default: the last two arguments
//   options.frozen = {"rope_cos", "rope_sin"};      // need values from options.params
//   options.params = safetensors.tensors;           // optional, else the init rule
//   PCP_ASSIGN_OR_RETURN(ImportedModel m, ImportStableHloModel(text, "llama_2l.mlir", options));
//   PCP_ASSIGN_OR_RETURN(Function step, BuildTrainStep(m.forward, adamw));   // train_step.h
//
// What the import does to the function named options.function:
//   - the two data arguments (integer, i32 or i64, both [B, T]) move last and become i32;
//     an i64 data argument is converted from the i32 one inside the function;
//   - frozen arguments become constants holding their values, so nothing downstream (train
//     step, workers, Δ, optimizer state, checkpoints) sees them;
//   - every other argument is a trainable parameter (f32), named by options.names (the params
//     file matched by name), else by the module's own argument names (pcp.name) when the
//     params file has every one of them (matched by name: Python's safetensors writes files
//     sorted), else by the params file's tensor names (file order = argument order), else by
//     the module's names, else "argN";
//   - the first result must be the loss, a scalar f32; other results are dropped;
//   - the standard passes run (passes.h) and the result is verified.
// With options.logits (a second function returning logits), the same arguments feed it, and
// ImportedModel::logits makes the model sampleable; a forward-only export gives only that
// function (options.function = "") and PCP forms the loss from its logits:
//   options.function = "";  options.logits = "forward";   // forward(params..., tokens) -> [B, T, V]
// Arguments are referred to (data_args, frozen) by name, or by index as "%argN" or "N".
//
// Errors are InvalidArgument. Problems with an option start with the option's job-file key
// ("model.frozen: 'rope' is not an argument of main; arguments: ..."), so a job parser can
// place them (yaml_fields Context::Locate); problems in the module start with
// "FILE:LINE:COL:" (parse errors, ParseModule's) or "FILE:" (the function's signature, at the
// function's line:col when it can be found in the text).
#ifndef PCP_MODELS_STABLEHLO_MODEL_H_
#define PCP_MODELS_STABLEHLO_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/ir.h"
#include "pcp/tensor/init_recipe.h"
#include "pcp/tensor/safetensors.h"

namespace pcp {

// Initial values when there is no params file: normal(0, std) for tensors of rank >= 2 (one
// SplitMix64 / Box-Muller stream seeded with `seed`, in parameter order: init_recipe.h), 1 for
// tensors of rank < 2 whose name matches one of the `ones` globs (fnmatch: *, ?, [..]), 0 for
// the other tensors of rank < 2.
struct StableHloInit {
  double std = 0.02;
  std::vector<std::string> ones;
  uint64_t seed = 1337;
};

struct StableHloImportOptions {
  // The loss function; "" = none: the loss is the mean cross-entropy of `logits`' result
  // (cross_entropy.h) against a targets argument PCP adds after the logits function's
  // arguments (named "targets", of the tokens' type).
  std::string function = "main";
  // A function of the same module returning logits [B, T, V] (f32, as its first result; or
  // [B*T, V]) from the loss function's arguments less the targets: the same arguments, in the
  // same order and of the same types, without that one. "" = none (the model cannot be
  // sampled). A forward-only export (no loss) sets it and leaves `function` empty.
  std::string logits;
  std::vector<std::string> names;      // one per non-data argument, or empty
  std::vector<std::string> data_args;  // two entries (tokens, targets), or empty: the last two
  std::vector<std::string> frozen;     // arguments that are inputs, not trained
  // A params file's tensors (SafetensorsContents::tensors, in file order) and the file's name
  // for messages. Matched by name with `names` or when the module's argument names are all in
  // the file; otherwise tensor i is non-data argument i. Shapes must match; an f16 / bf16
  // tensor for an f32 argument is widened.
  std::optional<std::vector<NamedTensor>> params;
  std::string params_file;
  StableHloInit init;
};

struct ImportedModel {
  Function forward;                // "forward_loss", PCP's convention (above), verified
  std::vector<std::string> names;  // the trainable parameters, in forward's order
  std::vector<TensorType> types;
  std::vector<Tensor> initial;  // their initial values
  // How `initial` was drawn, when no value came from the params file (init_recipe.h).
  std::optional<InitRecipe> init_recipe;
  std::vector<std::string> frozen;  // the frozen arguments' names
  int64_t batch_size = 0;           // B and T of the data arguments
  int64_t block_size = 0;
  int64_t num_params = 0;      // elements of the trainable parameters
  int64_t value_elements = 0;  // elements of every value of forward (a memory bound)
  // "logits" (params..., tokens i32[1, T]) -> logits f32[1, T, V] when options.logits is set:
  // the logits function over one sequence (copied to the export's B rows; row 0's logits), the
  // frozen arguments as constants, for TextSampler (text_sampler.h).
  std::optional<Function> logits;
  // What the caller should log: f64 values that survived constant folding and are computed in
  // f32 (the import's f64 policy: folded exactly in double, the rest lowered with a warning).
  std::vector<std::string> warnings;
};

absl::StatusOr<ImportedModel> ImportStableHloModel(absl::string_view module_text, absl::string_view file_name,
                                                   const StableHloImportOptions& options);

}  // namespace pcp

#endif  // PCP_MODELS_STABLEHLO_MODEL_H_
