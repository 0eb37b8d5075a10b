#include "lowering.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dot_kernel.h"
#include "expression_fusion.h"
#include "expression_ops.h"
#include "fused_kernel.h"
#include "fusion.h"
#include "movement_kernels.h"
#include "pcp/base/status_macros.h"

namespace pcp::cpu {
namespace {

Tensor MakeIota(const TensorType& type, int64_t dimension) {
  Tensor t(type.dtype, type.shape);
  const std::vector<int64_t> strides = RowMajorStrides(type.shape);
  const int64_t n = t.num_elements();
  const int64_t size = type.shape[dimension], stride = strides[dimension];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = (i / stride) % size;
    switch (type.dtype) {
      case DType::kF32: t.data<float>()[i] = static_cast<float>(v); break;
      case DType::kI32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
      default: t.data<int64_t>()[i] = v; break;
    }
  }
  return t;
}

class Lowerer {
 public:
  Lowerer(const Function& f, LoweringOptions options)
      : f_(f), options_(options), a_(Analyze(f)), plan_(PlanFusion(f, a_, {.row_values = options.row_values})) {}

  absl::StatusOr<Program> Run() {
    access_.resize(static_cast<size_t>(f_.num_values()));
    for (size_t i = 0; i < f_.params.size(); ++i) {
      const TensorType& t = f_.type(f_.params[i]);
      Storage s{StorageKind::kParam, static_cast<int>(i), t.dtype, t.num_elements(),
                t.num_elements() * SizeOf(t.dtype)};
      s.name = f_.param_names[i].empty() ? absl::StrCat("param ", i) : f_.param_names[i];
      const int id = AddStorage(std::move(s));
      p_.param_storage.push_back(id);
      access_[f_.params[i]] = Access{id, Layout::Contiguous(t.shape)};
    }
    for (const std::vector<int>& group : plan_.groups) {
      if (group.size() == 1 && std::count(bias_adds_.begin(), bias_adds_.end(), group.front()) > 0) continue;
      const Instruction& first = f_.instructions[group.front()];
      if (group.size() > 1 || IsElementwise(first.op) || first.op == Op::kReduce) {
        PCP_RETURN_IF_ERROR(LowerFused(group));
      } else {
        PCP_RETURN_IF_ERROR(LowerSingle(group.front()),
                            _ << "instruction " << group.front() << " (" << OpName(first.op) << ")");
      }
    }
    PCP_RETURN_IF_ERROR(LowerResults());
    return Finish();
  }

 private:
  int AddStorage(Storage s) {
    p_.storages.push_back(std::move(s));
    return static_cast<int>(p_.storages.size()) - 1;
  }

  int NewArena(DType dtype, int64_t elements, std::string name, bool temporary = false) {
    Storage s{StorageKind::kArena, -1, dtype, elements, elements * SizeOf(dtype)};
    s.temporary = temporary;
    s.name = std::move(name);
    return AddStorage(std::move(s));
  }

  std::string ValueName(ValueId v) const {
    const int p = a_.producer[v];
    return p < 0 ? absl::StrCat("%", v) : absl::StrCat("%", v, " (", OpName(f_.instructions[p].op), ")");
  }

  void Emit(std::unique_ptr<Kernel> k) { kernels_.push_back(std::move(k)); }

