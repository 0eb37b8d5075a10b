// Private to the text parser (text.h): a recursive-descent parser over text_lexer.h tokens.
// text_parser.cc parses modules, functions and operations; text_attr_parser.cc parses types
// and attribute values (dense literals, #stablehlo attributes).
//
// Every error is InvalidArgument "source:line:col: message" pointing at the offending token
// or operation. Recursion is bounded (nested dense lists by kMaxListDepth), so hostile input
// cannot exhaust the stack.
#ifndef PCP_AUTODIFF_SRC_TEXT_PARSER_H_
#define PCP_AUTODIFF_SRC_TEXT_PARSER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/ir.h"
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

// Attributes of gather / scatter that Attributes does not hold; checked against the row form.
struct OpAttributes {
  StructAttr dims;  // gather: dimension_numbers; scatter: scatter_dimension_numbers
  std::vector<int64_t> slice_sizes;
  size_t slice_sizes_offset = 0;
};

class Parser {
 public:
  Parser(absl::string_view text, absl::string_view source_name) : lexer_(text, source_name) {
    Advance();
  }

  absl::StatusOr<Module> ParseTopLevel();

 private:
  struct Scope;  // SSA names of one function (text_parser.cc)

  // Tokens.
  void Advance() { cur_ = lexer_.Next(); }
  bool Is(TokenKind kind) const { return cur_.kind == kind; }
  bool IsWord(absl::string_view word) const { return cur_.kind == TokenKind::kBareId && cur_.text == word; }
  bool ConsumeIf(TokenKind kind);
  // "expected <what>, got <current token>" at the current token.
  absl::Status Expected(absl::string_view what) const;
  // Consumes a token of `kind`, else Expected(KindName(kind) + " " + context).
  absl::Status Expect(TokenKind kind, absl::string_view context = "");
  absl::Status ExpectWord(absl::string_view word, absl::string_view context = "");
  absl::Status ErrorAt(size_t offset, absl::string_view message) const { return lexer_.Error(offset, message); }

  // Structure (text_parser.cc).
  absl::StatusOr<Function> ParseFunction(size_t* name_offset);
  absl::Status ParseFunctionAttributes(Function* f, const std::vector<TensorType>& result_types,
                                       size_t op_offset, size_t* name_offset);
  absl::StatusOr<std::vector<std::string>> ParseNameAttrs(size_t count, absl::string_view what);
  absl::StatusOr<std::string> ParseAttrName();
  // ": () -> ()", the type of builtin.module and func.func.
  absl::Status ExpectEmptySignature(absl::string_view what);
  // Parses one operation of a function body; sets *returned after func.return.
  absl::Status ParseOperation(Function* f, Scope* scope, std::vector<TensorType>* result_types,
                              bool* returned);
  absl::Status ParseOperandList(const Scope& scope, std::vector<ValueId>* operands,
                                std::vector<size_t>* offsets);
  // Parses `({ ^bb0(%a: t, %b: t): %r = "stablehlo.add|maximum"(%a, %b) ... "stablehlo.return"(%r) })`.
  absl::StatusOr<ReduceKind> ParseReductionRegion(Op op, DType dtype, const Scope& scope);

  // Per-op attribute dictionaries (text_op_attrs.cc).
  absl::Status ParseInstructionAttributes(Op op, Attributes* attrs, OpAttributes* parsed, size_t op_offset);
  absl::Status CheckIndexingForm(Op op, const OpAttributes& parsed, const std::vector<TensorType>& types) const;

  // Types and attribute values (text_attr_parser.cc).
  absl::StatusOr<TensorType> ParseTensorType();
  // "(" [type {"," type}] ")".
  absl::Status ParseTypeList(std::vector<TensorType>* types);
  // A single type, or a parenthesised list.
  absl::Status ParseResultTypes(std::vector<TensorType>* types);
  // dense<...> : tensor<...>
  absl::StatusOr<Tensor> ParseDenseElements(TensorType* type);
  // dense<...> : tensor<Nxi64>, each value within +-kMaxDimension.
  absl::StatusOr<std::vector<int64_t>> ParseI64List();
  // N : i64 (the ": i64" may be left out).
  absl::StatusOr<int64_t> ParseI64();
  absl::StatusOr<bool> ParseBool();
  absl::StatusOr<std::string> ParseString(absl::string_view what);
  absl::StatusOr<ComparisonDirection> ParseComparisonDirection();
  // #stablehlo.<name><...>; fields are checked by the caller.
  absl::StatusOr<StructAttr> ParseStablehloStruct(absl::string_view name);

  struct Element;
  absl::Status ParseDenseList(int depth, std::vector<int64_t>* shape, std::vector<Element>* elements);
  absl::Status ParseElement(std::vector<Element>* elements);
  absl::Status StoreElement(const Element& e, DType dtype, void* out) const;
  absl::StatusOr<Tensor> TensorFromHex(absl::string_view hex, size_t offset, const TensorType& type) const;

  Lexer lexer_;
  Token cur_;
};

}  // namespace pcp::text_internal

#endif  // PCP_AUTODIFF_SRC_TEXT_PARSER_H_
