// Which attributes each op takes in the text form, how they map onto Attributes, and the
// gather / scatter dimension numbers (general_indexing.h).
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "text_parser.h"

namespace pcp::text_internal {
namespace {

struct AttrSpec {
  absl::string_view key;
  bool required;
};

std::vector<AttrSpec> AttrSpecs(Op op) {
  switch (op) {
    case Op::kConstant: return {{"value", true}};
    case Op::kIota: return {{"iota_dimension", true}};
    case Op::kConcatenate: return {{"dimension", true}};
    case Op::kBroadcastInDim: return {{"broadcast_dimensions", true}};
    case Op::kTranspose: return {{"permutation", true}};
    case Op::kReduce: return {{"dimensions", true}};
    case Op::kSlice: return {{"start_indices", true}, {"limit_indices", true}, {"strides", true}};
    case Op::kCompare: return {{"comparison_direction", true}, {"compare_type", false}};
    case Op::kDotGeneral: return {{"dot_dimension_numbers", true}, {"precision_config", false}};
    case Op::kGather: return {{"dimension_numbers", true}, {"slice_sizes", true}, {"indices_are_sorted", false}};
    case Op::kScatter:
      return {{"scatter_dimension_numbers", true}, {"indices_are_sorted", false}, {"unique_indices", false}};
    case Op::kAttention:
    case Op::kAttentionLse:
    case Op::kAttentionGradQ:
    case Op::kAttentionGradK:
    case Op::kAttentionGradV: return {{"causal", true}, {"scale", true}};
    default: return {};
  }
}

// The fields of a #stablehlo struct by name; `allowed` lists the known ones in order.
// Missing list fields read as empty lists (StableHLO's printer leaves empty ones out).
absl::Status StructFields(const Lexer& lexer, const StructAttr& attr, absl::string_view struct_name,
                          const std::vector<absl::string_view>& allowed, absl::string_view scalar_field,
                          std::vector<std::vector<int64_t>>* values) {
  values->assign(allowed.size(), {});
  for (const StructField& f : attr.fields) {
    size_t i = 0;
    while (i < allowed.size() && allowed[i] != f.name) ++i;
    if (i == allowed.size()) {
      return lexer.Error(f.offset, absl::StrCat("unknown field '", f.name, "' in #stablehlo.", struct_name,
                                                " (expected one of ", absl::StrJoin(allowed, ", "), ")"));
    }
    bool scalar = allowed[i] == scalar_field;
    if (f.is_list == scalar) {
      return lexer.Error(f.offset,
                         absl::StrCat("field '", f.name, "' must be ", scalar ? "an integer" : "a list [...]"));
    }
    (*values)[i] = f.values;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Parser::ParseAttributeDict(Op op, Attributes* attrs, OpAttributes* parsed) {
  std::vector<AttrSpec> specs = AttrSpecs(op);
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the attributes"));
  if (ConsumeIf(TokenKind::kRBrace)) return absl::OkStatus();
  do {
    size_t key_offset = cur_.offset;
    PCP_ASSIGN_OR_RETURN(std::string key, ParseAttrName());
    size_t i = 0;
    while (i < specs.size() && specs[i].key != key) ++i;
    if (i == specs.size()) {
      return ErrorAt(key_offset, absl::StrCat(OpName(op), " does not take attribute '", key, "'"));
    }
    for (const std::string& k : parsed->seen) {
      if (k == key) return ErrorAt(key_offset, absl::StrCat("attribute '", key, "' appears twice"));
    }
    parsed->seen.push_back(key);
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, absl::StrCat("after '", key, "'")));
    if (key == "value") {
      TensorType type;
      PCP_ASSIGN_OR_RETURN(attrs->literal, ParseConstantValue(&type));
    } else if (key == "iota_dimension" || key == "dimension") {
      PCP_ASSIGN_OR_RETURN(attrs->dimension, ParseI64());
    } else if (key == "broadcast_dimensions" || key == "permutation" || key == "dimensions") {
      PCP_ASSIGN_OR_RETURN(attrs->dims, ParseI64List());
    } else if (key == "start_indices") {
      PCP_ASSIGN_OR_RETURN(attrs->start, ParseI64List());
    } else if (key == "limit_indices") {
      PCP_ASSIGN_OR_RETURN(attrs->limit, ParseI64List());
    } else if (key == "strides") {
      PCP_ASSIGN_OR_RETURN(attrs->stride, ParseI64List());
    } else if (key == "comparison_direction") {
      PCP_ASSIGN_OR_RETURN(attrs->comparison, ParseComparisonDirection());
    } else if (key == "compare_type") {
      PCP_RETURN_IF_ERROR(ParseComparisonType(/*bare=*/false, parsed));
    } else if (key == "precision_config") {
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kLSquare, "to start the precision list"));
      if (!ConsumeIf(TokenKind::kRSquare)) {
        do {
          PCP_RETURN_IF_ERROR(ParsePrecision(/*bare=*/false));
        } while (ConsumeIf(TokenKind::kComma));
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kRSquare, "to close the precision list"));
      }
    } else if (key == "dot_dimension_numbers") {
      PCP_ASSIGN_OR_RETURN(StructAttr dot, ParseStablehloStruct("dot"));
      std::vector<std::vector<int64_t>> v;
      PCP_RETURN_IF_ERROR(StructFields(lexer_, dot, "dot",
                                       {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                        "lhs_contracting_dimensions", "rhs_contracting_dimensions"},
                                       "", &v));
      attrs->dot = DotDims{v[0], v[1], v[2], v[3]};
    } else if (key == "dimension_numbers") {
      PCP_ASSIGN_OR_RETURN(parsed->dims, ParseStablehloStruct("gather"));
    } else if (key == "scatter_dimension_numbers") {
      PCP_ASSIGN_OR_RETURN(parsed->dims, ParseStablehloStruct("scatter"));
    } else if (key == "causal") {
      PCP_ASSIGN_OR_RETURN(attrs->causal, ParseBool());
    } else if (key == "scale") {
      PCP_ASSIGN_OR_RETURN(attrs->scale, ParseF64());
    } else if (key == "slice_sizes") {
      parsed->slice_sizes_offset = cur_.offset;
      PCP_ASSIGN_OR_RETURN(parsed->slice_sizes, ParseI64List());
    } else {  // indices_are_sorted, unique_indices: hints that do not change the result
      PCP_RETURN_IF_ERROR(ParseBool().status());
    }
  } while (ConsumeIf(TokenKind::kComma));
  return Expect(TokenKind::kRBrace, "to close the attributes");
}

