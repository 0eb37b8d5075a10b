// Private to the text parser (text.h): a recursive-descent parser over text_lexer.h tokens.
// text_parser.cc parses modules, functions and operations in MLIR's generic form;
// text_pretty_parser.cc modules, functions, #loc aliases and dialect resources in the pretty
// (custom) form; text_pretty_ops.cc operations in the pretty form; text_attr_parser.cc types
// and attribute values (dense literals, #stablehlo attributes); text_op_attrs.cc the
// attributes each op takes. The forms mix freely: a pretty function may hold generic
// operations and the other way round, as MLIR's printer does for ops without a custom form.
//
// Every error is InvalidArgument "source:line:col: message" pointing at the offending token
// or operation. Recursion is bounded (nested dense lists by kMaxListDepth), so hostile input
// cannot exhaust the stack.
#ifndef PCP_AUTODIFF_SRC_TEXT_PARSER_H_
#define PCP_AUTODIFF_SRC_TEXT_PARSER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/general_indexing.h"
#include "pcp/autodiff/ir.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/status_macros.h"
#include "text_lexer.h"

namespace pcp::text_internal {

// Splat constants are expanded to full tensors; this bounds the memory one literal may take.
inline constexpr int64_t kMaxConstantBytes = int64_t{1} << 30;
inline constexpr int kMaxListDepth = 64;

// A parsed #stablehlo.NAME<key = [..], key = N, ...> attribute: fields in text order.
struct StructField {
  std::string name;
  size_t offset = 0;
  bool is_list = false;
  std::vector<int64_t> values;  // one value when !is_list
};
struct StructAttr {
  size_t offset = 0;
  std::vector<StructField> fields;
};

// Attributes that Attributes does not hold, read once the operand types are known:
// gather / scatter dimension numbers (general_indexing.h), compare's comparison type.
struct OpAttributes {
  StructAttr dims;  // gather: dimension_numbers; scatter: scatter_dimension_numbers
  std::vector<int64_t> slice_sizes;
  size_t slice_sizes_offset = 0;
  bool scatter_assign = false;  // scatter: the region returns the update instead of adding it
  std::string compare_type;     // FLOAT, TOTALORDER, SIGNED, UNSIGNED, NOTYPE; empty if absent
  size_t compare_type_offset = 0;
  std::vector<std::string> seen;  // attribute keys read so far
};

inline constexpr size_t kNoInstruction = ~size_t{0};

// What a reduce / scatter region's body computes: ReduceKind's add or maximum, or, for a
// reduce over i1, stablehlo.or / stablehlo.and, which AddLogicalReduce (text_compat.cc)
// rewrites into a maximum: PCP has no IR op or ReduceKind for them.
enum class ReducerBody : uint8_t { kAdd, kMaximum, kOr, kAnd };

// "(t1, t2)" and "(t1, t2) -> (t3)", as errors write types.
std::string TypesString(const std::vector<TensorType>& types);
std::string FunctionTypeString(const std::vector<TensorType>& in, const std::vector<TensorType>& out);

// Exporters' spellings of the ops PCP knows (text_compat.cc): old MHLO's "mhlo.X" names the
// op StableHLO calls "stablehlo.X" (MHLO is StableHLO's predecessor; the ops PCP has kept
// their semantics). Any other name is returned unchanged.
std::string CanonicalOpName(absl::string_view name);

// How the exporter stores one element of a type PCP widens at import: i8, i16, ui8 and ui16 are
// read as i32, ui32 as i64. Their values are exact; wraparound on overflow is not modelled (an
// exporter's integer arithmetic on them is index and encoding work that stays in range).
// bytes == 0: stored as the PCP dtype itself.
struct StoredElement {
  int bytes = 0;
  bool is_signed = true;
};

// Copies n stored elements from `src` into `out` (the PCP dtype's buffer), widening them when
// `stored` says so.
void CopyStoredElements(const char* src, int64_t n, DType dtype, const StoredElement& stored, void* out);

// A dense_resource<key> constant, filled in from the file's dialect_resources once read.
struct PendingResource {
  std::string key;
  size_t offset = 0;  // of the key
  size_t function = 0;
  size_t instruction = kNoInstruction;  // set when the constant is added
  TensorType type;
  StoredElement stored;
};

// ---- Calls and checks (text_calls.cc, text_checks.cc) ----------------------------------------
// A func.call, linked once the whole file is read (its callee may come later): its results are
// placeholder values of the caller (types only, no instruction) until the callee is inlined.
struct PendingCall {
  std::string callee;
  size_t op_offset = 0;
  size_t callee_offset = 0;
  size_t position = 0;  // how many of the caller's instructions come before the call
  std::vector<ValueId> operands;
  std::vector<TensorType> operand_types, result_types;  // as the call's type states them
  std::vector<ValueId> results;
};
// A check (ParseOptions::checks) whose operands become results of its function when linking.
struct PendingCheck {
  ParsedCheck check;
  ValueId lhs = kNoValue, rhs = kNoValue;
};
// What linking needs of one function, by its index in the module.
struct FunctionLinks {
  std::vector<PendingCall> calls;
  std::vector<PendingCheck> checks;
  size_t num_returned = 0;  // its own results, before the checks' are appended
};
// Calls nest at most this deep, and inlining stops past this many instructions per function.
inline constexpr int kMaxCallDepth = 64;
inline constexpr size_t kMaxInlinedInstructions = size_t{1} << 22;

class Parser {
 public:
  Parser(absl::string_view text, absl::string_view source_name, const ParseOptions& options = {})
      : options_(options), lexer_(text, source_name) {
    Advance();
  }

