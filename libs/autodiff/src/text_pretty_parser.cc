// The structure of MLIR's pretty (custom) form, as exporters print it (torch-mlir's fx
// importer, JAX): `module @m attributes {...} { func.func @main(%arg0: tensor<..> {...}) ->
// tensor<..> { ... } }`, `#loc1 = loc(...)` aliases and the trailing file metadata whose
// dialect_resources hold the blobs of dense_resource<...> constants. Operations are in
// text_pretty_ops.cc. See text_parser.h.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "text_parser.h"

namespace pcp::text_internal {
namespace {

// Attributes that say how a program is sharded, laid out, donated or named by its exporter,
// never what it computes, so PCP may read past them. The only place that lists them.
constexpr absl::string_view kIgnorableAttributes[] = {
    "mhlo.sharding",
    "sdy.sharding",
    "mhlo.frontend_attributes",
    "mhlo.layout_mode",
    "jax.result_info",
    "jax.arg_info",
    "jax.buffer_donor",
    "tf.aliasing_output",
    "jax.uses_shape_polymorphism",
    "torch.debug_module_name",
    "torch.assume_strict_symbolic_shapes",
    "mhlo.cross_program_prefetches",
    "mhlo.is_dynamic",
    "mhlo.use_auto_spmd_partitioning",
    "mhlo.input_output_alias",  // which result may reuse which argument's buffer: not values
    "mhlo.num_partitions",
    "mhlo.num_replicas",  // must be 1: checked where read
};

bool IgnorableAttribute(absl::string_view key) {
  for (absl::string_view k : kIgnorableAttributes) {
    if (k == key) return true;
  }
  return false;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::Status Parser::SkipAttributeValue() {
  size_t start = cur_.offset;
  int depth = 0;
  bool any = false;
  while (true) {
    switch (cur_.kind) {
      case TokenKind::kEof: return ErrorAt(start, "unterminated attribute value");
      case TokenKind::kError: return Expected("an attribute value");
      case TokenKind::kComma:
      case TokenKind::kRBrace:
        if (depth == 0) return any ? absl::OkStatus() : Expected("an attribute value");
        break;
      default: break;
    }
    if (Is(TokenKind::kLParen) || Is(TokenKind::kLSquare) || Is(TokenKind::kLBrace) || Is(TokenKind::kLess)) {
      ++depth;
    } else if (Is(TokenKind::kRParen) || Is(TokenKind::kRSquare) || Is(TokenKind::kRBrace) || Is(TokenKind::kGreater)) {
      if (depth == 0) return Expected("an attribute value");
      --depth;
    }
    any = true;
    Advance();
  }
}

absl::Status Parser::ParseIgnorableAttributes(absl::string_view what, std::string* pcp_name, bool symbol) {
  if (!ConsumeIf(TokenKind::kLBrace)) return absl::OkStatus();
  if (ConsumeIf(TokenKind::kRBrace)) return absl::OkStatus();
  do {
    size_t key_offset = cur_.offset;
    absl::StatusOr<std::string> parsed_key = ParseAttrName();  // (not ASSIGN_OR_RETURN: GCC 12
    if (!parsed_key.ok()) return parsed_key.status();          // warns of a maybe-uninitialized key)
    const std::string& key = *parsed_key;
    if (key == "pcp.name" && pcp_name != nullptr) {
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after 'pcp.name'"));
      PCP_ASSIGN_OR_RETURN(*pcp_name, ParseString("a name string"));
    } else if (key == "mhlo.num_partitions" || key == "mhlo.num_replicas") {
      // A program for several partitions or replicas computes something else per device.
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, absl::StrCat("after '", key, "'")));
      size_t value_offset = cur_.offset;
      if (!Is(TokenKind::kInteger)) return Expected("an integer");
      if (cur_.text != "1") {
        return ErrorAt(value_offset, absl::StrCat(key, " = ", cur_.text,
                                                  " is not supported (PCP runs one replica "
                                                  "of one partition per program)"));
      }
      Advance();
      if (ConsumeIf(TokenKind::kColon)) {
        if (!Is(TokenKind::kBareId)) return Expected("an integer type");
        Advance();
      }
    } else if (IgnorableAttribute(key) || (symbol && (key == "sym_name" || key == "sym_visibility"))) {
      if (ConsumeIf(TokenKind::kEqual)) PCP_RETURN_IF_ERROR(SkipAttributeValue());
    } else {
      return ErrorAt(key_offset, absl::StrCat("unsupported attribute '", key, "' on ", what, " (PCP reads past only ",
                                              pcp_name != nullptr ? "pcp.name, " : "",
                                              absl::StrJoin(kIgnorableAttributes, ", "), ")"));
    }
  } while (ConsumeIf(TokenKind::kComma));
  return Expect(TokenKind::kRBrace, "to close the attributes");
}

absl::Status Parser::SkipAliasDefinitions() {
  while (Is(TokenKind::kHashId)) {
    Token alias = cur_;
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, absl::StrCat("after the alias name ", alias.text)));
    if (!after_location_) {
      return ErrorAt(alias.offset, absl::StrCat("attribute alias ", alias.text,
                                                " is not supported (only location aliases, #loc = loc(...))"));
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParsePrettyModule(Module* module) {
  Advance();                            // module / builtin.module
  if (Is(TokenKind::kAtId)) Advance();  // the module's name: PCP's Module has none
  if (IsWord("attributes")) {
    Advance();
    if (!Is(TokenKind::kLBrace)) return Expected("'{' with the module's attributes");
    PCP_RETURN_IF_ERROR(ParseIgnorableAttributes("the module"));
  }
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the module's body"));
  while (!ConsumeIf(TokenKind::kRBrace)) {
    if (Is(TokenKind::kEof)) return Expected("a function or '}' to close the module");
    PCP_RETURN_IF_ERROR(ParseAnyFunction(module));
  }
  return absl::OkStatus();
}

absl::StatusOr<Function> Parser::ParsePrettyFunction(size_t* name_offset) {
  Advance();  // func.func
  if (IsWord("public") || IsWord("private") || IsWord("nested")) Advance();
  if (!Is(TokenKind::kAtId)) return Expected("the function's name (@name)");
  Function f;
  f.name = SymbolName(cur_);
  *name_offset = cur_.offset;
  if (f.name.empty()) return ErrorAt(cur_.offset, "the function name must not be empty");
  const std::string what = absl::StrCat("func.func @", f.name);
  Advance();
  Scope scope;
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "to start the argument list"));
  if (!ConsumeIf(TokenKind::kRParen)) {
    do {
      if (!Is(TokenKind::kPercentId)) return Expected("an argument (%name: type)");
      Token name = cur_;
      Advance();
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the argument name"));
      PCP_ASSIGN_OR_RETURN(TensorType type, ParseTensorType());
      std::string pcp_name;
      PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(absl::StrCat("argument ", name.text, " of ", what), &pcp_name));
      ValueId v = f.AddParameter(std::move(type), std::move(pcp_name));
      if (!scope.values.emplace(std::string(name.text), v).second) {
        return ErrorAt(name.offset, absl::StrCat("redefinition of ", name.text));
      }
    } while (ConsumeIf(TokenKind::kComma));
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close the argument list"));
  }
  std::vector<TensorType> declared;
  std::vector<std::string> result_names;
  size_t results_offset = cur_.offset;
  if (ConsumeIf(TokenKind::kArrow)) {
    results_offset = cur_.offset;
    auto parse_result = [&]() -> absl::Status {
      PCP_ASSIGN_OR_RETURN(TensorType type, ParseTensorType());
      std::string pcp_name;
      PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(absl::StrCat("a result of ", what), &pcp_name));
      declared.push_back(std::move(type));
      result_names.push_back(std::move(pcp_name));
      return absl::OkStatus();
    };
    if (ConsumeIf(TokenKind::kLParen)) {
      if (!ConsumeIf(TokenKind::kRParen)) {
        do {
          PCP_RETURN_IF_ERROR(parse_result());
        } while (ConsumeIf(TokenKind::kComma));
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "to close the result types"));
      }
    } else {
      PCP_ASSIGN_OR_RETURN(TensorType type, ParseTensorType());
      declared.push_back(std::move(type));
      result_names.emplace_back();
    }
  }
  if (IsWord("attributes")) {
    Advance();
    if (!Is(TokenKind::kLBrace)) return Expected(absl::StrCat("'{' with the attributes of ", what));
    PCP_RETURN_IF_ERROR(ParseIgnorableAttributes(what));
  }
  if (!Is(TokenKind::kLBrace)) {
    return Expected("'{' to start the function body (declarations without a body are not supported)");
  }
  Advance();
  std::vector<TensorType> result_types;
  bool returned = false;
  while (!Is(TokenKind::kRBrace)) {
    if (returned) return ErrorAt(cur_.offset, "the return must be the last operation of a function");
    if (Is(TokenKind::kCaretId)) return ErrorAt(cur_.offset, "functions with more than one block are not supported");
    if (Is(TokenKind::kEof)) return Expected("an operation or '}'");
    PCP_RETURN_IF_ERROR(ParseOperation(&f, &scope, &result_types, &returned));
  }
  if (!returned) return ErrorAt(cur_.offset, "the function body must end with a return");
  Advance();
  if (result_types != declared) {
    return ErrorAt(results_offset, absl::StrCat("the result types ", TypesString(declared), " of ", what,
                                                " do not match its return, which has ", TypesString(result_types)));
  }
  f.result_names = std::move(result_names);
  return f;
}

