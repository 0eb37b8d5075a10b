// Types and attribute values of the text form: tensor types, dense<...> literals, integer
// lists and the #stablehlo attributes. See text_parser.h.
#include <charconv>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/tensor/convert.h"
#include "text_parser.h"

namespace pcp::text_internal {

struct Parser::Element {
  Token token;
  bool negative = false;
  size_t offset = 0;  // of the '-' if negative
};

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Value of a kInteger token (decimal or 0x hex) as uint64, or false on overflow.
bool IntegerValue(absl::string_view text, uint64_t* value) {
  uint64_t v = 0;
  if (text.size() > 2 && text[0] == '0' && text[1] == 'x') {
    for (char c : text.substr(2)) {
      if (v >> 60 != 0) return false;
      v = v * 16 + static_cast<uint64_t>(HexDigit(c));
    }
  } else {
    for (char c : text) {
      uint64_t d = static_cast<uint64_t>(c - '0');
      if (v > (UINT64_MAX - d) / 10) return false;
      v = v * 10 + d;
    }
  }
  *value = v;
  return true;
}

bool IsHexLiteral(absl::string_view text) { return text.size() > 2 && text[1] == 'x'; }

}  // namespace

bool Parser::ConsumeIf(TokenKind kind) {
  if (cur_.kind != kind) return false;
  Advance();
  return true;
}

absl::Status Parser::Expected(absl::string_view what) const {
  return ErrorAt(cur_.offset, absl::StrCat("expected ", what, ", got ", Describe(cur_)));
}

absl::Status Parser::Expect(TokenKind kind, absl::string_view context) {
  if (ConsumeIf(kind)) return absl::OkStatus();
  return Expected(context.empty() ? std::string(KindName(kind)) : absl::StrCat(KindName(kind), " ", context));
}

absl::Status Parser::ExpectWord(absl::string_view word, absl::string_view context) {
  if (IsWord(word)) {
    Advance();
    return absl::OkStatus();
  }
  return Expected(absl::StrCat("'", word, "'", context.empty() ? "" : " ", context));
}

absl::StatusOr<TensorType> Parser::ParseTensorType(StoredElement* stored) {
  size_t start = cur_.offset;
  if (Is(TokenKind::kBareId) && !IsWord("tensor") && (ParseMlirDType(cur_.text).ok() || cur_.text == "index")) {
    return ErrorAt(cur_.offset, absl::StrCat("scalar type '", cur_.text,
                                             "' is not supported: PCP values are tensors (tensor<", cur_.text, ">)"));
  }
  PCP_RETURN_IF_ERROR(ExpectWord("tensor", "type"));
  if (!Is(TokenKind::kLess)) return Expected("'<' after 'tensor'");
  // Dimension lists are not tokens ("4x8xf32" would lex as 4, x8xf32): scan them raw.
  lexer_.Seek(cur_.offset + 1);
  TensorType type;
  PCP_RETURN_IF_ERROR(lexer_.ScanDimensions(&type.shape));
  Advance();
  if (!Is(TokenKind::kBareId)) return Expected("an element type");
  absl::StatusOr<DType> dtype = ParseMlirDType(cur_.text);
  StoredElement widened;
  if (!dtype.ok()) {
    // Narrow and unsigned integers are widened to a PCP integer type that holds every value.
    static constexpr struct {
      absl::string_view name;
      DType dtype;
      int bytes;
      bool is_signed;
    } kWidened[] = {{"i8", DType::kI32, 1, true},
                    {"i16", DType::kI32, 2, true},
                    {"ui8", DType::kI32, 1, false},
                    {"ui16", DType::kI32, 2, false},
                    {"ui32", DType::kI64, 4, false}};
    for (const auto& w : kWidened) {
      if (cur_.text == w.name) {
        dtype = w.dtype;
        widened = {w.bytes, w.is_signed};
      }
    }
  }
  if (!dtype.ok()) {
    return ErrorAt(cur_.offset, absl::StrCat("unsupported element type '", cur_.text,
                                             "' (PCP has f32, f64, f16, bf16, i32, i64 and i1, and reads i8, i16, "
                                             "ui8 and ui16 as i32 and ui32 as i64)"));
  }
  if (stored != nullptr) *stored = widened;
  unsigned_type_read_ = unsigned_type_read_ || (widened.bytes != 0 && !widened.is_signed);
  type.dtype = *dtype;
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close the tensor type"));
  if (type.shape.size() > static_cast<size_t>(kMaxListDepth)) {
    return ErrorAt(start, absl::StrCat("rank ", type.shape.size(), " exceeds the limit of ", kMaxListDepth));
  }
  bool empty = false;
  int64_t elements = 1;
  for (int64_t d : type.shape) empty = empty || d == 0;
  for (int64_t d : type.shape) {
    if (empty) break;
    if (elements > kMaxElements / d) {
      return ErrorAt(start, absl::StrCat("type has more than ", kMaxElements, " elements"));
    }
    elements *= d;
  }
  return type;
}