  absl::StatusOr<Module> ParseTopLevel();

 private:
  // SSA value names of one function. Region bodies check against it but define nothing in it.
  struct Scope {
    std::unordered_map<std::string, ValueId> values;
  };

  // Tokens. Locations are skipped; after_location_ says whether one came right before cur_.
  void Advance() {
    after_location_ = false;
    for (cur_ = lexer_.Next(); cur_.kind == TokenKind::kLocation; cur_ = lexer_.Next()) after_location_ = true;
  }
  bool Is(TokenKind kind) const { return cur_.kind == kind; }
  bool IsWord(absl::string_view word) const { return cur_.kind == TokenKind::kBareId && cur_.text == word; }
  // Whether the current token names op `stablehlo_name` in either form ("..." or bare), in
  // any spelling CanonicalOpName accepts (text_compat.cc).
  bool IsOp(absl::string_view stablehlo_name) const;
  // Whether the current token is `#stablehlo<suffix>` or old MHLO's `#mhlo<suffix>`
  // (suffix "" for #stablehlo<...>, ".dot" for #stablehlo.dot<...>).
  bool IsDialectAttr(absl::string_view suffix) const;
  bool ConsumeIf(TokenKind kind);
  // "expected <what>, got <current token>" at the current token.
  absl::Status Expected(absl::string_view what) const;
  // Consumes a token of `kind`, else Expected(KindName(kind) + " " + context).
  absl::Status Expect(TokenKind kind, absl::string_view context = "");
  absl::Status ExpectWord(absl::string_view word, absl::string_view context = "");
  absl::Status ErrorAt(size_t offset, absl::string_view message) const { return lexer_.Error(offset, message); }