absl::Status Parser::ParseFileMetadata() {
  Advance();  // {-#
  if (!Is(TokenKind::kMetadataEnd)) {
    do {
      if (!Is(TokenKind::kBareId)) return Expected("dialect_resources or external_resources");
      const bool dialect_resources = cur_.text == "dialect_resources";
      Advance();
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the metadata key"));
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the resources"));
      if (!ConsumeIf(TokenKind::kRBrace)) {
        do {
          if (!Is(TokenKind::kBareId)) return Expected("a dialect name");
          const bool builtin = dialect_resources && cur_.text == "builtin";
          Advance();
          PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the dialect name"));
          PCP_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "to start the dialect's resources"));
          if (!ConsumeIf(TokenKind::kRBrace)) {
            do {
              size_t key_offset = cur_.offset;
              std::string key;
              if (Is(TokenKind::kBareId)) {
                key = std::string(cur_.text);
              } else if (Is(TokenKind::kString)) {
                key = DecodeString(cur_);
              } else {
                return Expected("a resource name");
              }
              Advance();
              PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the resource name"));
              if (!builtin) {  // another dialect's resource: no PCP op can refer to it
                PCP_RETURN_IF_ERROR(SkipAttributeValue());
                continue;
              }
              if (!Is(TokenKind::kString)) return Expected("a blob \"0x...\"");
              if (!resources_.emplace(key, cur_).second) {
                return ErrorAt(key_offset, absl::StrCat("resource '", key, "' is defined twice"));
              }
              Advance();
            } while (ConsumeIf(TokenKind::kComma));
            PCP_RETURN_IF_ERROR(Expect(TokenKind::kRBrace, "to close the dialect's resources"));
          }
        } while (ConsumeIf(TokenKind::kComma));
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kRBrace, "to close the resources"));
      }
    } while (ConsumeIf(TokenKind::kComma));
  }
  return Expect(TokenKind::kMetadataEnd, "to close the file metadata");
}