  // The value's access, computing views lazily (which may emit copy kernels).
  absl::StatusOr<Access> GetAccess(ValueId v) {
    if (access_[v]) return *access_[v];
    const int p = a_.producer[v];
    if (p < 0) return absl::InternalError(absl::StrCat("no access for ", ValueName(v)));
    const Instruction& inst = f_.instructions[p];
    const TensorType& t = f_.type(v);
    Access a;
    switch (inst.op) {
      case Op::kConstant:
      case Op::kIota: {
        Tensor value = inst.op == Op::kConstant ? inst.attrs.literal : MakeIota(t, inst.attrs.dimension);
        Storage s{StorageKind::kConstant, static_cast<int>(p_.constants.size()), t.dtype, t.num_elements(),
                  value.byte_size()};
        s.name = ValueName(v);
        p_.constants.push_back(std::move(value));
        a = Access{AddStorage(std::move(s)), Layout::Contiguous(t.shape)};
        break;
      }
      case Op::kReshape: {
        PCP_ASSIGN_OR_RETURN(a, GetAccess(inst.operands[0]));
        if (std::optional<Layout> r = ReshapeLayout(a.layout, t.shape)) a.layout = *std::move(r);
        break;
      }
      case Op::kBroadcastInDim: {
        PCP_ASSIGN_OR_RETURN(a, DimAccess(inst.operands[0]));
        a.layout = BroadcastLayout(a.layout, t.shape, inst.attrs.dims);
        break;
      }
      case Op::kTranspose: {
        PCP_ASSIGN_OR_RETURN(a, DimAccess(inst.operands[0]));
        a.layout = TransposeLayout(a.layout, inst.attrs.dims);
        break;
      }
      case Op::kSlice: {
        PCP_ASSIGN_OR_RETURN(a, DimAccess(inst.operands[0]));
        a.layout = SliceLayout(a.layout, inst.attrs.start, inst.attrs.stride, t.shape);
        break;
      }
      default: return absl::InternalError(absl::StrCat(ValueName(v), " is used before its kernel"));
    }
    access_[v] = a;
    return a;
  }

  // A copy of the value into a new contiguous storage, which later uses share.
  absl::StatusOr<Access> Materialize(ValueId v) {
    PCP_ASSIGN_OR_RETURN(Access a, GetAccess(v));
    const TensorType& t = f_.type(v);
    const int s = NewArena(t.dtype, t.num_elements(), ValueName(v));
    Emit(std::make_unique<CopyKernel>(a, s, SizeOf(t.dtype),
                                      absl::StrCat("copy ", ValueName(v), " ", a.layout.ToString())));
    access_[v] = Access{s, Layout::Contiguous(t.shape)};
    return *access_[v];
  }

  // The access with a layout in the value's own shape.
  absl::StatusOr<Access> DimAccess(ValueId v) {
    PCP_ASSIGN_OR_RETURN(Access a, GetAccess(v));
    const Shape& shape = f_.type(v).shape;
    if (a.layout.shape == shape) return a;
    if (std::optional<Layout> r = ReshapeLayout(a.layout, shape)) return Access{a.storage, *std::move(r)};
    return Materialize(v);
  }

  // A contiguous access (copying the value first if it is a strided view).
  absl::StatusOr<Access> ContiguousAccess(ValueId v) {
    PCP_ASSIGN_OR_RETURN(Access a, GetAccess(v));
    if (!a.layout.IsContiguous()) return Materialize(v);
    return Access{a.storage, Layout::Contiguous(f_.type(v).shape, a.layout.offset)};
  }

  // Whether a value computed in group `g` must be stored for use outside it.
  bool UsedOutside(ValueId v, int g) const {
    if (plan_.recompute[v]) return false;  // its consumers compute it themselves
    if (a_.root_is_result[v]) return true;
    for (int u : a_.root_users[v]) {
      if (plan_.group_of[u] != g) return true;
    }
    return false;
  }

  // Whether broadcast_in_dim instruction b repeats each element of its operand over the
  // trailing `row` elements of its result, in order.
  bool IsRowBroadcast(int b, int64_t row) const { return TrailingBroadcastCount(f_, b) == row; }

  static absl::string_view Short(Op op) { return OpName(op).substr(OpName(op).rfind('.') + 1); }

  using RegFn = std::function<absl::StatusOr<int32_t>(ValueId)>;

  // The loop instruction for elementwise instruction i, its operands resolved by `reg`.
  absl::StatusOr<FusedOp> MakeOp(int i, const RegFn& reg) {
    const Instruction& inst = f_.instructions[i];
    FusedOp op;
    op.instruction = i;
    const DType operand_dtype = f_.type(inst.operands[inst.op == Op::kSelect ? 1 : 0]).dtype;
    op.fn = GetElementwiseFn(inst.op, operand_dtype, f_.type(inst.result).dtype, inst.attrs.comparison);
    if (op.fn == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("cpu backend: ", OpName(inst.op), " on ", MlirName(operand_dtype), " (instruction ", i, ")"));
    }
    for (size_t k = 0; k < inst.operands.size() && k < 3; ++k) {
      PCP_ASSIGN_OR_RETURN(op.src[k], reg(inst.operands[k]));
    }
    return op;
  }