  // Structure (text_parser.cc).
  // A function in either form, appended to `module`.
  absl::Status ParseAnyFunction(Module* module);
  absl::StatusOr<Function> ParseFunction(size_t* name_offset);
  absl::Status ParseFunctionAttributes(Function* f, const std::vector<TensorType>& result_types, size_t op_offset,
                                       size_t* name_offset);
  absl::StatusOr<std::vector<std::string>> ParseNameAttrs(size_t count, absl::string_view what);
  absl::StatusOr<std::string> ParseAttrName();
  // ": () -> ()", the type of builtin.module and func.func.
  absl::Status ExpectEmptySignature(absl::string_view what);
  // Parses one operation of a function body, in either form; sets *returned after the
  // function's terminator (func.return / return / stablehlo.return).
  absl::Status ParseOperation(Function* f, Scope* scope, std::vector<TensorType>* result_types, bool* returned);
  absl::Status ParseOperandList(const Scope& scope, std::vector<ValueId>* operands, std::vector<size_t>* offsets);
  // The function's terminator with its operands and their types (`in`, at type_offset).
  absl::Status FinishReturn(Function* f, std::vector<ValueId> operands, const std::vector<TensorType>& in,
                            size_t type_offset, std::vector<TensorType>* result_types, bool* returned);
  // Checks a parsed operation's type `in` -> `out` against its operands, infers and checks
  // the result type, appends the instruction and binds `result` in `scope`.
  absl::Status AddOperation(Function* f, Scope* scope, Op op, const Token& result, size_t op_offset, size_t type_offset,
                            std::vector<ValueId> operands, const std::vector<size_t>& operand_offsets,
                            const std::vector<TensorType>& in, const std::vector<TensorType>& out, Attributes attrs,
                            const OpAttributes& parsed);
  // stablehlo.dynamic_iota (text_dynamic_iota.cc): checks the shape operand against the
  // static result type `out` and adds stablehlo.iota of that type (attrs: iota_dimension).
  absl::Status AddDynamicIota(Function* f, Scope* scope, const Token& result, size_t op_offset, size_t type_offset,
                              ValueId shape, size_t shape_offset, const std::vector<TensorType>& in,
                              const std::vector<TensorType>& out, Attributes attrs);
  // Moves what `b` (made from *f) built back into *f and binds `result` to `v`; the builder's
  // recorded error, if any, at `op_offset` (text_indexing.cc).
  absl::Status TakeBuilt(FunctionBuilder& b, Function* f, Scope* scope, const Token& result, ValueId v,
                         size_t op_offset);
  // stablehlo.dynamic_slice / dynamic_update_slice in either form (text_dynamic_slice.cc): a
  // static slice where the starts fold, else a gather / an assigning scatter of the window.
  absl::Status ParseDynamicSlice(Function* f, Scope* scope, const Token& result, size_t op_offset);
  // The value of `v` if it is a constant or computed from constants only (small tensors).
  std::optional<Tensor> KnownValue(const Function& f, ValueId v, int depth) const;
  // StableHLO's clamp takes scalar bounds and its select a scalar predicate for tensor
  // operands; PCP's ops are elementwise, so such a scalar (clamp's min / max of the operand's
  // type, select's i1 predicate) gets a broadcast_in_dim to operand 1's shape (added to `f`).
  void BroadcastScalarOperands(Op op, Function* f, std::vector<ValueId>* operands,
                               std::vector<TensorType>* types) const;
  // "unsupported operation 'x' (PCP supports ...)" at `offset`.
  absl::Status UnsupportedOperation(size_t offset, absl::string_view name) const;
  // Parses `({ ^bb0(%a: t, %b: t): <body> })`, the generic form of a reduce / scatter region.
  // A scatter's region may also return its second argument (assign), if `assign` is given.
  absl::StatusOr<ReducerBody> ParseReductionRegion(Op op, DType dtype, const Scope& scope, bool* assign = nullptr);
  // A reduction body's two block arguments "%a: t, %b: t" (new names, both of type `scalar`)
  // into `args`; `comma_hint` and `type_error` (followed by the expected and the given type)
  // word the errors.
  absl::Status ParseScalarArgPair(const Scope& scope, const TensorType& scalar, absl::string_view comma_hint,
                                  absl::string_view type_error, std::string (&args)[2]);
  // The body of a reduction region after its block arguments `args`: %r = add|maximum (a
  // reduce over i1 also or|and) of the two arguments, then stablehlo.return %r; each
  // operation in either form. With `assign`, a scatter's body may be just `stablehlo.return`
  // of the second argument.
  absl::StatusOr<ReducerBody> ParseReducerBody(Op op, const TensorType& scalar, const std::string (&args)[2],
                                               const Scope& scope, bool* assign = nullptr);
  // The reducer named by the current token (stablehlo.add, ...: `applies X`, or a body's op)
  // for a reduction over `dtype`; an error naming the token for anything else.
  absl::StatusOr<ReducerBody> ReducerOf(Op op, DType dtype, bool generic) const;
  // A reduce whose body is or / and (over i1), rewritten (text_compat.cc): or = convert to
  // f32, reduce maximum, != 0, or the init; and(x) = not(or(not x)). Checks the operation's
  // type like AddOperation, binds `result` to the last instruction.
  absl::Status AddLogicalReduce(Function* f, Scope* scope, ReducerBody body, const Token& result, size_t op_offset,
                                size_t type_offset, const std::vector<ValueId>& operands,
                                const std::vector<size_t>& operand_offsets, const std::vector<TensorType>& in,
                                const std::vector<TensorType>& out, std::vector<int64_t> dims);
  // Old StableHLO's / MHLO's dot(lhs, rhs) of rank-1 or rank-2 operands: dot_general
  // contracting lhs's last dimension with rhs's first (text_compat.cc). `types` are the
  // operands' types, as declared; an error at `op_offset` for other ranks.
  absl::Status LegacyDotDims(const std::vector<TensorType>& types, size_t op_offset, DotDims* dims) const;
  // `stablehlo.return %r : scalar` ending a region body, in either form.
  absl::Status ParseRegionReturn(const std::string& r, const TensorType& scalar);