absl::Status Parser::ResolveResources(Module* module) {
  for (const PendingResource& p : pending_resources_) {
    auto it = resources_.find(p.key);
    if (it == resources_.end()) {
      return ErrorAt(p.offset, absl::StrCat("dense_resource<", p.key,
                                            "> has no blob in the file's {-# dialect_resources: { builtin: ... } #-}"));
    }
    const Token& blob = it->second;
    // The blob is "0x", a little-endian u32 alignment, then the raw little-endian elements.
    std::string hex = DecodeString(blob);
    if (hex.size() < 10 || hex[0] != '0' || hex[1] != 'x' || hex.size() % 2 != 0) {
      return ErrorAt(blob.offset, "expected a blob \"0x...\" with a 4-byte alignment header and two digits per byte");
    }
    std::string bytes;
    bytes.reserve(hex.size() / 2 - 1);
    for (size_t i = 2; i < hex.size(); i += 2) {
      int hi = HexValue(hex[i]), lo = HexValue(hex[i + 1]);
      if (hi < 0 || lo < 0) return ErrorAt(blob.offset, "invalid digit in hex string");
      bytes.push_back(static_cast<char>(hi * 16 + lo));
    }
    const uint32_t alignment = static_cast<uint32_t>(static_cast<uint8_t>(bytes[0])) |
                               static_cast<uint32_t>(static_cast<uint8_t>(bytes[1])) << 8 |
                               static_cast<uint32_t>(static_cast<uint8_t>(bytes[2])) << 16 |
                               static_cast<uint32_t>(static_cast<uint8_t>(bytes[3])) << 24;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      return ErrorAt(blob.offset, absl::StrCat("resource '", p.key, "' has alignment ", alignment,
                                               ", not a power of two (the blob starts with a 4-byte header)"));
    }
    const int64_t size = static_cast<int64_t>(bytes.size()) - 4;
    const int64_t stored_elem = p.stored.bytes != 0 ? p.stored.bytes : SizeOf(p.type.dtype);
    const int64_t want = p.type.num_elements() * stored_elem;  // i1: one byte per element
    if (size != want) {
      return ErrorAt(blob.offset,
                     absl::StrCat("resource '", p.key, "' holds ", size, " bytes after its header but ",
                                  p.type.ToString(), " at ", lexer_.Location(p.offset), " needs ", want,
                                  p.stored.bytes != 0 ? absl::StrCat(" (", p.stored.bytes, " bytes per stored element)")
                                                      : ""));
    }
    Tensor t(p.type.dtype, p.type.shape);
    auto* out = static_cast<uint8_t*>(t.raw_data());
    CopyStoredElements(bytes.data() + 4, p.type.num_elements(), p.type.dtype, p.stored, out);
    if (p.type.dtype == DType::kBool) {
      for (int64_t i = 0; i < want; ++i) out[i] = out[i] != 0 ? 1 : 0;
    }
    if (p.function >= module->functions.size() || p.instruction >= module->functions[p.function].instructions.size()) {
      return ErrorAt(p.offset, "internal error: dense_resource constant not found");
    }
    module->functions[p.function].instructions[p.instruction].attrs.literal = std::move(t);
  }
  return absl::OkStatus();
}

}  // namespace pcp::text_internal
