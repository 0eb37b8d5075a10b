#include "pcp/autodiff/remat.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"

namespace pcp {
namespace {

bool IsView(Op op) {
  return op == Op::kBroadcastInDim || op == Op::kReshape || op == Op::kTranspose || op == Op::kSlice;
}

bool IsSource(Op op) { return op == Op::kConstant || op == Op::kIota; }

int64_t Bytes(const TensorType& t) { return t.num_elements() * SizeOf(t.dtype); }

// Program-order lifetimes and uses of the function's tensors (see remat.h for the model).
struct Lifetimes {
  std::vector<int> producer;           // per value: its instruction, -1 for parameters
  std::vector<ValueId> base;           // per value: the tensor it reads through views (kNoValue: a source)
  std::vector<int> def;                // per value: its instruction's position, -1 for parameters
  std::vector<int> last_use;           // per tensor: the last instruction (not a view) reading it, n for results
  std::vector<std::vector<int>> uses;  // per tensor: those instructions, in order (a result's end: n)
  std::vector<bool> param;             // per value
  std::vector<int64_t> defined;        // per position p: bytes of the tensors defined before p by
                                       // instructions other than elementwise ones
  int64_t peak_bytes = 0;
};

Lifetimes Analyze(const Function& f) {
  Lifetimes l;
  const size_t nv = static_cast<size_t>(f.num_values());
  const int n = static_cast<int>(f.instructions.size());
  l.producer.assign(nv, -1);
  l.base.assign(nv, kNoValue);
  l.def.assign(nv, -1);
  l.last_use.assign(nv, -1);
  l.uses.resize(nv);
  l.param.assign(nv, false);
  l.defined.assign(static_cast<size_t>(n) + 1, 0);
  for (ValueId p : f.params) {
    l.param[p] = true;
    l.base[p] = p;
  }
  for (int i = 0; i < n; ++i) {
    const Instruction& inst = f.instructions[i];
    const ValueId r = inst.result;
    l.producer[r] = i;
    l.def[r] = i;
    l.defined[i + 1] = l.defined[i];
    if (IsSource(inst.op)) {
      l.base[r] = kNoValue;
    } else if (IsView(inst.op)) {
      l.base[r] = l.base[inst.operands[0]];
    } else {
      l.base[r] = r;
      if (!IsElementwise(inst.op)) l.defined[i + 1] += Bytes(f.type(r));
      for (ValueId o : inst.operands) {
        const ValueId b = l.base[o];
        if (b == kNoValue || l.last_use[b] == i) continue;
        l.last_use[b] = i;
        l.uses[b].push_back(i);
      }
    }
  }
  for (ValueId r : f.results) {
    const ValueId b = l.base[r];
    if (b == kNoValue || l.last_use[b] == n) continue;
    l.last_use[b] = n;
    l.uses[b].push_back(n);
  }
  std::vector<int64_t> delta(static_cast<size_t>(n) + 2, 0);
  for (int i = 0; i < n; ++i) {
    const ValueId r = f.instructions[i].result;
    if (l.base[r] != r) continue;
    const int end = std::max(i, l.last_use[r]);
    delta[i] += Bytes(f.type(r));
    delta[static_cast<size_t>(end) + 1] -= Bytes(f.type(r));
  }
  int64_t live = 0;
  for (int i = 0; i <= n; ++i) {
    live += delta[i];
    l.peak_bytes = std::max(l.peak_bytes, live);
  }
  return l;
}

class Rematerializer {
 public:
  Rematerializer(Function& f, const RematOptions& options) : f_(f), options_(options) {}

  // Returns the number of tensors rematerialised; stats->instructions_added grows.
  int Run(RematStats* stats) {
    l_ = Analyze(f_);
    std::unordered_set<ValueId> done;
    int count = 0;
    for (;;) {
      // The tensor with the earliest far use first, so that copies made for it can serve the
      // later ones.
      far_.assign(static_cast<size_t>(f_.num_values()), kNone);
      ValueId next = kNoValue;
      for (const Instruction& inst : f_.instructions) {
        const ValueId r = inst.result;
        if (!IsElementwise(inst.op) || l_.last_use[r] >= static_cast<int>(f_.instructions.size())) continue;
        far_[r] = FarUse(r);
        if (far_[r] != kNone && done.count(r) == 0 && (next == kNoValue || far_[r] < far_[next])) next = r;
      }
      if (next == kNoValue) break;
      done.insert(next);
      const int added = Rematerialize(next, far_[next]);
      if (added >= 0) {
        ++count;
        stats->instructions_added += added;
        l_ = Analyze(f_);
      }
    }
    return count;
  }