  // stablehlo.while with a static trip count, unrolled (text_while.cc): the op after its
  // results' names `result_names` (`%r:N` gives %r#0, ...; `%a, %b =` each name).
  absl::Status ParseWhile(Function* f, Scope* scope, const std::vector<std::string>& result_names, size_t op_offset);
  // One of stablehlo.while's regions: where its '{' is, and its block arguments' names (the
  // pretty form names them in the op's header; the generic form in the region's ^bb0).
  struct WhileRegion {
    std::string what;  // "condition" / "body", for errors
    bool generic = false;
    size_t loop_offset = 0;  // of the while op
    size_t offset = 0;
    std::vector<std::string> arg_names;
  };
  // Reads `region` again (from its '{') with its arguments bound to `carried`, appending its
  // operations to `f`; returns the values its stablehlo.return returns.
  absl::StatusOr<std::vector<ValueId>> InlineWhileRegion(Function* f, const Scope& outer, const WhileRegion& region,
                                                         const std::vector<ValueId>& carried);
  // Skips a balanced `{ ... }` (the current token is its '{').
  absl::Status SkipRegion();

  // Pretty form: structure (text_pretty_parser.cc).
  // `module [@name] [attributes {...}] { functions }` or `builtin.module ...`.
  absl::Status ParsePrettyModule(Module* module);
  // `func.func [public|private] @name(%arg: type {attrs}, ...) [-> results] [attributes {...}] { body }`.
  absl::StatusOr<Function> ParsePrettyFunction(size_t* name_offset);
  // `{key = value, ...}` whose keys are all metadata PCP may ignore (see IgnorableAttribute),
  // or pcp.name if `pcp_name` is not null; `what` names the owner in errors. Nothing if the
  // current token is not '{'.
  // With `symbol`, also sym_name / sym_visibility (a generic builtin.module's name: PCP's
  // Module has none).
  absl::Status ParseIgnorableAttributes(absl::string_view what, std::string* pcp_name = nullptr, bool symbol = false);
  // Skips one attribute value (balanced brackets), for ignorable attributes.
  absl::Status SkipAttributeValue();
  // `#loc1 = loc(...)` definitions, which may open or close a file; other aliases are errors.
  absl::Status SkipAliasDefinitions();
  // `{-# dialect_resources: { builtin: { key: "0x..." } } #-}`.
  absl::Status ParseFileMetadata();
  // Fills in the dense_resource constants from the blobs of the file's metadata.
  absl::Status ResolveResources(Module* module);