absl::Status Parser::ParseTypeList(std::vector<TensorType>* types) {
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "to start a type list"));
  if (ConsumeIf(TokenKind::kRParen)) return absl::OkStatus();
  do {
    PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
    types->push_back(std::move(t));
  } while (ConsumeIf(TokenKind::kComma));
  return Expect(TokenKind::kRParen, "to close the type list");
}

absl::Status Parser::ParseResultTypes(std::vector<TensorType>* types) {
  if (Is(TokenKind::kLParen)) return ParseTypeList(types);
  PCP_ASSIGN_OR_RETURN(TensorType t, ParseTensorType());
  types->push_back(std::move(t));
  return absl::OkStatus();
}

absl::Status Parser::ParseElement(std::vector<Element>* elements) {
  Element e;
  e.offset = cur_.offset;
  e.negative = ConsumeIf(TokenKind::kMinus);
  if (!Is(TokenKind::kInteger) && !Is(TokenKind::kFloat) && !(IsWord("true") || IsWord("false"))) {
    return Expected("a literal value");
  }
  if (e.negative && Is(TokenKind::kBareId)) return Expected("a number after '-'");
  e.token = cur_;
  Advance();
  elements->push_back(e);
  return absl::OkStatus();
}

absl::Status Parser::ParseDenseList(int depth, std::vector<int64_t>* shape, std::vector<Element>* elements) {
  if (depth >= kMaxListDepth) return ErrorAt(cur_.offset, "literal nests too deeply");
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLSquare));
  shape->assign(1, 0);
  if (ConsumeIf(TokenKind::kRSquare)) return absl::OkStatus();
  std::vector<int64_t> inner, first;
  int64_t count = 0;
  do {
    size_t item = cur_.offset;
    inner.clear();
    if (Is(TokenKind::kLSquare)) {
      PCP_RETURN_IF_ERROR(ParseDenseList(depth + 1, &inner, elements));
    } else {
      PCP_RETURN_IF_ERROR(ParseElement(elements));
    }
    if (count == 0) {
      first = inner;
    } else if (inner != first) {
      return ErrorAt(item, "nested lists of a literal must all have the same shape");
    }
    ++count;
  } while (ConsumeIf(TokenKind::kComma));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kRSquare, "to close the list"));
  (*shape)[0] = count;
  shape->insert(shape->end(), first.begin(), first.end());
  return absl::OkStatus();
}