  std::string Describe(int i) const {
    const Instruction& inst = f_.instructions[i];
    std::vector<std::string> operand_ids;
    for (ValueId o : inst.operands) operand_ids.push_back(absl::StrCat(o));
    return absl::StrCat("%", inst.result, "=", Short(inst.op), "(", absl::StrJoin(operand_ids, ","), ")");
  }

  absl::Status LowerFused(const std::vector<int>& members) {
    const int g = plan_.group_of[members.front()];
    const int64_t row = plan_.row_length[g];
    // A row group's index space (its row reductions' input size); its per-row values (row
    // reductions' results and ops on them) are registers of one value per row, expanded over
    // the rows where the ops on whole rows read their broadcasts.
    int64_t row_n = 0;
    for (int m : members) {
      if (row > 0 && f_.instructions[m].op == Op::kReduce)
        row_n = f_.type(f_.instructions[m].operands[0]).num_elements();
    }
    auto per_row = [&](ValueId v) {
      const int64_t c = f_.type(v).num_elements();
      return row > 0 && c != row_n && c * row == row_n;
    };
    std::map<int, int32_t> reg_of;    // value computed in this kernel -> register
    std::map<int, int32_t> expanded;  // row value -> its register repeated over the rows
    std::vector<FusedLoad> loads;
    std::vector<FusedOp> ops;
    std::vector<FusedStore> stores;
    std::optional<ReduceRoot> reduce;
    int32_t num_regs = 0;
    std::vector<std::string> names;
    // An operand: a register of this kernel, another group's value recomputed here (see
    // FusionPlan::recompute; it was not stored), or a load.
    RegFn operand_reg = [&](ValueId o) -> absl::StatusOr<int32_t> {
      // In a row group, the broadcast of a row value over its rows: its register expanded.
      if (const int b = a_.producer[o]; row > 0 && b >= 0 && f_.instructions[b].op == Op::kBroadcastInDim) {
        const ValueId src = a_.root[f_.instructions[b].operands[0]];
        if (auto it = reg_of.find(src); it != reg_of.end() && per_row(src) && IsRowBroadcast(b, row)) {
          if (auto e = expanded.find(src); e != expanded.end()) return e->second;
          FusedOp op;
          op.fn = GetRowExpandFn(SizeOf(f_.type(src).dtype));
          op.instruction = b;
          op.nodes = 0;  // a view
          op.row = row;
          op.src[0] = it->second;
          op.dst = num_regs++;
          ops.push_back(op);
          expanded[src] = op.dst;
          return op.dst;
        }
      }
      const ValueId r = a_.root[o];
      if (auto it = reg_of.find(r); it != reg_of.end()) return it->second;
      const int p = a_.producer[r];
      if (!access_[r] && p >= 0 && plan_.group_of[p] != g && IsElementwise(f_.instructions[p].op)) {
        PCP_ASSIGN_OR_RETURN(FusedOp op, MakeOp(p, operand_reg));
        op.per_row = per_row(r);
        op.dst = num_regs++;
        ops.push_back(op);
        reg_of[r] = op.dst;
        names.push_back(absl::StrCat("(", Describe(p), ")"));
        return op.dst;
      }
      PCP_ASSIGN_OR_RETURN(Access a, GetAccess(o));
      a.layout = Simplify(a.layout);
      for (const FusedLoad& l : loads) {
        if (l.access.storage == a.storage && l.access.layout == a.layout && l.per_row == per_row(o)) return l.reg;
      }
      FusedLoad l;
      l.per_row = per_row(o);
      l.access = std::move(a);
      l.elem_size = SizeOf(f_.type(o).dtype);
      l.reg = num_regs++;
      loads.push_back(std::move(l));
      return loads.back().reg;
    };
    int64_t n = row_n;
    for (int m : members) {
      const Instruction& inst = f_.instructions[m];
      if (inst.op == Op::kReduce && row > 0) {
        // A row reduction inside the block; its result stored one value per row.
        FusedOp op;
        op.instruction = m;
        op.fn = GetRowReduceFn(inst.attrs.reduce_kind);
        op.row = row;
        PCP_ASSIGN_OR_RETURN(op.src[0], operand_reg(inst.operands[0]));
        PCP_ASSIGN_OR_RETURN(op.src[1], operand_reg(inst.operands[1]));
        op.dst = num_regs++;
        reg_of[inst.result] = op.dst;
        ops.push_back(op);
        names.push_back(Describe(m));
        const TensorType& out = f_.type(inst.result);
        n = f_.type(inst.operands[0]).num_elements();
        if (UsedOutside(inst.result, g)) {
          const int st = NewArena(out.dtype, out.num_elements(), ValueName(inst.result));
          stores.push_back(FusedStore{op.dst, st, SizeOf(out.dtype), row});
          access_[inst.result] = Access{st, Layout::Contiguous(out.shape)};
        }
        continue;
      }
      if (inst.op == Op::kReduce) {
        ReduceRoot r;
        PCP_ASSIGN_OR_RETURN(r.reg, operand_reg(inst.operands[0]));
        PCP_ASSIGN_OR_RETURN(r.init, GetAccess(inst.operands[1]));
        const TensorType& in = f_.type(inst.operands[0]);
        const TensorType& out = f_.type(inst.result);
        r.kind = inst.attrs.reduce_kind;
        r.dtype = out.dtype;
        r.input_shape = in.shape;
        r.dims = inst.attrs.dims;
        r.out_storage = NewArena(out.dtype, out.num_elements(), ValueName(inst.result));
        access_[inst.result] = Access{r.out_storage, Layout::Contiguous(out.shape)};
        n = in.num_elements();
        reduce = std::move(r);
        names.push_back(Describe(m));
        continue;
      }
      PCP_ASSIGN_OR_RETURN(FusedOp op, MakeOp(m, operand_reg));
      op.per_row = per_row(inst.result);
      op.dst = num_regs++;
      reg_of[inst.result] = op.dst;
      ops.push_back(op);
      names.push_back(Describe(m));
      const TensorType& t = f_.type(inst.result);
      if (!reduce && row == 0) n = t.num_elements();
      if (UsedOutside(inst.result, g)) {
        const int s = NewArena(t.dtype, t.num_elements(), ValueName(inst.result));
        stores.push_back(FusedStore{op.dst, s, SizeOf(t.dtype), per_row(inst.result) ? row : 0});
        access_[inst.result] = Access{s, Layout::Contiguous(t.shape)};
      }
    }
    if (reduce) n = NumElements(reduce->input_shape);
    // Ops whose results nothing here needs any more (their consumers recompute them).
    std::vector<bool> needed(static_cast<size_t>(num_regs), false);
    for (const FusedStore& st : stores) needed[st.reg] = true;
    if (reduce) needed[reduce->reg] = true;
    std::vector<bool> keep(ops.size(), false);
    for (size_t i = ops.size(); i-- > 0;) {
      if (!needed[ops[i].dst]) continue;
      keep[i] = true;
      for (int32_t src : ops[i].src) {
        if (src >= 0) needed[src] = true;
      }
    }
    std::vector<FusedOp> live_ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (keep[i]) live_ops.push_back(ops[i]);
    }
    ops = std::move(live_ops);
    std::vector<FusedLoad> live_loads;
    for (FusedLoad& l : loads) {
      if (needed[l.reg]) live_loads.push_back(std::move(l));
    }
    loads = std::move(live_loads);
    if (options_.expression_ops) ops = FuseExpressionTrees(std::move(ops), stores, reduce, num_regs, n);
    std::string description =
        absl::StrCat("fused n=", n, row > 0 ? absl::StrCat(" rows of ", row) : "", " [", absl::StrJoin(names, " "),
                     "] ops ", ops.size(), " loads ", loads.size(), " stores ", stores.size());
    Emit(std::make_unique<FusedKernel>(n, std::move(loads), std::move(ops), std::move(stores), std::move(reduce),
                                       num_regs, std::move(description), row));
    if (options_.epilogues) MoveIntoProduct();
    return absl::OkStatus();
  }

  // The loop kernel just emitted becomes the epilogue of the product kernel whose output it
  // reads (DotKernel::SetEpilogue) if that product is at most kMaxEpilogueDistance kernels
  // back and the kernels between write nothing the loop reads (so it may run earlier) and do
  // not read the product's output (so the loop reads it while it is still in cache).
  void MoveIntoProduct() {
    constexpr size_t kMaxEpilogueDistance = 3;
    auto* loop = dynamic_cast<FusedKernel*>(kernels_.back().get());
    if (loop == nullptr || !loop->RunsInBlocks()) return;
    auto contains = [](const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); };
    const size_t j = kernels_.size() - 1;
    for (size_t i = j; i-- > 0 && j - i <= kMaxEpilogueDistance;) {
      auto* dot = dynamic_cast<DotKernel*>(kernels_[i].get());
      if (dot != nullptr && contains(loop->reads, dot->out_storage())) {
        for (size_t b = i + 1; b < j; ++b) {
          if (contains(kernels_[b]->reads, dot->out_storage())) return;
        }
        if (!dot->CanTakeEpilogue(*loop)) return;
        std::unique_ptr<FusedKernel> owned(static_cast<FusedKernel*>(kernels_.back().release()));
        kernels_.pop_back();
        dot->SetEpilogue(std::move(owned));
        return;
      }
      for (int s : kernels_[i]->writes) {
        if (contains(loop->reads, s)) return;  // the loop reads what this kernel computes
      }
    }
  }

  // The op list with trees of f32 arithmetic as expression ops (expression_fusion.h).
  std::vector<FusedOp> FuseExpressionTrees(std::vector<FusedOp> ops, const std::vector<FusedStore>& stores,
                                           const std::optional<ReduceRoot>& reduce, int32_t num_regs, int64_t n) const {
    std::vector<std::string_view> node(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].row > 0) continue;  // a row reduction
      const Instruction& inst = f_.instructions[ops[i].instruction];
      // f32 throughout, but for a select's condition and a compare's result.
      bool f32 = f_.type(inst.result).dtype == (inst.op == Op::kCompare ? DType::kBool : DType::kF32);
      for (size_t k = 0; k < inst.operands.size(); ++k) {
        const bool condition = inst.op == Op::kSelect && k == 0;
        f32 &= f_.type(inst.operands[k]).dtype == (condition ? DType::kBool : DType::kF32);
      }
      if (f32) node[i] = ExpressionNodeName(inst.op, inst.attrs.comparison);
    }
    std::vector<bool> pinned(static_cast<size_t>(num_regs), false);
    for (const FusedStore& st : stores) pinned[st.reg] = true;
    if (reduce) pinned[reduce->reg] = true;
    return FuseExpressions(ops, node, pinned, n);
  }

  // Temporary storages for the operands a dot_general has to pack.
  void AddPacking(DotKernel& k, const std::string& name) {
    for (int o = 0; o < 2; ++o) {
      if (k.pack_bytes(o) > 0) {
        k.set_pack_storage(o, NewArena(DType::kF32, k.pack_bytes(o) / 4, absl::StrCat("pack ", o, " of ", name),
                                       /*temporary=*/true));
      }
    }
    if (k.shared_pack_bytes() > 0) {
      k.set_shared_pack_storage(NewArena(DType::kF32, k.shared_pack_bytes() / 4,
                                         absl::StrCat("packed operand of ", name), /*temporary=*/true));
    }
  }

  // The transpose that is the only use of `v` (and v is not a result), if there is one.
  std::optional<ValueId> SoleTranspose(ValueId v) const {
    if (a_.root_is_result[v] || a_.root_users[v].size() != 1) return std::nullopt;
    const Instruction& user = f_.instructions[a_.root_users[v][0]];
    if (user.op != Op::kTranspose || user.operands[0] != v) return std::nullopt;
    // root_users skips reshapes: make sure v is not also used through one.
    for (const Instruction& inst : f_.instructions) {
      if (inst.op == Op::kReshape && inst.operands[0] == v && a_.live[a_.producer[inst.result]]) return std::nullopt;
    }
    return user.result;
  }

  // A product whose only use is a kernel of its own adding a row vector to it (a linear
  // layer's bias, when nothing elementwise follows to fuse the add into): (add instruction,
  // the other operand).
  std::optional<std::pair<int, ValueId>> SoleBiasAdd(ValueId v) const {
    if (a_.root_is_result[v] || a_.root_users[v].size() != 1) return std::nullopt;
    const int u = a_.root_users[v][0];
    const Instruction& add = f_.instructions[u];
    if (add.op != Op::kAdd || f_.type(add.result).dtype != DType::kF32 || plan_.recompute[add.result]) {
      return std::nullopt;
    }
    const int g = plan_.group_of[u];
    if (g < 0 || plan_.groups[g].size() != 1) return std::nullopt;
    const bool first = a_.root[add.operands[0]] == v, second = a_.root[add.operands[1]] == v;
    if (first == second) return std::nullopt;
    // The bias must already be computed: a parameter or constant, or a kernel's stored output.
    const ValueId bias = add.operands[first ? 1 : 0];
    const int node = a_.node[bias];
    if (node >= 0 && !access_[f_.instructions[node].result]) return std::nullopt;
    return std::make_pair(u, bias);
  }

  // A product kernel with the options' choice of matrix product.
  std::unique_ptr<DotKernel> NewDot(Access lhs, Access rhs, const DotDims& dims, const Layout& out_layout, int out,
                                    std::string description) {
    auto k = std::make_unique<DotKernel>(std::move(lhs), std::move(rhs), dims, out_layout, out, std::move(description));
    if (options_.own_gemm) k->UseOwnGemm();
    return k;
  }

  // Lowers dot_general instruction i with the bias add `u` (see SoleBiasAdd) done by the dot
  // kernel, into storage `out`; false (and nothing emitted but maybe a copy of the bias) if the
  // bias is not a row vector repeated over the product's rows.
  absl::StatusOr<bool> LowerDotWithBias(int i, int u, ValueId bias_value, Access lhs, Access rhs, int out,
                                        const std::string& description) {
    const Instruction& inst = f_.instructions[i];
    const Instruction& add = f_.instructions[u];
    const TensorType& t = f_.type(add.result);
    PCP_ASSIGN_OR_RETURN(Access bias, GetAccess(bias_value));
    const Layout row = Simplify(bias.layout);
    auto k =
        NewDot(lhs, rhs, inst.attrs.dot, Layout::Contiguous(f_.type(inst.result).shape), out, description + " + bias");
    const int64_t n = t.shape.empty() ? 1 : t.shape.back();
    const bool repeated_row = (row.shape == Shape{t.num_elements() / std::max<int64_t>(n, 1), n} &&
                               row.strides == std::vector<int64_t>{0, 1}) ||
                              (row.shape == Shape{t.num_elements()} && row.strides == std::vector<int64_t>{1});
    if (!k->CanAddBias() || !repeated_row || row.shape.back() != k->n()) return false;
    k->AddBias(bias.storage, row.offset);
    AddPacking(*k, ValueName(inst.result));
    Emit(std::move(k));
    access_[add.result] = Access{out, Layout::Contiguous(t.shape)};
    bias_adds_.push_back(u);
    return true;
  }

  absl::Status LowerSingle(int i) {
    const Instruction& inst = f_.instructions[i];
    const TensorType& t = f_.type(inst.result);
    const std::string name = ValueName(inst.result);
    switch (inst.op) {
      case Op::kDotGeneral: {
        PCP_ASSIGN_OR_RETURN(Access lhs, DimAccess(inst.operands[0]));
        PCP_ASSIGN_OR_RETURN(Access rhs, DimAccess(inst.operands[1]));
        const int out = NewArena(t.dtype, t.num_elements(), name);
        const std::string description =
            absl::StrCat("dot ", f_.type(inst.operands[0]).ToString(), " ", lhs.layout.ToString(), " x ",
                         f_.type(inst.operands[1]).ToString(), " ", rhs.layout.ToString());
        if (std::optional<std::pair<int, ValueId>> bias_add = SoleBiasAdd(inst.result)) {
          PCP_ASSIGN_OR_RETURN(bool done,
                               LowerDotWithBias(i, bias_add->first, bias_add->second, lhs, rhs, out, description));
          if (done) return absl::OkStatus();
        }
        // A product used only by one transpose is written in the transposed order, so that
        // the transpose (e.g. attention heads back to [B, T, H, D]) becomes free.
        if (std::optional<ValueId> tr = SoleTranspose(inst.result)) {
          const Instruction& tinst = f_.instructions[a_.producer[*tr]];
          const Layout transposed = Layout::Contiguous(f_.type(*tr).shape);
          Layout layout{0, t.shape, std::vector<int64_t>(t.shape.size(), 0)};
          for (size_t d = 0; d < tinst.attrs.dims.size(); ++d)
            layout.strides[tinst.attrs.dims[d]] = transposed.strides[d];
          auto k = NewDot(lhs, rhs, inst.attrs.dot, layout, out, description + " (transposed)");
          if (k->output_ok()) {
            AddPacking(*k, name);
            Emit(std::move(k));
            access_[inst.result] = Access{out, layout};
            access_[*tr] = Access{out, transposed};
            return absl::OkStatus();
          }
        }
        auto k = NewDot(lhs, rhs, inst.attrs.dot, Layout::Contiguous(t.shape), out, description);
        AddPacking(*k, name);
        Emit(std::move(k));
        access_[inst.result] = Access{out, Layout::Contiguous(t.shape)};
        return absl::OkStatus();
      }
      case Op::kGather: {
        const TensorType& table_type = f_.type(inst.operands[0]);
        const TensorType& index_type = f_.type(inst.operands[1]);
        const int64_t rows = table_type.shape[0];
        if (rows == 0 && t.num_elements() > 0) {
          return absl::InvalidArgumentError(absl::StrCat(OpName(inst.op), ": gathers from a table with no rows"));
        }
        PCP_ASSIGN_OR_RETURN(Access table, ContiguousAccess(inst.operands[0]));
        PCP_ASSIGN_OR_RETURN(Access indices, ContiguousAccess(inst.operands[1]));
        const int out = NewArena(t.dtype, t.num_elements(), name);
        Emit(std::make_unique<GatherKernel>(table, rows, rows == 0 ? 0 : table_type.num_elements() / rows,
                                            SizeOf(t.dtype), indices, index_type.dtype, index_type.num_elements(), out,
                                            absl::StrCat("gather ", t.ToString())));
        access_[inst.result] = Access{out, Layout::Contiguous(t.shape)};
        return absl::OkStatus();
      }
      case Op::kScatter: {
        const TensorType& index_type = f_.type(inst.operands[1]);
        const int64_t rows = t.shape[0];
        PCP_ASSIGN_OR_RETURN(Access operand, GetAccess(inst.operands[0]));
        PCP_ASSIGN_OR_RETURN(Access indices, ContiguousAccess(inst.operands[1]));
        PCP_ASSIGN_OR_RETURN(Access updates, ContiguousAccess(inst.operands[2]));
        const int out = NewArena(t.dtype, t.num_elements(), name);
        Emit(std::make_unique<ScatterKernel>(operand, indices, index_type.dtype, updates, t.dtype, rows,
                                             rows == 0 ? 0 : t.num_elements() / rows, index_type.num_elements(), out,
                                             absl::StrCat("scatter-add ", t.ToString())));
        access_[inst.result] = Access{out, Layout::Contiguous(t.shape)};
        return absl::OkStatus();
      }
      case Op::kConcatenate: {
        std::vector<Access> operands;
        for (ValueId o : inst.operands) {
          PCP_ASSIGN_OR_RETURN(Access a, DimAccess(o));
          operands.push_back(std::move(a));
        }
        const int out = NewArena(t.dtype, t.num_elements(), name);
        Emit(std::make_unique<ConcatenateKernel>(std::move(operands), inst.attrs.dimension, t.shape, out,
                                                 SizeOf(t.dtype), absl::StrCat("concatenate ", t.ToString())));
        access_[inst.result] = Access{out, Layout::Contiguous(t.shape)};
        return absl::OkStatus();
      }
      default: return absl::InternalError(absl::StrCat("no kernel for ", OpName(inst.op)));
    }
  }

  // Gives every result a distinct arena storage that it fills completely.
  absl::Status LowerResults() {
    std::vector<bool> claimed;
    for (size_t i = 0; i < f_.results.size(); ++i) {
      const ValueId v = f_.results[i];
      PCP_ASSIGN_OR_RETURN(Access a, GetAccess(v));  // may add storages
      claimed.resize(p_.storages.size(), false);
      const Storage s = p_.storages[a.storage];  // a copy: NewArena below may move it
      const TensorType& t = f_.type(v);
      if (s.kind == StorageKind::kArena && !s.temporary && !claimed[a.storage] && a.layout.offset == 0 &&
          a.layout.IsContiguous() && s.elements == t.num_elements()) {
        claimed[a.storage] = true;
        p_.result_storage.push_back(a.storage);
        continue;
      }
      // A copy: of a parameter, at the start (before anything may overwrite it in place),
      // otherwise after everything else.
      const std::string name = f_.result_names[i].empty() ? absl::StrCat("result ", i) : f_.result_names[i];
      const int out = NewArena(t.dtype, t.num_elements(), name);
      claimed.resize(p_.storages.size(), false);
      claimed[out] = true;
      auto k = std::make_unique<CopyKernel>(a, out, SizeOf(t.dtype), absl::StrCat("copy to ", name));
      if (s.kind == StorageKind::kParam) {
        front_.push_back(std::move(k));
      } else {
        Emit(std::move(k));
      }
      p_.result_storage.push_back(out);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Program> Finish() {
    for (auto& k : front_) p_.kernels.push_back(std::move(k));
    for (auto& k : kernels_) p_.kernels.push_back(std::move(k));
    CpuExecutableStats& st = p_.stats;
    st.num_instructions = static_cast<int>(f_.instructions.size());
    st.num_kernels = static_cast<int>(p_.kernels.size());
    for (size_t k = 0; k < p_.kernels.size(); ++k) {
      Kernel& kernel = *p_.kernels[k];
      p_.scratch_bytes = std::max(p_.scratch_bytes, kernel.scratch_bytes());
      for (int s : kernel.writes) {
        Storage& storage = p_.storages[s];
        if (storage.kind != StorageKind::kArena || storage.producer >= 0) {
          return absl::InternalError(
              absl::StrCat("storage ", storage.name, " is written twice or is not in the arena"));
        }
        storage.producer = static_cast<int>(k);
      }
      switch (kernel.kind) {
        case Kernel::Kind::kFused:
          ++st.num_fused_kernels;
          st.num_fused_instructions += kernel.num_instructions;
          break;
        case Kernel::Kind::kDot: ++st.num_dot_kernels; break;
        case Kernel::Kind::kCopy: ++st.num_copy_kernels; break;
        default: break;
      }
    }
    for (const Storage& s : p_.storages) {
      if (s.kind == StorageKind::kConstant) st.constant_bytes += s.bytes;
      if (s.kind == StorageKind::kArena) {
        if (s.producer < 0) return absl::InternalError(absl::StrCat("storage ", s.name, " is never written"));
        st.intermediate_bytes += s.bytes;
      }
    }
    return std::move(p_);
  }

  const Function& f_;
  LoweringOptions options_;
  FunctionAnalysis a_;
  FusionPlan plan_;
  Program p_;
  std::vector<std::optional<Access>> access_;
  std::vector<std::unique_ptr<Kernel>> kernels_, front_;
  std::vector<int> bias_adds_;  // add instructions done by their product's kernel
};

}  // namespace

absl::StatusOr<Program> Lower(const Function& function, LoweringOptions options) {
  return Lowerer(function, options).Run();
}

}  // namespace pcp::cpu