  // Pretty form: operations (text_pretty_ops.cc). `result` is the kEof token if none.
  absl::Status ParsePrettyOperation(Function* f, Scope* scope, const Token& result, size_t op_offset,
                                    std::vector<TensorType>* result_types, bool* returned);
  // One operand (%name, defined in `scope`), both forms.
  absl::Status ParseOperand(const Scope& scope, std::vector<ValueId>* operands, std::vector<size_t>* offsets);
  // `%a, %b, ...` (at least one); stops before a ',' that is not followed by an operand.
  absl::Status ParsePrettyOperands(const Scope& scope, std::vector<ValueId>* operands, std::vector<size_t>* offsets);
  // Whether the token after the current one is an operand (%name).
  bool NextIsOperand();
  // `: (t1, t2) -> t`, `: t` (every operand and the result have type t), `: t1 -> t` (chlo)
  // or `: p, t` (select: the predicate's type, then the others' and the result's).
  absl::Status ParsePrettyType(size_t num_operands, size_t* type_offset, std::vector<TensorType>* in,
                               std::vector<TensorType>* out);
  // `[1, 2]` of integers within +-kMaxDimension.
  absl::StatusOr<std::vector<int64_t>> ParseBracketList();
  // `key = ` with the given word as key.
  absl::Status ExpectKey(absl::string_view key, absl::string_view op_name);
  absl::Status ParsePrettyReduce(Function* f, Scope* scope, const Token& result, size_t op_offset);
  absl::Status ParsePrettyDotGeneral(Attributes* attrs);
  absl::Status ParsePrettySlice(Attributes* attrs);
  // dense<...> or dense_resource<key>, then `: tensor<...>`; constants only. A resource is
  // read once the file's metadata is (ResolveResources); until then the value is zeros.
  absl::StatusOr<Tensor> ParseConstantValue(TensorType* type);

  // Per-op attribute dictionaries (text_op_attrs.cc). ParseAttributeDict reads `{k = v, ...}`
  // at the current '{' (an attribute dictionary, or the inside of properties <{...}>).
  absl::Status ParseAttributeDict(Op op, Attributes* attrs, OpAttributes* parsed);
  absl::Status CheckRequiredAttributes(Op op, const OpAttributes& parsed, size_t op_offset) const;

  // Gather and scatter (text_indexing.cc): the dimension numbers of `parsed`, and the op
  // emitted through general_indexing.h (row forms plus layout and index arithmetic).
  absl::StatusOr<GatherDimensionNumbers> GatherDims(const OpAttributes& parsed) const;
  absl::StatusOr<ScatterDimensionNumbers> ScatterDims(const OpAttributes& parsed) const;
  absl::Status AddIndexing(Function* f, Scope* scope, Op op, const Token& result, size_t op_offset, size_t type_offset,
                           const std::vector<ValueId>& operands, const std::vector<TensorType>& operand_types,
                           const TensorType& declared, const OpAttributes& parsed);

  // Types and attribute values (text_attr_parser.cc).
  absl::StatusOr<TensorType> ParseTensorType(StoredElement* stored = nullptr);
  // "(" [type {"," type}] ")".
  absl::Status ParseTypeList(std::vector<TensorType>* types);
  // A single type, or a parenthesised list.
  absl::Status ParseResultTypes(std::vector<TensorType>* types);
  // dense<...> : tensor<...>
  absl::StatusOr<Tensor> ParseDenseElements(TensorType* type);
  // dense<...> : tensor<Nxi64> or array<i64: ...>, each value within +-kMaxDimension.
  absl::StatusOr<std::vector<int64_t>> ParseI64List();
  // N : i64 (the ": i64" may be left out, and is not read unless type_suffix).
  absl::StatusOr<int64_t> ParseI64(bool type_suffix = true);
  // #stablehlo<precision DEFAULT|HIGH|HIGHEST>, which PCP may ignore: it computes at least as
  // precisely as any of them asks. Also the bare word (`precision = [DEFAULT, HIGH]`).
  absl::Status ParsePrecision(bool bare);
  // #stablehlo<comparison_type X> (or the bare word X), into parsed->compare_type.
  absl::Status ParseComparisonType(bool bare, OpAttributes* parsed);
  absl::Status CheckComparisonType(const OpAttributes& parsed, DType dtype) const;
  absl::StatusOr<bool> ParseBool();
  // A float attribute: 0.125 or 1.250000e-01 : f64 (MLIR's spelling).
  absl::StatusOr<double> ParseF64();
  absl::StatusOr<std::string> ParseString(absl::string_view what);
  absl::StatusOr<ComparisonDirection> ParseComparisonDirection();
  // #stablehlo.<name><...>; fields are checked by the caller.
  absl::StatusOr<StructAttr> ParseStablehloStruct(absl::string_view name);