absl::Status Parser::StoreElement(const Element& e, DType dtype, void* out) const {
  absl::string_view text = e.token.text;
  std::string got = absl::StrCat(e.negative ? "-" : "", text);
  if (dtype == DType::kBool) {
    uint8_t v;
    if (text == "true" || (e.token.kind == TokenKind::kInteger && text == "1")) {
      v = 1;
    } else if (text == "false" || (e.token.kind == TokenKind::kInteger && text == "0")) {
      v = 0;
    } else {
      return ErrorAt(e.offset, absl::StrCat("expected true or false for i1, got '", got, "'"));
    }
    if (e.negative) return ErrorAt(e.offset, absl::StrCat("expected true or false for i1, got '", got, "'"));
    std::memcpy(out, &v, 1);
    return absl::OkStatus();
  }
  if (IsInteger(dtype)) {
    uint64_t magnitude;
    if (e.token.kind != TokenKind::kInteger) {
      return ErrorAt(e.offset, absl::StrCat("expected an integer for ", MlirName(dtype), ", got '", got, "'"));
    }
    int bits = dtype == DType::kI32 ? 32 : 64;
    // Signless integers: like MLIR, accept [-2^(bits-1), 2^bits - 1].
    uint64_t max_positive = bits == 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
    uint64_t max_negative = uint64_t{1} << (bits - 1);
    if (!IntegerValue(text, &magnitude) || magnitude > (e.negative ? max_negative : max_positive)) {
      return ErrorAt(e.offset, absl::StrCat("integer ", got, " does not fit in ", MlirName(dtype)));
    }
    uint64_t v = e.negative ? uint64_t{0} - magnitude : magnitude;
    if (bits == 32) {
      auto v32 = static_cast<uint32_t>(v);
      std::memcpy(out, &v32, 4);
    } else {
      std::memcpy(out, &v, 8);
    }
    return absl::OkStatus();
  }
  // Floating point: a decimal literal with a '.', or the raw bits in hex (inf, nan).
  int64_t size = SizeOf(dtype);
  if (e.token.kind == TokenKind::kInteger) {
    if (!IsHexLiteral(text)) {
      return ErrorAt(e.offset, absl::StrCat("expected a floating-point literal for ", MlirName(dtype),
                                            " (add a '.'), got '", got, "'"));
    }
    uint64_t bits;
    if (e.negative) return ErrorAt(e.offset, "hexadecimal float literal must not have a leading '-'");
    if (!IntegerValue(text, &bits) || (size < 8 && (bits >> (8 * size)) != 0)) {
      return ErrorAt(e.offset, absl::StrCat("hexadecimal literal ", text, " does not fit in ", MlirName(dtype)));
    }
    if (size == 8) {
      std::memcpy(out, &bits, 8);
    } else if (size == 4) {
      auto v = static_cast<uint32_t>(bits);
      std::memcpy(out, &v, 4);
    } else {
      auto v = static_cast<uint16_t>(bits);
      std::memcpy(out, &v, 2);
    }
    return absl::OkStatus();
  }
  if (e.token.kind != TokenKind::kFloat) {
    return ErrorAt(e.offset,
                   absl::StrCat("expected a floating-point literal for ", MlirName(dtype), ", got '", got, "'"));
  }
  // As MLIR does: decimal -> nearest double -> nearest target value.
  double d = 0.0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec == std::errc::result_out_of_range) {
    if (text.find("e-") == absl::string_view::npos && text.find("E-") == absl::string_view::npos) {
      return ErrorAt(e.offset, absl::StrCat("floating-point literal ", got, " is out of range for ", MlirName(dtype)));
    }
    d = 0.0;  // underflow: rounds to zero in every supported type
  } else if (ec != std::errc() || end != text.data() + text.size()) {
    return ErrorAt(e.offset, absl::StrCat("invalid floating-point literal '", got, "'"));
  }
  if (e.negative) d = -d;
  if (dtype == DType::kF64) {
    std::memcpy(out, &d, 8);
    return absl::OkStatus();
  }
  auto f = static_cast<float>(d);
  if (std::isinf(f)) {
    return ErrorAt(e.offset, absl::StrCat("floating-point literal ", got, " is out of range for ", MlirName(dtype)));
  }
  if (dtype == DType::kF32) {
    std::memcpy(out, &f, 4);
    return absl::OkStatus();
  }
  uint16_t h = dtype == DType::kF16 ? FloatToHalf(f) : FloatToBFloat16(f);
  if ((h & 0x7FFF) == (dtype == DType::kF16 ? 0x7C00 : 0x7F80)) {
    return ErrorAt(e.offset, absl::StrCat("floating-point literal ", got, " is out of range for ", MlirName(dtype)));
  }
  std::memcpy(out, &h, 2);
  return absl::OkStatus();
}

void CopyStoredElements(const char* src, int64_t n, DType dtype, const StoredElement& stored, void* out) {
  if (stored.bytes == 0) {
    std::memcpy(out, src, static_cast<size_t>(n * SizeOf(dtype)));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = 0;  // little-endian
    for (int b = stored.bytes - 1; b >= 0; --b) bits = bits << 8 | static_cast<uint8_t>(src[i * stored.bytes + b]);
    int64_t value = static_cast<int64_t>(bits);
    const int shift = 64 - 8 * stored.bytes;
    if (stored.is_signed) value = static_cast<int64_t>(bits << shift) >> shift;  // sign-extend
    if (dtype == DType::kI32) {
      static_cast<int32_t*>(out)[i] = static_cast<int32_t>(value);
    } else {
      static_cast<int64_t*>(out)[i] = value;
    }
  }
}

