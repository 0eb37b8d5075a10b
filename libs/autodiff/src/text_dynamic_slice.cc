// stablehlo.dynamic_slice and stablehlo.dynamic_update_slice (text_parser.h), which JAX prints
// for lax.dynamic_slice / dynamic_update_slice and for every lax.scan over stacked layers
// (the layer's weights sliced out by the loop counter, the per-step outputs written back).
//
// Both clamp each start to [0, dim - size] so the window fits. dynamic_slice with starts that
// fold to constants (a counter once PCP has unrolled the loop, text_while.cc) is a static
// slice; with starts computed from the arguments, a gather of the whole window (gather clamps
// the same way). dynamic_update_slice is a scatter that assigns the window at the clamped
// starts. So nothing new reaches the IR, the backends or autodiff (general_indexing.h).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/general_indexing.h"
#include "pcp/base/status_macros.h"
#include "text_parser.h"

namespace pcp::text_internal {

absl::Status Parser::ParseDynamicSlice(Function* f, Scope* scope, const Token& result, size_t op_offset) {
  const bool generic = Is(TokenKind::kString);
  const bool update = IsOp("stablehlo.dynamic_update_slice");
  const std::string name = update ? "stablehlo.dynamic_update_slice" : "stablehlo.dynamic_slice";
  if (result.kind == TokenKind::kEof) {
    return ErrorAt(op_offset, absl::StrCat(name, " must define a result (%name = ", name, " ...)"));
  }
  Advance();
  std::vector<ValueId> operands;
  std::vector<size_t> offsets;
  std::vector<int64_t> sizes;
  size_t sizes_offset = op_offset;
  bool have_sizes = false;
  std::vector<TensorType> in, out;
  size_t type_offset = 0;
  if (generic) {  // "stablehlo.dynamic_slice"(%x, %s0, ...) {slice_sizes = array<i64: ...>} : (...) -> t
    PCP_RETURN_IF_ERROR(ParseOperandList(*scope, &operands, &offsets));
    PCP_RETURN_IF_ERROR(ParseAttributeDicts([&](const std::string& key, size_t key_offset) -> absl::Status {
      if (update || key != "slice_sizes") {
        return ErrorAt(key_offset, absl::StrCat("unsupported attribute '", key, "' on ", name));
      }
      sizes_offset = key_offset;
      have_sizes = true;
      PCP_ASSIGN_OR_RETURN(sizes, ParseI64List());
      return absl::OkStatus();
    }));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the operation's type"));
    type_offset = cur_.offset;
    PCP_RETURN_IF_ERROR(ParseTypeList(&in));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in the operation's type"));
    PCP_RETURN_IF_ERROR(ParseResultTypes(&out));
  } else {  // stablehlo.dynamic_slice %x, %s0, ..., sizes = [..] : (...) -> t
    PCP_RETURN_IF_ERROR(ParsePrettyOperands(*scope, &operands, &offsets));
    if (!update) {
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kComma, absl::StrCat("and sizes = [...] after the operands of ", name)));
      sizes_offset = cur_.offset;
      PCP_RETURN_IF_ERROR(ExpectKey("sizes", name));
      PCP_ASSIGN_OR_RETURN(sizes, ParseBracketList());
      have_sizes = true;
    }
    PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(name));
    PCP_RETURN_IF_ERROR(ParsePrettyType(operands.size(), &type_offset, &in, &out));
  }
  if (!update && !have_sizes) return ErrorAt(op_offset, absl::StrCat(name, " needs attribute 'slice_sizes'"));

  // The spec's constraints, checked before anything is emitted.
  const size_t fixed = update ? 2 : 1;  // operand (and update) before the starts
  if (operands.empty() || operands.size() < fixed) {
    return ErrorAt(op_offset, absl::StrCat(name, " expects the operand", update ? ", the update" : "",
                                           " and one start per dimension"));
  }
  if (in.size() != operands.size()) {
    return ErrorAt(type_offset,
                   absl::StrCat("the type lists ", in.size(), " operands but ", name, " has ", operands.size()));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    if (f->type(operands[i]) != in[i]) {
      return ErrorAt(offsets[i], absl::StrCat("operand #", i, " has type ", f->type(operands[i]).ToString(),
                                              " but the operation's type says ", in[i].ToString()));
    }
  }
  if (out.size() != 1)
    return ErrorAt(type_offset, absl::StrCat(name, " has exactly one result, the type lists ", out.size()));
  const TensorType operand = in[0];
  const int64_t rank = operand.rank();
  if (static_cast<int64_t>(operands.size() - fixed) != rank) {
    return ErrorAt(op_offset, absl::StrCat(name, " takes one start per dimension of ", operand.ToString(), " (", rank,
                                           "), got ", operands.size() - fixed));
  }
  for (size_t i = fixed; i < operands.size(); ++i) {
    if (in[i].rank() != 0 || !IsInteger(in[i].dtype) || in[i].dtype != in[fixed].dtype) {
      return ErrorAt(offsets[i],
                     absl::StrCat(name, ": the starts must be integer scalars of one type, got ", in[i].ToString(),
                                  i > fixed ? absl::StrCat(" after ", in[fixed].ToString()) : ""));
    }
  }
  Shape window = update ? in[1].shape : Shape(sizes.begin(), sizes.end());
  if (update && (in[1].dtype != operand.dtype || in[1].rank() != rank)) {
    return ErrorAt(offsets[1], absl::StrCat(name, ": the update ", in[1].ToString(),
                                            " must have the rank and "
                                            "element type of the operand ",
                                            operand.ToString()));
  }
  if (!update && static_cast<int64_t>(sizes.size()) != rank) {
    return ErrorAt(sizes_offset,
                   absl::StrCat(name, ": slice_sizes has ", sizes.size(), " entries for ", operand.ToString()));
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (window[static_cast<size_t>(d)] < 0 || window[static_cast<size_t>(d)] > operand.shape[static_cast<size_t>(d)]) {
      return ErrorAt(update ? offsets[1] : sizes_offset,
                     absl::StrCat(name, ": the window [", absl::StrJoin(window, ", "), "] does not fit in ",
                                  operand.ToString()));
    }
  }
  const TensorType want = update ? operand : TensorType{operand.dtype, window};
  if (out[0] != want) {
    return ErrorAt(type_offset, absl::StrCat(name, ": the result type is ", out[0].ToString(),
                                             " but the operands give ", want.ToString()));
  }

  // dynamic_slice's starts that fold, clamped as the spec clamps them (a static slice).
  std::vector<int64_t> known;
  for (int64_t d = 0; d < rank && !update; ++d) {
    std::optional<Tensor> s = KnownValue(*f, operands[fixed + static_cast<size_t>(d)], 0);
    if (!s.has_value()) break;
    const int64_t v = s->dtype() == DType::kI64 ? s->data<int64_t>()[0] : s->data<int32_t>()[0];
    const int64_t hi = operand.shape[static_cast<size_t>(d)] - window[static_cast<size_t>(d)];
    known.push_back(v < 0 ? 0 : v > hi ? hi : v);
  }
  ValueId v = kNoValue;
  if (rank == 0) {
    v = update ? operands[1] : operands[0];
  } else if (!update && static_cast<int64_t>(known.size()) == rank) {
    std::vector<int64_t> limit(known), stride(static_cast<size_t>(rank), 1);
    for (int64_t d = 0; d < rank; ++d) limit[static_cast<size_t>(d)] += window[static_cast<size_t>(d)];
    Attributes attrs;
    attrs.start = known;
    attrs.limit = std::move(limit);
    attrs.stride = std::move(stride);
    v = f->AddInstruction(Op::kSlice, {operands[0]}, want, std::move(attrs));
  } else {
    FunctionBuilder b(std::move(*f));
    std::vector<ValueId> starts;
    const DType index = in[fixed].dtype;
    for (int64_t d = 0; d < rank; ++d) {
      ValueId s = operands[fixed + static_cast<size_t>(d)];
      if (update) {  // scatter skips a window that does not fit: clamp it in first
        const double hi = static_cast<double>(operand.shape[static_cast<size_t>(d)] - window[static_cast<size_t>(d)]);
        s = b.Clamp(b.ScalarConstant(0, index), s, b.ScalarConstant(hi, index));
      }
      starts.push_back(b.Reshape(s, {1}));
    }
    const ValueId indices = rank == 1 ? starts[0] : b.Concatenate(starts, 0);
    std::vector<int64_t> all(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) all[static_cast<size_t>(d)] = d;
    if (update) {
      ScatterDimensionNumbers dims{.update_window_dims = all,
                                   .scatter_dims_to_operand_dims = all,
                                   .index_vector_dim = 0};
      if (operand.dtype == DType::kBool) {  // the scatter computes in i32; i1 converts back exactly
        v = b.Convert(EmitScatter(b, b.Convert(operands[0], DType::kI32), indices, b.Convert(operands[1], DType::kI32),
                                  dims, ScatterCombiner::kAssign),
                      DType::kBool);
      } else {
        v = EmitScatter(b, operands[0], indices, operands[1], dims, ScatterCombiner::kAssign);
      }
    } else {
      GatherDimensionNumbers dims{.offset_dims = all, .start_index_map = all, .index_vector_dim = 0};
      v = EmitGather(b, operands[0], indices, dims, sizes);
    }
    return TakeBuilt(b, f, scope, result, v, op_offset);
  }
  if (!scope->values.emplace(std::string(result.text), v).second) {
    return ErrorAt(result.offset, absl::StrCat("redefinition of ", result.text));
  }
  return absl::OkStatus();
}

}  // namespace pcp::text_internal
