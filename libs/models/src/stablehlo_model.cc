#include "pcp/models/stablehlo_model.h"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "logits_functions.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"
#include "pcp/tensor/convert.h"

namespace pcp {
namespace {

using models_internal::BuildImportedSampleLogits;
using models_internal::CopyInstructions;
using models_internal::FormLossFromLogits;

absl::Status OptionError(absl::string_view key, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("model.", key, ": ", message));
}

// "FILE:LINE:COL: " of `@function(` in the text (the function's signature), else "FILE: ".
std::string FunctionPlace(absl::string_view text, absl::string_view file, absl::string_view function) {
  const std::string needle = absl::StrCat("@", function, "(");
  const size_t at = text.find(needle);
  if (at == absl::string_view::npos) return absl::StrCat(file, ": ");
  int64_t line = 1, col = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return absl::StrCat(file, ":", line, ":", col, ": ");
}

bool MatchesAny(const std::string& name, const std::vector<std::string>& globs) {
  for (const std::string& g : globs) {
    if (fnmatch(g.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

// The arguments of the function as the job refers to them.
class Arguments {
 public:
  Arguments(const Function& f, std::string function) : f_(f), function_(std::move(function)) {}

  // "%arg3 'wte' tensor<65x32xf32>"
  std::string Describe(int i) const {
    const std::string& n = f_.param_names[static_cast<size_t>(i)];
    return absl::StrCat("%arg", i, n.empty() ? "" : absl::StrCat(" '", n, "'"), " ",
                        f_.type(f_.params[static_cast<size_t>(i)]).ToString());
  }
  // Index of `ref` ("%argN", "N", or a name in `names`, which has one entry per argument and
  // may hold empty strings), or an error under `key`.
  absl::StatusOr<int> Resolve(absl::string_view key, const std::string& ref,
                              const std::vector<std::string>& names) const {
    const int n = static_cast<int>(f_.params.size());
    absl::string_view digits = ref;
    absl::ConsumePrefix(&digits, "%arg");
    {
      int index = 0;
      if (!digits.empty() && absl::ascii_isdigit(static_cast<unsigned char>(digits[0])) &&
          absl::SimpleAtoi(digits, &index)) {
        if (index < 0 || index >= n) {
          return OptionError(key, absl::StrCat("'", ref, "': ", function_, " has ", n, " arguments (%arg0-%arg", n - 1,
                                               ")"));
        }
        return index;
      }
    }
    int found = -1;
    for (int i = 0; i < n; ++i) {
      if (!names[static_cast<size_t>(i)].empty() && names[static_cast<size_t>(i)] == ref) found = i;
    }
    if (found < 0) {
      std::vector<std::string> known;
      for (int i = 0; i < n; ++i) {
        if (!names[static_cast<size_t>(i)].empty()) known.push_back(names[static_cast<size_t>(i)]);
      }
      return OptionError(key, absl::StrCat("'", ref, "' is not an argument of ", function_, "; arguments: ",
                                           known.empty() ? "(unnamed: use %argN)" : absl::StrJoin(known, ", ")));
    }
    return found;
  }

 private:
  const Function& f_;
  std::string function_;
};

// Rewrites `f` into PCP's convention: trainable args, then tokens and targets (i32); frozen
// args as constants; only the first result.
Function Rewrite(const Function& f, const std::vector<int>& trainable, const std::vector<std::string>& names,
                 const std::map<int, Tensor>& frozen, const int data[2], int64_t batch, int64_t block) {
  Function g;
  g.name = "forward_loss";
  std::vector<ValueId> map(static_cast<size_t>(f.num_values()), kNoValue);
  for (size_t k = 0; k < trainable.size(); ++k) {
    const int i = trainable[k];
    map[static_cast<size_t>(f.params[static_cast<size_t>(i)])] =
        g.AddParameter(f.type(f.params[static_cast<size_t>(i)]), names[k]);
  }
  const TensorType i32{DType::kI32, {batch, block}};
  const ValueId tokens = g.AddParameter(i32, "tokens");
  const ValueId targets = g.AddParameter(i32, "targets");
  for (int d = 0; d < 2; ++d) {
    const ValueId arg = f.params[static_cast<size_t>(data[d])];
    const ValueId given = d == 0 ? tokens : targets;
    map[static_cast<size_t>(arg)] =
        f.type(arg).dtype == DType::kI32 ? given : g.AddInstruction(Op::kConvert, {given}, f.type(arg));
  }
  for (const auto& [i, value] : frozen) {
    Attributes attrs;
    attrs.literal = value;
    const ValueId arg = f.params[static_cast<size_t>(i)];
    map[static_cast<size_t>(arg)] = g.AddInstruction(Op::kConstant, {}, f.type(arg), std::move(attrs));
  }
  CopyInstructions(f, map, &g);
  g.results.push_back(map[static_cast<size_t>(f.results[0])]);
  g.result_names.push_back("loss");
  return g;
}

// The function to train, as read: the loss (the module's, or formed from the logits of a
// forward-only export) and the logits function, both folded and computed in f32, with what
// the lowering changed (for the model's warnings).
struct ImportedFunctions {
  Function loss;
  std::optional<Function> logits;
  std::string name;  // the function the job names (the loss's, else the logits')
  int half_values = 0;
  std::string first_half;
  int f64_values = 0;
  std::string first_f64;
};

absl::StatusOr<ImportedFunctions> ReadFunctions(absl::string_view text, absl::string_view file_name,
                                                const StableHloImportOptions& options) {
  PCP_ASSIGN_OR_RETURN(Module module, ParseModule(text, file_name));
  auto find = [&](const std::string& name, absl::string_view key) -> absl::StatusOr<Function> {
    const Function* found = module.Find(name);
    if (found != nullptr) return *found;
    std::vector<std::string> have;
    for (const Function& fn : module.functions) have.push_back(fn.name);
    return OptionError(key, absl::StrCat("no function '", name, "' in ", file_name,
                                         "; it has: ", absl::StrJoin(have, ", ")));
  };
  ImportedFunctions out;
  // bf16 / f16 (mixed-precision exports) are computed in f32 (passes.h), before anything folds.
  if (!options.logits.empty()) {
    PCP_ASSIGN_OR_RETURN(out.logits, find(options.logits, "logits"));
    PCP_ASSIGN_OR_RETURN(out.half_values, LowerHalfToF32(*out.logits, &out.first_half),
                         _ << file_name << ": lowering the logits function's bf16 / f16 to f32");
  }
  out.name = options.function.empty() ? options.logits : options.function;
  if (!options.function.empty()) {
    PCP_ASSIGN_OR_RETURN(out.loss, find(options.function, "function"));
    PCP_ASSIGN_OR_RETURN(out.half_values, LowerHalfToF32(out.loss, &out.first_half),
                         _ << file_name << ": lowering bf16 / f16 to f32");
  } else if (out.logits.has_value()) {
    PCP_ASSIGN_OR_RETURN(out.loss, FormLossFromLogits(*out.logits, FunctionPlace(text, file_name, options.logits)));
  } else {
    return OptionError("function",
                       "empty: name the loss function, or give model.logits to form the loss from its "
                       "logits");
  }
  // f64 (JAX exports with x64 enabled, PyTorch float64 buffers and scale constants): folded
  // exactly in double first, then what is left computed in f32, with a warning (passes.h),
  // before the signature is checked (an f64 argument becomes f32).
  PCP_RETURN_IF_ERROR(RunStandardPasses(out.loss), _ << file_name << ": folding the imported function");
  PCP_ASSIGN_OR_RETURN(out.f64_values, LowerF64ToF32(out.loss, &out.first_f64),
                       _ << file_name << ": lowering f64 to f32");
  if (out.logits.has_value()) {
    PCP_RETURN_IF_ERROR(RunStandardPasses(*out.logits), _ << file_name << ": folding the logits function");
    PCP_RETURN_IF_ERROR(LowerF64ToF32(*out.logits).status(), _ << file_name << ": lowering the logits function's f64");
  }
  return out;
}

// The first result must be the loss, a scalar f32.
absl::Status CheckLossResult(const Function& f, const std::string& place, const std::string& function_name) {
  if (f.results.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(place, "function '", function_name,
                                                   "' returns nothing; the first result must be the loss, "
                                                   "a scalar f32 (tensor<f32>)"));
  }
  const TensorType& loss = f.type(f.results[0]);
  if (loss.dtype != DType::kF32 || loss.rank() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(place, "function '", function_name, "' returns ", loss.ToString(),
                                                   " first; the first result must be the loss, a scalar f32 "
                                                   "(tensor<f32>)"));
  }
  return absl::OkStatus();
}

using DataArgs = std::array<int, 2>;         // argument indices of tokens, targets
using FrozenValues = std::map<int, Tensor>;  // argument index -> its constant value

// The data arguments (tokens, targets): model.data_args, else the last two; integer [B, T].
absl::StatusOr<DataArgs> ResolveDataArgs(const Function& f, const Arguments& args, const std::string& place,
                                         const std::string& function_name, const StableHloImportOptions& options) {
  const int n = static_cast<int>(f.params.size());
  if (n < 2) {
    return absl::InvalidArgumentError(absl::StrCat(place, "function '", function_name, "' takes ", n,
                                                   " arguments; it needs at least the two data arguments "
                                                   "(tokens, targets)"));
  }
  DataArgs data = {n - 2, n - 1};
  if (!options.data_args.empty()) {
    if (options.data_args.size() != 2) {
      return OptionError("data_args",
                         absl::StrCat("expected two arguments (tokens, targets), got ", options.data_args.size()));
    }
    for (int d = 0; d < 2; ++d) {
      PCP_ASSIGN_OR_RETURN(data[static_cast<size_t>(d)],
                           args.Resolve("data_args", options.data_args[static_cast<size_t>(d)], f.param_names));
    }
    if (data[0] == data[1]) return OptionError("data_args", "tokens and targets are the same argument");
  }
  const TensorType& tokens_type = f.type(f.params[static_cast<size_t>(data[0])]);
  for (int d = 0; d < 2; ++d) {
    const TensorType& t = f.type(f.params[static_cast<size_t>(data[static_cast<size_t>(d)])]);
    if ((t.dtype != DType::kI32 && t.dtype != DType::kI64) || t.rank() != 2 || t.shape != tokens_type.shape ||
        t.shape[0] < 1 || t.shape[1] < 1) {
      return OptionError("data_args",
                         absl::StrCat(d == 0 ? "tokens" : "targets", " argument ",
                                      args.Describe(data[static_cast<size_t>(d)]),
                                      ": data arguments must be i32 or i64 [B, T], both of one shape",
                                      options.data_args.empty() ? " (default: the last two arguments)" : ""));
    }
  }
  return data;
}

// The names of the non-data arguments (`others`) and whether params file tensors are matched
// to them by name (else by position).
struct ParamNaming {
  std::vector<std::string> names;  // one per non-data argument
  bool by_name = false;
};

absl::StatusOr<ParamNaming> NameParameters(const Function& f, const std::vector<int>& others,
                                           const std::string& function_name, const StableHloImportOptions& options) {
  // A params file written by Python's safetensors is laid out sorted, not in argument order:
  // when the module names every non-data argument and the file has all those names, match by
  // name.
  bool module_names_in_file = options.names.empty() && options.params.has_value();
  for (size_t k = 0; module_names_in_file && k < others.size(); ++k) {
    const std::string& n = f.param_names[static_cast<size_t>(others[k])];
    bool found = false;
    for (const NamedTensor& t : *options.params) found = found || (!n.empty() && t.name == n);
    module_names_in_file = found;
  }
  ParamNaming out;
  out.by_name = !options.names.empty() || module_names_in_file;
  std::vector<std::string>& names = out.names;
  names.resize(others.size());
  if (module_names_in_file) {
    for (size_t k = 0; k < others.size(); ++k) names[k] = f.param_names[static_cast<size_t>(others[k])];
  } else if (out.by_name) {
    if (options.names.size() != others.size()) {
      return OptionError("names", absl::StrCat(options.names.size(), " names for the ", others.size(),
                                               " non-data arguments of ", function_name));
    }
    names = options.names;
  } else if (options.params.has_value()) {
    if (options.params->size() != others.size()) {
      return OptionError("params",
                         absl::StrCat(options.params_file, " has ", options.params->size(), " tensors for the ",
                                      others.size(), " non-data arguments of ", function_name,
                                      " (one per argument, in argument order; or give model.names to "
                                      "match by name)"));
    }
    for (size_t k = 0; k < others.size(); ++k) names[k] = (*options.params)[k].name;
  } else {
    for (size_t k = 0; k < others.size(); ++k) {
      names[k] = f.param_names[static_cast<size_t>(others[k])];
      if (names[k].empty()) names[k] = absl::StrCat("arg", others[k]);
    }
  }
  std::set<std::string> unique;
  for (const std::string& name : names) {
    if (name.empty()) return OptionError(out.by_name ? "names" : "params", "a parameter name is empty");
    if (!unique.insert(name).second) {
      return OptionError(out.by_name ? "names" : "params", absl::StrCat("parameter name '", name, "' is given twice"));
    }
  }
  return out;
}

// The params file's value of each non-data argument (null: none given), f16 / bf16 widened
// for an f32 argument. Points into options.params or into `converted`.
struct ParamValues {
  std::vector<const Tensor*> of;
  std::vector<Tensor> converted;
};

absl::StatusOr<ParamValues> MatchParamValues(const Function& f, const std::vector<int>& others,
                                             const ParamNaming& naming, const Arguments& args,
                                             const StableHloImportOptions& options) {
  ParamValues values;
  values.of.assign(others.size(), nullptr);
  values.converted.resize(others.size());  // never resized again: `of` may point into it
  if (!options.params.has_value()) return values;
  const std::vector<std::string>& names = naming.names;
  for (size_t k = 0; k < others.size(); ++k) {
    const Tensor* t = nullptr;
    if (naming.by_name) {
      for (const NamedTensor& nt : *options.params) {
        if (nt.name == names[k]) t = &nt.tensor;
      }
      if (t == nullptr) {
        return OptionError("params", absl::StrCat(options.params_file, " has no tensor '", names[k], "' (argument ",
                                                  args.Describe(others[k]), ")"));
      }
    } else {
      t = &(*options.params)[k].tensor;
    }
    const TensorType want = f.type(f.params[static_cast<size_t>(others[k])]);
    if (t->dtype() != want.dtype && IsFloat(t->dtype()) && IsFloat(want.dtype) && t->shape() == want.shape) {
      // f16 / bf16 weights for an f32 argument: widened.
      PCP_ASSIGN_OR_RETURN(values.converted[k], ConvertTensor(*t, want.dtype),
                           _ << "model.params: " << options.params_file << ": tensor '" << names[k] << "'");
      t = &values.converted[k];
    }
    if (t->dtype() != want.dtype || t->shape() != want.shape) {
      return OptionError("params", absl::StrCat(options.params_file, ": tensor '", names[k], "' is ",
                                                TensorType{t->dtype(), t->shape()}.ToString(), ", argument ",
                                                args.Describe(others[k]), " takes ", want.ToString(),
                                                naming.by_name ? ""
                                                               : " (matched by position; files written by "
                                                                 "Python's safetensors are sorted by name: "
                                                                 "give model.names to match by name)"));
    }
    values.of[k] = t;
  }
  return values;
}

// model.frozen: argument index -> its value (from the params file); their names go to m->frozen.
absl::StatusOr<FrozenValues> FreezeArguments(const std::vector<int>& others, const DataArgs& data,
                                             const std::vector<std::string>& arg_names, const ParamNaming& naming,
                                             const ParamValues& values, const Arguments& args,
                                             const StableHloImportOptions& options, ImportedModel* m) {
  FrozenValues frozen;
  for (const std::string& ref : options.frozen) {
    PCP_ASSIGN_OR_RETURN(int i, args.Resolve("frozen", ref, arg_names));
    if (i == data[0] || i == data[1]) {
      return OptionError("frozen", absl::StrCat("'", ref, "' is a data argument (", args.Describe(i), ")"));
    }
    const size_t k = static_cast<size_t>(std::find(others.begin(), others.end(), i) - others.begin());
    if (values.of[k] == nullptr) {
      return OptionError("frozen", absl::StrCat("'", ref, "' (", args.Describe(i),
                                                ") needs a value: frozen arguments take theirs from model.params"));
    }
    if (!frozen.emplace(i, values.of[k]->Clone()).second) {
      return OptionError("frozen", absl::StrCat("'", ref, "' is listed twice"));
    }
    m->frozen.push_back(naming.names[k]);
  }
  return frozen;
}

// The trainable arguments (every non-data argument not frozen; f32 only), in argument order,
// with their names, types and initial values (the params file's, else the init rule) in *m.
absl::StatusOr<std::vector<int>> TakeTrainable(const Function& f, const std::vector<int>& others,
                                               const FrozenValues& frozen, const ParamNaming& naming,
                                               const ParamValues& values, const Arguments& args,
                                               const std::string& place, const StableHloImportOptions& options,
                                               ImportedModel* m) {
  std::vector<int> trainable;
  InitRecipe drawn{.seed = options.init.seed, .params = {}};  // the rules of the values not in the file
  std::vector<Shape> drawn_shapes;
  std::vector<size_t> drawn_at;  // their places in m->initial
  for (size_t k = 0; k < others.size(); ++k) {
    const int i = others[k];
    if (frozen.count(i) > 0) continue;
    const TensorType type = f.type(f.params[static_cast<size_t>(i)]);
    if (type.dtype != DType::kF32) {
      return absl::InvalidArgumentError(absl::StrCat(place, "argument ", args.Describe(i),
                                                     " is not f32: PCP trains f32 parameters; list it under "
                                                     "model.frozen (with a value in model.params) or model.data_args"));
    }
    trainable.push_back(i);
    m->names.push_back(naming.names[k]);
    m->types.push_back(type);
    m->num_params += type.num_elements();
    if (values.of[k] != nullptr) {
      m->initial.push_back(values.of[k]->Clone());
      continue;
    }
    if (type.rank() >= 2) {
      drawn.params.push_back(ParamInit::Normal(options.init.std));
    } else if (MatchesAny(naming.names[k], options.init.ones)) {
      drawn.params.push_back(ParamInit::Ones());
    } else {
      drawn.params.push_back(ParamInit::Zeros());
    }
    drawn_shapes.push_back(type.shape);
    drawn_at.push_back(m->initial.size());
    m->initial.emplace_back();
  }
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> values_drawn, DrawInit(drawn, drawn_shapes), _ << "model.init");
  for (size_t d = 0; d < drawn_at.size(); ++d) m->initial[drawn_at[d]] = std::move(values_drawn[d]);
  if (drawn_at.size() == trainable.size()) m->init_recipe = std::move(drawn);
  return trainable;
}

}  // namespace

absl::StatusOr<ImportedModel> ImportStableHloModel(absl::string_view text, absl::string_view file_name,
                                                   const StableHloImportOptions& options) {
  PCP_ASSIGN_OR_RETURN(ImportedFunctions fns, ReadFunctions(text, file_name, options));
  const Function& f = fns.loss;
  const std::string place = FunctionPlace(text, file_name, fns.name);
  const Arguments args(f, fns.name);
  PCP_RETURN_IF_ERROR(CheckLossResult(f, place, fns.name));
  PCP_ASSIGN_OR_RETURN(const DataArgs data, ResolveDataArgs(f, args, place, fns.name, options));
  std::vector<int> others;  // the non-data arguments
  for (int i = 0; i < static_cast<int>(f.params.size()); ++i) {
    if (i != data[0] && i != data[1]) others.push_back(i);
  }
  PCP_ASSIGN_OR_RETURN(const ParamNaming naming, NameParameters(f, others, fns.name, options));
  // names indexed by argument (data arguments keep the module's names, to be referred to).
  std::vector<std::string> arg_names = f.param_names;
  for (size_t k = 0; k < others.size(); ++k) arg_names[static_cast<size_t>(others[k])] = naming.names[k];
  PCP_ASSIGN_OR_RETURN(const ParamValues values, MatchParamValues(f, others, naming, args, options));

  ImportedModel m;
  PCP_ASSIGN_OR_RETURN(const FrozenValues frozen,
                       FreezeArguments(others, data, arg_names, naming, values, args, options, &m));
  PCP_ASSIGN_OR_RETURN(const std::vector<int> trainable,
                       TakeTrainable(f, others, frozen, naming, values, args, place, options, &m));
  if (trainable.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(place, "function '", fns.name,
                                                   "' has no trainable arguments (every non-data argument is frozen)"));
  }
  const TensorType& tokens_type = f.type(f.params[static_cast<size_t>(data[0])]);
  m.batch_size = tokens_type.shape[0];
  m.block_size = tokens_type.shape[1];
  m.forward = Rewrite(f, trainable, m.names, frozen, data.data(), m.batch_size, m.block_size);
  if (fns.logits.has_value()) {
    PCP_ASSIGN_OR_RETURN(m.logits, BuildImportedSampleLogits(*fns.logits, f, trainable, m.names, frozen, data.data(),
                                                             m.batch_size, m.block_size));
  }
  PCP_RETURN_IF_ERROR(Verify(m.forward), _ << file_name << ": the imported function");
  PCP_RETURN_IF_ERROR(RunStandardPasses(m.forward), _ << file_name << ": optimizing the imported function");
  if (fns.half_values > 0) {
    m.warnings.push_back(absl::StrCat(file_name, ": ", fns.half_values,
                                      " bf16 / f16 values are computed in f32 (first: ", fns.first_half, ")"));
  }
  if (fns.f64_values > 0) {
    m.warnings.push_back(absl::StrCat(file_name, ": ", fns.f64_values,
                                      " f64 values that do not fold to constants are computed in f32 (first: ",
                                      fns.first_f64, "); PCP's backends have no f64"));
  }
  for (const TensorType& t : m.forward.value_types) m.value_elements += t.num_elements();
  return m;
}

}  // namespace pcp