 private:
  static constexpr int kNone = std::numeric_limits<int>::max();

  // The first use of tensor s at least options_.min_reuse_bytes after its previous use (or its
  // definition), or kNone.
  int FarUse(ValueId s) const {
    int previous = l_.def[s];
    for (int u : l_.uses[s]) {
      if (l_.defined[u] - l_.defined[previous + 1] >= options_.min_reuse_bytes) return u;
      previous = u;
    }
    return kNone;
  }

  struct Cone {
    std::vector<ValueId> nodes;            // values to copy, operands first
    std::unordered_set<ValueId> in_nodes;  // the same, as a set
    std::unordered_set<ValueId> leaves;    // big leaves counted
    std::unordered_set<ValueId> extended;  // leaves not alive at p_ (kept longer now)
    int64_t extended_bytes = 0;
    int64_t freed_bytes = 0;  // values alive at p_ followed to their inputs (recomputed too)
    int ops = 0;
  };

  bool IsBig(ValueId leaf) const {
    const ValueId b = l_.base[leaf];
    return b != kNoValue && f_.type(b).num_elements() * 16 > root_elements_;
  }

  bool Leaf(ValueId o, Cone& cone) const {
    if (IsBig(o)) cone.leaves.insert(l_.base[o]);
    return static_cast<int>(cone.leaves.size()) <= options_.max_big_leaves;
  }

  // Whether `o` can be had at position p_: as it is, or by copying (part of) its cone.
  // Values alive there anyway are leaves, unless they have far uses themselves (they will be
  // recomputed then: followed to their inputs where possible). A leaf not alive there is kept
  // longer now; that is allowed while such leaves total fewer bytes than the tensors the copy
  // frees (see Rematerialize).
  bool Add(ValueId o, Cone& cone) const {
    if (cone.in_nodes.count(o) > 0) return true;
    if (ValidCopy(o) != kNoValue) return Leaf(o, cone);
    const ValueId b = l_.base[o];
    if (b == kNoValue) return true;  // a constant or iota, or a view of one
    if (l_.param[b]) return Leaf(o, cone);
    const bool alive = b != s_ && l_.last_use[b] >= p_;
    const int producer = l_.producer[o];
    const bool expandable =
        producer >= 0 && (IsElementwise(f_.instructions[producer].op) || IsView(f_.instructions[producer].op));
    if ((!alive || far_[b] != kNone) && expandable) {
      Cone saved = cone;
      if (alive && b == o && cone.in_nodes.count(b) == 0) cone.freed_bytes += Bytes(f_.type(b));
      // Not alive: recomputed from its own inputs only if that keeps fewer bytes longer (net
      // of the values it frees) than keeping it (h = dot + bias is kept, not the product).
      if (Expand(o, cone) &&
          (alive || cone.extended.count(b) > 0 ||
           (cone.extended_bytes - saved.extended_bytes) - (cone.freed_bytes - saved.freed_bytes) < Bytes(f_.type(b)))) {
        return true;
      }
      cone = std::move(saved);
    }
    if (!alive && cone.extended.insert(b).second) cone.extended_bytes += Bytes(f_.type(b));
    return Leaf(o, cone);
  }

  // The copy of `v` made earlier that position p_ can read, or kNoValue.
  ValueId ValidCopy(ValueId v) const {
    auto it = copy_.find(v);
    return it != copy_.end() && l_.def[it->second] < p_ ? it->second : kNoValue;
  }