absl::StatusOr<Tensor> Parser::TensorFromHex(absl::string_view hex, size_t offset, const TensorType& type,
                                             const StoredElement& stored) const {
  if (hex.size() < 2 || hex[0] != '0' || hex[1] != 'x' || hex.size() % 2 != 0) {
    return ErrorAt(offset, "expected a hex string \"0x...\" with two digits per byte");
  }
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (size_t i = 2; i < hex.size(); i += 2) {
    int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return ErrorAt(offset, "invalid digit in hex string");
    bytes.push_back(static_cast<char>(hi * 16 + lo));
  }
  Tensor t(type.dtype, type.shape);
  int64_t n = t.num_elements();
  auto* out = static_cast<uint8_t*>(t.raw_data());
  auto size = static_cast<int64_t>(bytes.size());
  if (type.dtype == DType::kBool) {
    // MLIR packs i1 eight to a byte (element 0 in bit 0); a single 0x00 / 0xFF byte is a splat.
    if (size == 1 && (bytes[0] == 0 || bytes[0] == '\xFF')) {
      std::memset(out, bytes[0] != 0 ? 1 : 0, static_cast<size_t>(n));
      return t;
    }
    if (size != (n + 7) / 8) {
      return ErrorAt(offset, absl::StrCat("hex literal has ", size, " bytes but ", type.ToString(), " needs ",
                                          (n + 7) / 8, " (bit-packed)"));
    }
    for (int64_t i = 0; i < n; ++i) out[i] = (static_cast<uint8_t>(bytes[i / 8]) >> (i % 8)) & 1;
    return t;
  }
  const int64_t elem = SizeOf(type.dtype);
  const int64_t stored_elem = stored.bytes != 0 ? stored.bytes : elem;
  if (size == stored_elem && n != 1) {
    CopyStoredElements(bytes.data(), 1, type.dtype, stored, out);
    for (int64_t i = 1; i < n; ++i) std::memcpy(out + i * elem, out, static_cast<size_t>(elem));
    return t;
  }
  if (size != n * stored_elem) {
    return ErrorAt(offset, absl::StrCat("hex literal has ", size, " bytes but ", type.ToString(), " needs ",
                                        n * stored_elem, " (or ", stored_elem, " for a splat)"));
  }
  CopyStoredElements(bytes.data(), n, type.dtype, stored, out);
  return t;
}

absl::StatusOr<Tensor> Parser::ParseDenseElements(TensorType* type) {
  size_t start = cur_.offset;
  PCP_RETURN_IF_ERROR(ExpectWord("dense"));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after 'dense'"));
  enum class Form { kEmpty, kHex, kList, kSplat } form;
  std::vector<Element> elements;
  std::vector<int64_t> list_shape;
  Token hex;
  if (Is(TokenKind::kGreater)) {
    form = Form::kEmpty;
  } else if (Is(TokenKind::kString)) {
    form = Form::kHex;
    hex = cur_;
    Advance();
  } else if (Is(TokenKind::kLSquare)) {
    form = Form::kList;
    PCP_RETURN_IF_ERROR(ParseDenseList(0, &list_shape, &elements));
  } else {
    form = Form::kSplat;
    PCP_RETURN_IF_ERROR(ParseElement(&elements));
  }
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close 'dense<'"));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "and a type after the dense literal"));
  StoredElement stored;
  PCP_ASSIGN_OR_RETURN(*type, ParseTensorType(&stored));
  int64_t n = type->num_elements(), elem = SizeOf(type->dtype);
  if (n > kMaxConstantBytes / elem) {
    return ErrorAt(start, absl::StrCat("literal of ", type->ToString(), " exceeds the limit of ", kMaxConstantBytes,
                                       " bytes"));
  }
  switch (form) {
    case Form::kEmpty:
      if (n != 0) return ErrorAt(start, absl::StrCat("dense<> holds no elements but ", type->ToString(), " has ", n));
      return Tensor(type->dtype, type->shape);
    case Form::kHex: return TensorFromHex(DecodeString(hex), hex.offset, *type, stored);
    case Form::kList: {
      if (list_shape != type->shape) {
        return ErrorAt(start, absl::StrCat("literal has shape [", absl::StrJoin(list_shape, ", "), "] but the type is ",
                                           type->ToString()));
      }
      Tensor t(type->dtype, type->shape);
      auto* out = static_cast<uint8_t*>(t.raw_data());
      for (size_t i = 0; i < elements.size(); ++i) {
        PCP_RETURN_IF_ERROR(StoreElement(elements[i], type->dtype, out + static_cast<int64_t>(i) * elem));
      }
      return t;
    }
    case Form::kSplat: {
      uint8_t value[8];
      PCP_RETURN_IF_ERROR(StoreElement(elements[0], type->dtype, value));
      Tensor t(type->dtype, type->shape);
      auto* out = static_cast<uint8_t*>(t.raw_data());
      for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * elem, value, static_cast<size_t>(elem));
      return t;
    }
  }
  return ErrorAt(start, "unreachable");
}