  struct Element;
  absl::Status ParseDenseList(int depth, std::vector<int64_t>* shape, std::vector<Element>* elements);
  absl::Status ParseElement(std::vector<Element>* elements);
  absl::Status StoreElement(const Element& e, DType dtype, void* out) const;
  absl::StatusOr<Tensor> TensorFromHex(absl::string_view hex, size_t offset, const TensorType& type,
                                       const StoredElement& stored) const;

  // ---- Calls and checks (text_calls.cc, text_checks.cc) ----
  // `[%r[:N] =] call|func.call @f(%a, ...) [{attrs}] : (t, ...) -> r` or the generic
  // "func.call"(...) {callee = @f} : ...; `num_results` is N (1 for `%r =`, 0 without).
  absl::Status ParseCall(Function* f, Scope* scope, const Token& result, int num_results, size_t op_offset);
  // stablehlo.custom_call, either form: a check when options_.checks is set and the target is
  // one, else an error naming the target.
  absl::Status ParseCustomCall(Function* f, Scope* scope, const Token& result, size_t op_offset);
  // stablehlo.composite, either form: an error naming its decomposition function.
  absl::Status CompositeError(size_t op_offset);
  // check.expect_eq[_const], expect_almost_eq[_const], expect_close, either form.
  absl::Status ParseCheckOp(Function* f, Scope* scope, const Token& result, size_t op_offset);
  absl::Status ParseGenericCheckOp(Function* f, Scope* scope, const Token& result, size_t op_offset);
  // The start both forms of a check op share: its name `name` (the current token, consumed)
  // into `check` and *constant, and the check that it defines no result.
  absl::Status BeginCheckOp(const std::string& name, const Token& result, size_t op_offset, ParsedCheck* check,
                            bool* constant);
  // A generic op's attributes: properties <{k = v, ...}> and / or a dictionary {k = v, ...};
  // `on_key` reads each value (the key and '=' consumed), given the key and its offset. With
  // `unit_attributes`, a key without '= value' is read past.
  absl::Status ParseAttributeDicts(const std::function<absl::Status(const std::string&, size_t)>& on_key,
                                   bool unit_attributes = false);
  // Records `check` on lhs / rhs, or an error if options_.checks is not set.
  absl::Status AddCheck(ParsedCheck check, ValueId lhs, ValueId rhs, size_t op_offset);
  // The token after the current one, without consuming anything.
  Token PeekToken();
  // Inlines every call (callees first) and appends every check's operands to the results.
  absl::Status LinkCalls(Module* module);
  absl::Status LinkFunction(Module* module, size_t index, std::vector<size_t>* stack, std::vector<int>* state);

  const ParseOptions options_;
  std::vector<FunctionLinks> links_;  // one per function, by index

  Lexer lexer_;
  Token cur_;
  bool after_location_ = false;
  // The index the function being parsed will have in the module.
  size_t function_index_ = 0;
  std::vector<PendingResource> pending_resources_;
  // Whether the operation being read (ParseOperation resets it) has named an unsigned type.
  bool unsigned_type_read_ = false;
  // builtin dialect resources of the file metadata: key -> the blob's string token.
  std::unordered_map<std::string, Token> resources_;
};

}  // namespace pcp::text_internal

#endif  // PCP_AUTODIFF_SRC_TEXT_PARSER_H_