  bool Expand(ValueId o, Cone& cone) const {
    const Instruction& inst = f_.instructions[l_.producer[o]];
    if (IsElementwise(inst.op) && ++cone.ops > options_.max_ops) return false;
    for (ValueId x : inst.operands) {
      if (!Add(x, cone)) return false;
    }
    cone.nodes.push_back(o);
    cone.in_nodes.insert(o);
    return true;
  }

  // Recomputes tensor s right before position p for its uses from p on. Returns the
  // instructions added, or -1 if s cannot be recomputed there.
  int Rematerialize(ValueId s, int p) {
    s_ = s;
    p_ = p;
    root_elements_ = f_.type(s).num_elements();
    const int n = static_cast<int>(f_.instructions.size());
    std::vector<std::pair<int, size_t>> edges;  // (instruction, operand index)
    Cone cone;
    for (int i = p; i < n; ++i) {
      const std::vector<ValueId>& ops = f_.instructions[i].operands;
      for (size_t k = 0; k < ops.size(); ++k) {
        if (l_.base[ops[k]] != s || l_.def[ops[k]] >= p) continue;
        edges.emplace_back(i, k);
        // The root itself is never a leaf: it is what is no longer kept (unless a copy made
        // for an earlier value serves).
        if (cone.in_nodes.count(ops[k]) == 0 && ValidCopy(ops[k]) == kNoValue && !Expand(ops[k], cone)) return -1;
      }
    }
    // Fewer bytes kept: s, and the values recomputed along with it, against the leaves that
    // live longer now.
    if (cone.extended_bytes >= Bytes(f_.type(s)) + cone.freed_bytes) return -1;
    std::vector<Instruction> copies;
    std::unordered_map<ValueId, ValueId> map;
    auto mapped = [&](ValueId v) {
      if (auto it = map.find(v); it != map.end()) return it->second;
      const ValueId c = ValidCopy(v);
      return c != kNoValue ? c : v;
    };
    for (ValueId v : cone.nodes) {
      const Instruction& inst = f_.instructions[l_.producer[v]];
      Instruction c{inst.op, {}, static_cast<ValueId>(f_.value_types.size()), inst.attrs};
      for (ValueId o : inst.operands) c.operands.push_back(mapped(o));
      f_.value_types.push_back(f_.type(v));
      map[v] = c.result;
      copies.push_back(std::move(c));
    }
    for (const auto& [v, c] : map) copy_[v] = c;
    for (const auto& [i, k] : edges) {
      ValueId& o = f_.instructions[i].operands[k];
      o = mapped(o);
    }
    const int added = static_cast<int>(copies.size());
    f_.instructions.insert(f_.instructions.begin() + p, std::make_move_iterator(copies.begin()),
                           std::make_move_iterator(copies.end()));
    return added;
  }

  Function& f_;
  const RematOptions& options_;
  Lifetimes l_;
  std::vector<int> far_;                       // per tensor: FarUse (elementwise ones), else kNone
  std::unordered_map<ValueId, ValueId> copy_;  // value -> its latest copy
  // The tensor being rematerialised, where, and its element count.
  ValueId s_ = kNoValue;
  int p_ = 0;
  int64_t root_elements_ = 1;
};

}  // namespace

int64_t PeakLiveBytes(const Function& function) { return Analyze(function).peak_bytes; }

absl::StatusOr<RematStats> Rematerialize(Function& f, const RematOptions& options) {
  PCP_RETURN_IF_ERROR(Verify(f), _ << "Rematerialize");
  RematStats stats;
  stats.peak_before = PeakLiveBytes(f);
  Function original = f;
  stats.values = Rematerializer(f, options).Run(&stats);
  stats.peak_after = PeakLiveBytes(f);
  if (stats.peak_after > stats.peak_before) {
    // Copies of intermediate values can outlive their originals; never worse than before.
    f = std::move(original);
    stats = RematStats{.peak_before = stats.peak_before, .peak_after = stats.peak_before};
  }
  PCP_RETURN_IF_ERROR(EliminateDeadCode(f));  // originals whose every use now reads a copy
  CompactValues(f);
  PCP_RETURN_IF_ERROR(Verify(f), _ << "after Rematerialize");
  return stats;
}

}  // namespace pcp