absl::StatusOr<std::vector<int64_t>> Parser::ParseI64List() {
  size_t start = cur_.offset;
  if (IsWord("array")) {  // array<i64: 1, 2>, array<i64> (newer MLIR)
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after 'array'"));
    if (!IsWord("i64")) return Expected("i64 (the element type of an integer array)");
    Advance();
    std::vector<int64_t> values;
    if (ConsumeIf(TokenKind::kColon)) {
      do {
        PCP_ASSIGN_OR_RETURN(int64_t v, ParseI64(/*type_suffix=*/false));
        values.push_back(v);
      } while (ConsumeIf(TokenKind::kComma));
    }
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close 'array<'"));
    return values;
  }
  TensorType type;
  PCP_ASSIGN_OR_RETURN(Tensor t, ParseDenseElements(&type));
  if (type.dtype != DType::kI64 || type.rank() != 1) {
    return ErrorAt(start, absl::StrCat("expected a list of type tensor<Nxi64>, got ", type.ToString()));
  }
  std::vector<int64_t> values = t.ToVector<int64_t>();
  for (int64_t v : values) {
    if (v > kMaxDimension || v < -kMaxDimension) return ErrorAt(start, absl::StrCat("value ", v, " is out of range"));
  }
  return values;
}

absl::StatusOr<int64_t> Parser::ParseI64(bool type_suffix) {
  size_t start = cur_.offset;
  bool negative = ConsumeIf(TokenKind::kMinus);
  if (!Is(TokenKind::kInteger)) return Expected("an integer");
  uint64_t magnitude;
  if (!IntegerValue(cur_.text, &magnitude) || magnitude > static_cast<uint64_t>(kMaxDimension)) {
    return ErrorAt(start, absl::StrCat("integer ", cur_.text, " is out of range"));
  }
  Advance();
  if (type_suffix && ConsumeIf(TokenKind::kColon)) PCP_RETURN_IF_ERROR(ExpectWord("i64", "as the integer's type"));
  auto v = static_cast<int64_t>(magnitude);
  return negative ? -v : v;
}

absl::StatusOr<double> Parser::ParseF64() {
  std::vector<Element> elements;
  PCP_RETURN_IF_ERROR(ParseElement(&elements));
  double d = 0;
  PCP_RETURN_IF_ERROR(StoreElement(elements[0], DType::kF64, &d));
  if (ConsumeIf(TokenKind::kColon)) PCP_RETURN_IF_ERROR(ExpectWord("f64", "as the float's type"));
  return d;
}

absl::StatusOr<bool> Parser::ParseBool() {
  if (IsWord("true") || IsWord("false")) {
    bool v = cur_.text == "true";
    Advance();
    return v;
  }
  return Expected("true or false");
}

absl::StatusOr<std::string> Parser::ParseString(absl::string_view what) {
  if (!Is(TokenKind::kString)) return Expected(what);
  std::string s = DecodeString(cur_);
  Advance();
  return s;
}

absl::StatusOr<ComparisonDirection> Parser::ParseComparisonDirection() {
  static constexpr ComparisonDirection kAll[] = {ComparisonDirection::kEQ, ComparisonDirection::kNE,
                                                 ComparisonDirection::kLT, ComparisonDirection::kLE,
                                                 ComparisonDirection::kGT, ComparisonDirection::kGE};
  if (Is(TokenKind::kString)) {  // old MHLO: comparison_direction = "LT"
    const std::string word = DecodeString(cur_);
    for (ComparisonDirection d : kAll) {
      if (word == ComparisonName(d)) {
        Advance();
        return d;
      }
    }
    return Expected("\"EQ\", \"NE\", \"LT\", \"LE\", \"GT\" or \"GE\"");
  }
  if (!IsDialectAttr("")) return Expected("#stablehlo<comparison_direction ...>");
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after #stablehlo"));
  PCP_RETURN_IF_ERROR(ExpectWord("comparison_direction"));
  for (ComparisonDirection d : kAll) {
    if (IsWord(ComparisonName(d))) {
      Advance();
      PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close the comparison direction"));
      return d;
    }
  }
  return Expected("EQ, NE, LT, LE, GT or GE");
}