absl::Status Parser::CheckRequiredAttributes(Op op, const OpAttributes& parsed, size_t op_offset) const {
  for (const AttrSpec& spec : AttrSpecs(op)) {
    if (!spec.required) continue;
    bool seen = false;
    for (const std::string& k : parsed.seen) seen = seen || k == spec.key;
    if (!seen) return ErrorAt(op_offset, absl::StrCat(OpName(op), " needs attribute '", spec.key, "'"));
  }
  return absl::OkStatus();
}

absl::Status Parser::CheckComparisonType(const OpAttributes& parsed, DType dtype) const {
  const std::string& t = parsed.compare_type;
  if (t.empty() || t == "NOTYPE") return absl::OkStatus();
  if (t == "TOTALORDER") {
    return ErrorAt(parsed.compare_type_offset,
                   "comparison type TOTALORDER is not supported (PCP compares floats in IEEE partial order, FLOAT)");
  }
  // The default for each element type; anything else would change the result.
  absl::string_view want = IsFloat(dtype) ? "FLOAT" : dtype == DType::kBool ? "UNSIGNED" : "SIGNED";
  // UNSIGNED on operands declared ui8/ui16/ui32: widened at import to values that are all
  // non-negative, where a signed comparison gives the same answer.
  const bool widened_unsigned = IsInteger(dtype) && t == "UNSIGNED" && unsigned_type_read_;
  if (t != want && !widened_unsigned) {
    return ErrorAt(parsed.compare_type_offset,
                   absl::StrCat("comparison type ", t, " is not supported for ", MlirName(dtype),
                                " operands (PCP compares them as ", want, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GatherDimensionNumbers> Parser::GatherDims(const OpAttributes& parsed) const {
  std::vector<std::vector<int64_t>> v;
  PCP_RETURN_IF_ERROR(StructFields(lexer_, parsed.dims, "gather",
                                   {"offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                                    "start_indices_batching_dims", "start_index_map", "index_vector_dim"},
                                   "index_vector_dim", &v));
  return GatherDimensionNumbers{v[0], v[1], v[2], v[3], v[4], v[5].empty() ? 0 : v[5][0]};
}

absl::StatusOr<ScatterDimensionNumbers> Parser::ScatterDims(const OpAttributes& parsed) const {
  std::vector<std::vector<int64_t>> v;
  PCP_RETURN_IF_ERROR(
      StructFields(lexer_, parsed.dims, "scatter",
                   {"update_window_dims", "inserted_window_dims", "input_batching_dims",
                    "scatter_indices_batching_dims", "scatter_dims_to_operand_dims", "index_vector_dim"},
                   "index_vector_dim", &v));
  return ScatterDimensionNumbers{v[0], v[1], v[2], v[3], v[4], v[5].empty() ? 0 : v[5][0]};
}

}  // namespace pcp::text_internal
