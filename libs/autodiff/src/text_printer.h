// Private to the printers (text.h): text_printer.cc prints MLIR's generic form and
// text_pretty_printer.cc the pretty (custom) form; they share literals, type lists, value
// names and, for ops without a pretty form (gather, scatter), the generic instruction line.
//
//   ValueNames names(f);                     // %arg0, ..., %0, %1, ...
//   PrintGenericInstruction(f, inst, names, &out);
#ifndef PCP_AUTODIFF_SRC_TEXT_PRINTER_H_
#define PCP_AUTODIFF_SRC_TEXT_PRINTER_H_

#include <string>
#include <vector>

#include "pcp/autodiff/ir.h"

namespace pcp::text_internal {

// The names MLIR's printer gives a function's values: %argI for parameter I, %N for the
// result of instruction N ("%<invalidV>" for values of a malformed function).
struct ValueNames {
  explicit ValueNames(const Function& f);
  std::string Name(ValueId v) const;
  std::string Operands(const std::vector<ValueId>& values) const;  // "%a, %b"
  std::vector<std::string> names;
};

// dense<splat> when every element is the same, else the raw bytes in hex (i1 bit-packed, as
// MLIR stores it), which is exact and compact; dense<> for no elements. Includes " : type".
std::string DenseLiteral(const Tensor& t);
// "[0, 1]".
std::string IntList(const std::vector<int64_t>& v);
// "(tensor<2xf32>, tensor<i32>)".
std::string TypeList(const Function& f, const std::vector<ValueId>& values);
std::string TypeOf(const Function& f, ValueId v);
bool HasNames(const std::vector<std::string>& names);
// `    %N = "op"(...) ({region}) {attrs} : (...) -> ...` and a newline.
void PrintGenericInstruction(const Function& f, const Instruction& inst, const ValueNames& names, std::string* out);
// The pretty form of a module holding `functions`.
std::string PrintPrettyFunctions(const std::vector<const Function*>& functions);

}  // namespace pcp::text_internal

#endif  // PCP_AUTODIFF_SRC_TEXT_PRINTER_H_