absl::Status Parser::ParsePrecision(bool bare) {
  if (!bare) {
    if (!IsDialectAttr("")) return Expected("#stablehlo<precision ...>");
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after #stablehlo"));
    PCP_RETURN_IF_ERROR(ExpectWord("precision"));
  }
  if (!IsWord("DEFAULT") && !IsWord("HIGH") && !IsWord("HIGHEST")) return Expected("DEFAULT, HIGH or HIGHEST");
  Advance();
  if (!bare) PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close the precision"));
  return absl::OkStatus();
}

absl::Status Parser::ParseComparisonType(bool bare, OpAttributes* parsed) {
  if (!bare) {
    if (!IsDialectAttr("")) return Expected("#stablehlo<comparison_type ...>");
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after #stablehlo"));
    PCP_RETURN_IF_ERROR(ExpectWord("comparison_type"));
  }
  for (absl::string_view t : {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"}) {
    if (IsWord(t)) {
      parsed->compare_type = std::string(t);
      parsed->compare_type_offset = cur_.offset;
      Advance();
      if (!bare) PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close the comparison type"));
      return absl::OkStatus();
    }
  }
  return Expected("a comparison type (FLOAT, SIGNED, UNSIGNED, NOTYPE or TOTALORDER)");
}

absl::StatusOr<Tensor> Parser::ParseConstantValue(TensorType* type) {
  if (!IsWord("dense_resource")) return ParseDenseElements(type);
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after 'dense_resource'"));
  PendingResource pending;
  pending.offset = cur_.offset;
  if (Is(TokenKind::kBareId)) {
    pending.key = std::string(cur_.text);
  } else if (Is(TokenKind::kString)) {
    pending.key = DecodeString(cur_);
  } else {
    return Expected("a resource name");
  }
  if (pending.key == "__elided__") {
    return ErrorAt(cur_.offset,
                   "dense_resource<__elided__>: the exporter left this constant's data out; export "
                   "again with large elements kept (e.g. without --mlir-elide-elementsattrs-if-larger)");
  }
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "to close 'dense_resource<'"));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kColon, "and a type after the resource"));
  size_t type_offset = cur_.offset;
  PCP_ASSIGN_OR_RETURN(*type, ParseTensorType(&pending.stored));
  if (type->num_elements() > kMaxConstantBytes / SizeOf(type->dtype)) {
    return ErrorAt(type_offset, absl::StrCat("literal of ", type->ToString(), " exceeds the limit of ",
                                             kMaxConstantBytes, " bytes"));
  }
  pending.function = function_index_;
  pending.type = *type;
  pending_resources_.push_back(std::move(pending));
  return Tensor(type->dtype, type->shape);
}

absl::StatusOr<StructAttr> Parser::ParseStablehloStruct(absl::string_view name) {
  StructAttr attr;
  attr.offset = cur_.offset;
  std::string full = absl::StrCat("#stablehlo.", name);
  if (!IsDialectAttr(absl::StrCat(".", name))) return Expected(absl::StrCat(full, "<...>"));  // or #mhlo.NAME
  Advance();
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kLess, absl::StrCat("after ", full)));
  if (ConsumeIf(TokenKind::kGreater)) return attr;
  do {
    StructField field;
    field.offset = cur_.offset;
    if (!Is(TokenKind::kBareId)) return Expected(absl::StrCat("a field name of ", full));
    field.name = std::string(cur_.text);
    for (const StructField& f : attr.fields) {
      if (f.name == field.name) return ErrorAt(field.offset, absl::StrCat("field '", field.name, "' appears twice"));
    }
    Advance();
    PCP_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after the field name"));
    if (ConsumeIf(TokenKind::kLSquare)) {
      field.is_list = true;
      if (!ConsumeIf(TokenKind::kRSquare)) {
        do {
          PCP_ASSIGN_OR_RETURN(int64_t v, ParseI64());
          field.values.push_back(v);
        } while (ConsumeIf(TokenKind::kComma));
        PCP_RETURN_IF_ERROR(Expect(TokenKind::kRSquare, "to close the list"));
      }
    } else {
      PCP_ASSIGN_OR_RETURN(int64_t v, ParseI64());
      field.values.push_back(v);
    }
    attr.fields.push_back(std::move(field));
  } while (ConsumeIf(TokenKind::kComma));
  PCP_RETURN_IF_ERROR(Expect(TokenKind::kGreater, absl::StrCat("to close ", full, "<")));
  return attr;
}

}  // namespace pcp::text_internal
