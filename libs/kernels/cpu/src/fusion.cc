#include "fusion.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>

#include "fused_kernel.h"

namespace pcp::cpu {

bool IsKernelOp(Op op) {
  switch (GetOpCategory(op)) {
    case OpCategory::kSource: return false;
    case OpCategory::kLayout: return op == Op::kConcatenate;
    default: return true;
  }
}

FunctionAnalysis Analyze(const Function& f) {
  FunctionAnalysis a;
  const size_t nv = static_cast<size_t>(f.num_values());
  a.producer.assign(nv, -1);
  a.root.resize(nv);
  a.node.assign(nv, -1);
  a.root_users.resize(nv);
  a.root_is_result.assign(nv, false);
  a.live.assign(f.instructions.size(), false);
  for (size_t v = 0; v < nv; ++v) a.root[v] = static_cast<ValueId>(v);
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    a.producer[inst.result] = static_cast<int>(i);
    if (inst.op == Op::kReshape) a.root[inst.result] = a.root[inst.operands[0]];
    if (IsKernelOp(inst.op)) {
      a.node[inst.result] = static_cast<int>(i);
    } else if (!inst.operands.empty()) {
      a.node[inst.result] = a.node[inst.operands[0]];
    }
  }
  // Liveness: walk back from the results.
  std::vector<bool> needed(nv, false);
  for (ValueId r : f.results) needed[r] = true;
  for (size_t i = f.instructions.size(); i-- > 0;) {
    const Instruction& inst = f.instructions[i];
    if (!needed[inst.result]) continue;
    a.live[i] = true;
    for (ValueId o : inst.operands) needed[o] = true;
  }
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    if (!a.live[i] || inst.op == Op::kReshape) continue;
    for (ValueId o : inst.operands) {
      std::vector<int>& users = a.root_users[a.root[o]];
      if (users.empty() || users.back() != static_cast<int>(i)) users.push_back(static_cast<int>(i));
    }
  }
  for (ValueId r : f.results) a.root_is_result[a.root[r]] = true;
  return a;
}

namespace {

class Fuser {
 public:
  Fuser(const Function& f, const FunctionAnalysis& a, FusionOptions options) : f_(f), a_(a), options_(options) {
    const size_t n = f.instructions.size();
    parent_.resize(n);
    for (size_t i = 0; i < n; ++i) parent_[i] = static_cast<int>(i);
    members_.resize(n);
    min_pos_.resize(n);
    has_reduce_.assign(n, false);
    row_len_.assign(n, 0);
    reduce_len_.assign(n, 0);
    reduce_n_.assign(n, 0);
    sizes_.resize(n);
    stamp_.assign(n, 0);
    seen_down_.assign(n, 0);
    readers_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (!a.live[i] || !IsKernelOp(f.instructions[i].op)) continue;
      for (ValueId o : f.instructions[i].operands) {
        const int node = a.node[o];
        if (node < 0) continue;
        std::vector<int>& r = readers_[static_cast<size_t>(node)];
        if (r.empty() || r.back() != static_cast<int>(i)) r.push_back(static_cast<int>(i));
      }
    }
    FindTwins();
  }

  FusionPlan Run() {
    const int n = static_cast<int>(f_.instructions.size());
    for (int i = 0; i < n; ++i) {
      const Instruction& inst = f_.instructions[i];
      if (!a_.live[i] || !IsKernelOp(inst.op)) continue;
      current_ = i;
      members_[i] = {i};
      min_pos_[i] = i;
      has_reduce_[i] = inst.op == Op::kReduce;
      sizes_[i] = {Size(i)};
      if (inst.op == Op::kReduce) {
        reduce_len_[i] = RowLength(i) > 0 ? RowLength(i) : -1;
        const int64_t in = f_.type(inst.operands[0]).num_elements();
        if (RowLength(i) > 0) reduce_n_[i] = in;
        if (in != Size(i)) sizes_[i].push_back(in);
      }
      if (IsElementwise(inst.op)) {
        for (ValueId o : inst.operands) {
          const int p = FusableProducer(o);
          if (p >= 0) TryMerge(Find(p), Find(i));
        }
        // A per-row op on a row value (a row reduction's result, or a per-row op on one, such
        // as LayerNorm's mean, variance and rstd): joins its row group.
        for (ValueId o : inst.operands) {
          const int p = a_.producer[a_.root[o]];
          if (!options_.row_values || p < 0 || !a_.live[p] || Size(p) != Size(i)) continue;
          if (const int64_t l = RowValueLength(p); l > 0) TryMerge(Find(p), Find(i), l);
        }
        // A row value broadcast back over its rows, consumed here: one row group.
        for (ValueId o : inst.operands) {
          int64_t trailing = 0;
          const int r = RowBroadcastSource(o, &trailing);
          if (r >= 0 && RowValueLength(r) == trailing && Size(i) == Size(r) * trailing) {
            TryMerge(Find(r), Find(i), trailing);
          }
        }
      } else if (inst.op == Op::kReduce) {
        const int p = FusableProducer(inst.operands[0]);
        if (p >= 0) TryMerge(Find(p), Find(i));
      }
    }
    return Schedule();
  }

 private:
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }

  // twin_[i]: the first instruction computing the same value as instruction i (same op,
  // attributes, type and operands, up to twins), i itself if none. After CSE the only twins
  // are copies that a rematerialisation pass (pcp/autodiff/remat.h) made on purpose, to be
  // computed again where they are needed late.
  void FindTwins() {
    const size_t n = f_.instructions.size();
    twin_.resize(n);
    has_twin_.assign(n, false);
    std::vector<ValueId> same(static_cast<size_t>(f_.num_values()));
    for (size_t v = 0; v < same.size(); ++v) same[v] = static_cast<ValueId>(v);
    std::unordered_map<uint64_t, std::vector<int>> seen;
    for (size_t i = 0; i < n; ++i) {
      const Instruction& inst = f_.instructions[i];
      twin_[i] = static_cast<int>(i);
      if (!a_.live[i] || inst.op == Op::kConstant) continue;
      uint64_t h = static_cast<uint64_t>(inst.op) * 0x9E3779B97F4A7C15ull;
      for (ValueId o : inst.operands) h = (h ^ static_cast<uint64_t>(same[o])) * 0x100000001B3ull;
      for (int64_t d : f_.type(inst.result).shape) h = (h ^ static_cast<uint64_t>(d)) * 0x100000001B3ull;
      for (int j : seen[h]) {
        const Instruction& e = f_.instructions[j];
        if (e.op != inst.op || e.operands.size() != inst.operands.size() || f_.type(e.result) != f_.type(inst.result) ||
            !AttributesEqual(e.attrs, inst.attrs)) {
          continue;
        }
        bool equal = true;
        for (size_t k = 0; k < e.operands.size(); ++k) equal = equal && same[e.operands[k]] == same[inst.operands[k]];
        if (!equal) continue;
        twin_[i] = j;
        has_twin_[i] = has_twin_[j] = true;
        same[inst.result] = e.result;
        break;
      }
      if (twin_[i] == static_cast<int>(i)) seen[h].push_back(static_cast<int>(i));
    }
  }

  // Whether groups x and y both compute one value (an instruction and its twin): a group
  // never does, so a recomputed copy stays out of the kernel that computes its original.
  bool ShareATwin(int x, int y) const {
    for (int m : members_[y]) {
      if (!has_twin_[m]) continue;
      for (int k : members_[x]) {
        if (has_twin_[k] && twin_[k] == twin_[m]) return true;
      }
    }
    return false;
  }

  int64_t Size(int i) const { return f_.type(f_.instructions[i].result).num_elements(); }

  // The row length if instruction p's result is a row value: a row reduction's result, or an
  // elementwise op's in a row group with one value per row (a per-row op); else -1.
  int64_t RowValueLength(int p) {
    const Instruction& inst = f_.instructions[p];
    if (inst.op == Op::kReduce) return RowLength(p);
    if (!IsElementwise(inst.op) || !options_.row_values) return -1;
    const int g = Find(p);
    return row_len_[g] > 0 && Size(p) * row_len_[g] == reduce_n_[g] ? row_len_[g] : -1;
  }

  // Whether instruction `node` is a row value of a row group of rows of `row` elements and
  // index space `n` (which it may be about to join).
  bool IsRowValueIn(int node, int64_t row, int64_t n) const {
    const Instruction& inst = f_.instructions[node];
    if (inst.op == Op::kReduce && RowLength(node) != row) return false;
    if (inst.op != Op::kReduce && (!IsElementwise(inst.op) || !options_.row_values)) return false;
    return row > 0 && Size(node) * row == n;
  }

  // The elementwise instruction producing `v` (through reshapes only), or -1.
  int FusableProducer(ValueId v) const {
    const int p = a_.producer[a_.root[v]];
    if (p < 0 || !IsElementwise(f_.instructions[p].op)) return -1;
    return p;
  }

  // The row length of a reduction over trailing dimensions of an f32 input, rows of 2 to
  // kMaxRowLength elements (what a row kernel computes inside a block), or -1.
  int64_t RowLength(int r) const {
    const Instruction& inst = f_.instructions[r];
    if (inst.op != Op::kReduce) return -1;
    const TensorType& in = f_.type(inst.operands[0]);
    if (in.dtype != DType::kF32) return -1;
    std::vector<int64_t> dims = inst.attrs.dims;
    std::sort(dims.begin(), dims.end());
    int64_t length = 1;
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] != in.rank() - static_cast<int64_t>(dims.size() - k)) return -1;
      length *= in.shape[dims[k]];
    }
    return length >= 2 && length <= kMaxRowLength ? length : -1;
  }

  // The instruction whose result `v` broadcasts over trailing dimensions (each element
  // repeated `*trailing` times, in order: over the rows of a row group), or -1.
  int RowBroadcastSource(ValueId v, int64_t* trailing_out) const {
    const int b = a_.producer[v];
    if (b < 0 || f_.instructions[b].op != Op::kBroadcastInDim) return -1;
    const int r = a_.producer[a_.root[f_.instructions[b].operands[0]]];
    if (r < 0 || !a_.live[r] || !IsKernelOp(f_.instructions[r].op)) return -1;
    const int64_t trailing = TrailingBroadcastCount(f_, b);
    if (trailing < 0) return -1;
    *trailing_out = trailing;
    return trailing >= 2 ? r : -1;
  }

  // Groups whose kernels must run before group g.
  template <typename Fn>
  void ForEachPred(int g, Fn&& fn) {
    for (int m : members_[g]) {
      for (ValueId o : f_.instructions[m].operands) {
        const int node = a_.node[o];
        if (node < 0) continue;
        const int h = Find(node);
        if (h != g) fn(h);
      }
    }
  }

  // Groups that read a value of group g's (those that must run after it), among the
  // instructions fused so far: later ones are not in any group yet, and no path through them
  // leads back to one that is.
  template <typename Fn>
  void ForEachSucc(int g, Fn&& fn) {
    for (int m : members_[g]) {
      for (int r : readers_[m]) {
        if (r > current_) break;
        const int h = Find(r);
        if (h != g) fn(h);
      }
    }
  }

  // Whether some path leads from group `from` to group `to` through a third group. Searches
  // forward from `from` and backward from `to` in turn, a group at a time, and stops when either
  // side has run out: the cost is about twice the smaller of `from`'s descendants and `to`'s
  // ancestors. (Positions cannot prune it: a merged group can span the program, with an early
  // member feeding a group that lies wholly before `from` and a late one reading `from`;
  // fusion_cycle_test.)
  bool PathViaOthers(int from, int to) {
    ++generation_;
    std::vector<int>& down = search_down_;
    std::vector<int>& up = search_up_;
    down.clear();
    up.clear();
    // A group both sides reach lies on a path from `from` to `to`.
    bool found = false;
    auto reach_down = [&](int h) {
      if (seen_down_[h] == generation_) return;
      seen_down_[h] = generation_;
      found = found || h == to || stamp_[h] == generation_;
      down.push_back(h);
    };
    auto reach_up = [&](int h) {
      if (stamp_[h] == generation_) return;
      stamp_[h] = generation_;
      found = found || h == from || seen_down_[h] == generation_;
      up.push_back(h);
    };
    ForEachSucc(from, [&](int h) {
      if (h != to) reach_down(h);
    });
    ForEachPred(to, [&](int h) {
      if (h != from) reach_up(h);
    });
    while (!found && !down.empty() && !up.empty()) {
      const int d = down.back();
      down.pop_back();
      ForEachSucc(d, reach_down);
      if (found) break;
      const int u = up.back();
      up.pop_back();
      ForEachPred(u, reach_up);
    }
    return found;
  }

  // Whether a member of group g needs a value of group h from memory: the result of h's
  // reduction, or any value of h seen through a view (broadcast, transpose, slice). Inside
  // one loop kernel such a value only exists once the loop is over, so g and h cannot merge.
  // In a row group of rows of `row` elements over an index space of `n`, a row value (a row
  // reduction's result or a per-row op's) is available inside the block, to per-row ops
  // directly and to the others broadcast over its rows.
  bool NeedsStoredValueFrom(int g, int h, int64_t row, int64_t n) {
    for (int m : members_[g]) {
      for (ValueId o : f_.instructions[m].operands) {
        const int node = a_.node[o];
        if (node < 0 || Find(node) != h) continue;
        const Instruction& producer = f_.instructions[node];
        if (row > 0 && IsRowValueIn(node, row, n)) {
          int64_t trailing = 0;
          if (RowBroadcastSource(o, &trailing) == node && trailing == row) continue;
          if (options_.row_values && a_.root[o] == producer.result && IsElementwise(f_.instructions[m].op)) continue;
        }
        if (producer.op == Op::kReduce || a_.root[o] != producer.result) return true;
      }
    }
    return false;
  }

  // `row` > 0: y reads a row value of x's, broadcast over rows of that length or per row.
  bool TryMerge(int x, int y, int64_t row = 0) {
    // The merged group's row length: every row reduction in a row group has the same one,
    // and a row group has no other reduction.
    int64_t rl = row;
    for (int64_t l : {row_len_[x], row_len_[y]}) {
      if (l == 0) continue;
      if (rl != 0 && rl != l) return false;
      rl = l;
    }
    // A row group's index space: its row reductions' input size; every member has that
    // many elements or one per row.
    int64_t n = 0;
    if (rl > 0) {
      for (int64_t c : {reduce_n_[x], reduce_n_[y]}) {
        if (c == 0) continue;
        if (n != 0 && n != c) return false;
        n = c;
      }
      if (n == 0 || n % rl != 0) return false;
      for (int g : {x, y}) {
        for (int64_t c : sizes_[g]) {
          if (c != n && c * rl != n) return false;
        }
      }
    }
    if (x == y) {
      if (rl == row_len_[x]) return true;
      if (reduce_len_[x] != 0 && reduce_len_[x] != rl) return false;
      if (NeedsStoredValueFrom(x, x, rl, n)) return false;
      row_len_[x] = rl;
      return true;
    }
    if (rl > 0) {
      for (int64_t l : {reduce_len_[x], reduce_len_[y]}) {
        if (l != 0 && l != rl) return false;
      }
    } else if (has_reduce_[x] && has_reduce_[y]) {
      return false;
    }
    if (NeedsStoredValueFrom(x, y, rl, n) || NeedsStoredValueFrom(y, x, rl, n)) return false;
    if (ShareATwin(x, y)) return false;
    if (PathViaOthers(x, y) || PathViaOthers(y, x)) return false;
    // Union into the smaller index so representatives stay stable-ish; either works.
    const int keep = std::min(x, y), gone = std::max(x, y);
    parent_[gone] = keep;
    members_[keep].insert(members_[keep].end(), members_[gone].begin(), members_[gone].end());
    std::sort(members_[keep].begin(), members_[keep].end());
    members_[gone].clear();
    min_pos_[keep] = std::min(min_pos_[keep], min_pos_[gone]);
    has_reduce_[keep] = has_reduce_[keep] || has_reduce_[gone];
    row_len_[keep] = rl;
    reduce_n_[keep] = std::max(reduce_n_[keep], reduce_n_[gone]);
    for (int64_t c : sizes_[gone]) {
      if (std::find(sizes_[keep].begin(), sizes_[keep].end(), c) == sizes_[keep].end()) sizes_[keep].push_back(c);
    }
    sizes_[gone].clear();
    const int64_t a = reduce_len_[keep], b = reduce_len_[gone];
    reduce_len_[keep] = a == 0 ? b : (b == 0 || a == b) ? a : -1;
    return true;
  }

  FusionPlan Schedule() {
    const int n = static_cast<int>(f_.instructions.size());
    std::vector<int> reps;
    for (int i = 0; i < n; ++i) {
      if (a_.live[i] && IsKernelOp(f_.instructions[i].op) && Find(i) == i) reps.push_back(i);
    }
    std::vector<int> indegree(static_cast<size_t>(n), 0);
    std::vector<std::vector<int>> succs(static_cast<size_t>(n));
    for (int g : reps) {
      ++generation_;
      ForEachPred(g, [&](int h) {
        if (stamp_[h] == generation_) return;
        stamp_[h] = generation_;
        succs[h].push_back(g);
        ++indegree[g];
      });
    }
    // Kahn's algorithm, earliest first member first.
    using Item = std::pair<int, int>;  // (min position, group)
    std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
    for (int g : reps) {
      if (indegree[g] == 0) ready.push({min_pos_[g], g});
    }
    FusionPlan plan;
    plan.group_of.assign(static_cast<size_t>(n), -1);
    while (!ready.empty()) {
      const int g = ready.top().second;
      ready.pop();
      for (int m : members_[g]) plan.group_of[m] = static_cast<int>(plan.groups.size());
      plan.groups.push_back(members_[g]);
      plan.row_length.push_back(row_len_[g]);
      for (int s : succs[g]) {
        if (--indegree[s] == 0) ready.push({min_pos_[s], s});
      }
    }
    return plan;
  }

  const Function& f_;
  const FunctionAnalysis& a_;
  FusionOptions options_;
  std::vector<int> parent_;
  std::vector<std::vector<int>> members_;
  std::vector<int> min_pos_;  // per group: its first member (Schedule orders by it)
  std::vector<bool> has_reduce_;
  std::vector<int64_t> row_len_;             // per group: > 0 for a row group
  std::vector<int64_t> reduce_len_;          // per group: 0 no reduction, L all row reductions of L, -1 other
  std::vector<int64_t> reduce_n_;            // per group: its row reductions' input size, 0 if none
  std::vector<std::vector<int64_t>> sizes_;  // per group: its members' element counts (and inputs')
  std::vector<uint32_t> stamp_;              // per group: reached by PathViaOthers' backward search
  std::vector<uint32_t> seen_down_;          // per group: reached by its forward search
  uint32_t generation_ = 0;
  std::vector<std::vector<int>> readers_;  // per instruction: live kernel ops reading it, ascending
  int current_ = -1;                       // the instruction Run is fusing
  std::vector<int> search_down_, search_up_;
  std::vector<int> twin_;       // per instruction, see FindTwins
  std::vector<bool> has_twin_;  // per instruction: it has a twin or is one
};

}  // namespace

namespace {

// See FusionPlan::recompute.
class RecomputePlanner {
 public:
  RecomputePlanner(const Function& f, const FunctionAnalysis& a, const FusionPlan& plan) : f_(f), a_(a), plan_(plan) {
    const size_t nv = static_cast<size_t>(f.num_values());
    stored_.assign(nv, false);
    pinned_.assign(nv, false);
    for (size_t i = 0; i < f.instructions.size(); ++i) {
      const ValueId v = f.instructions[i].result;
      if (plan.group_of[i] >= 0 && IsElementwise(f.instructions[i].op) && UsedOutside(v)) stored_[v] = true;
    }
  }

  std::vector<bool> Run() {
    std::vector<bool> recompute(static_cast<size_t>(f_.num_values()), false);
    for (size_t i = 0; i < f_.instructions.size(); ++i) {
      const ValueId v = f_.instructions[i].result;
      if (!stored_[v] || pinned_[v] || !OnlyElementwiseUsersOutside(v)) continue;
      std::vector<ValueId> leaves;
      int ops = 0;
      bool transcendental = false;
      if (!Cone(v, plan_.group_of[i], &ops, &transcendental, &leaves) || ops > kMaxOps) continue;
      int big = 0;
      for (ValueId l : leaves) big += IsSmall(l) ? 0 : 1;
      if (big > 1) continue;
      // exp, erf, ... cost more than reading the value back while it is still in cache:
      // recompute them only for consumers far down the schedule (the backward pass).
      if (transcendental && NearestOutsideUse(v) < kFarGroups) continue;
      recompute[v] = true;
      stored_[v] = false;
      for (ValueId l : leaves) pinned_[a_.root[l]] = true;
    }
    return recompute;
  }

 private:
  static constexpr int kMaxOps = 12;
  static constexpr int kFarGroups = 8;

  // How many kernels after v's own the first kernel that uses v runs.
  int NearestOutsideUse(ValueId v) const {
    const int g = plan_.group_of[a_.producer[v]];
    int nearest = std::numeric_limits<int>::max();
    for (int u : a_.root_users[v]) {
      if (plan_.group_of[u] != g) nearest = std::min(nearest, plan_.group_of[u] - g);
    }
    return nearest;
  }

  bool UsedOutside(ValueId v) const {
    const int g = plan_.group_of[a_.producer[v]];
    if (a_.root_is_result[v]) return true;
    for (int u : a_.root_users[v]) {
      if (plan_.group_of[u] != g) return true;
    }
    return false;
  }

  // Every use outside the value's group is an elementwise op, or the input of a reduce.
  bool OnlyElementwiseUsersOutside(ValueId v) const {
    if (a_.root_is_result[v]) return false;
    const int g = plan_.group_of[a_.producer[v]];
    for (int u : a_.root_users[v]) {
      if (plan_.group_of[u] == g) continue;
      const Instruction& inst = f_.instructions[u];
      if (IsElementwise(inst.op)) continue;
      if (inst.op == Op::kReduce && a_.root[inst.operands[1]] != v) continue;
      return false;
    }
    return true;
  }

  // The ops of group g that computing v takes, stopping at values that are stored or come
  // from elsewhere (the leaves). False if that reaches something other than elementwise ops.
  bool Cone(ValueId v, int g, int* ops, bool* transcendental, std::vector<ValueId>* leaves) const {
    std::vector<ValueId> stack = {v};
    std::vector<ValueId> seen = {v};
    while (!stack.empty()) {
      const ValueId x = stack.back();
      stack.pop_back();
      const Instruction& inst = f_.instructions[a_.producer[x]];
      if (!IsElementwise(inst.op)) return false;
      ++*ops;
      if (IsTranscendental(inst.op)) *transcendental = true;
      for (ValueId o : inst.operands) {
        const ValueId r = a_.root[o];
        const int p = a_.producer[r];
        const bool inside = p >= 0 && plan_.group_of[p] == g && IsElementwise(f_.instructions[p].op) && !stored_[r];
        // Another group's value that is not stored is recomputed itself: not followed here.
        if (!inside && p >= 0 && plan_.group_of[p] >= 0 && IsElementwise(f_.instructions[p].op) && !stored_[r]) {
          return false;
        }
        // A row group's reduction is stored only if something outside reads it.
        if (!inside && p >= 0 && plan_.group_of[p] == g && !IsElementwise(f_.instructions[p].op) && !UsedOutside(r)) {
          return false;
        }
        if (std::find(seen.begin(), seen.end(), inside ? r : o) != seen.end()) continue;
        seen.push_back(inside ? r : o);
        if (inside) {
          stack.push_back(r);
        } else {
          leaves->push_back(o);
        }
      }
    }
    return true;
  }

  // A leaf that costs little to read again: a scalar or a broadcast of something small.
  bool IsSmall(ValueId leaf) const {
    ValueId x = leaf;
    for (;;) {
      if (f_.type(x).num_elements() <= 1) return true;
      const int p = a_.producer[x];
      if (p < 0) return false;
      const Instruction& inst = f_.instructions[p];
      if (inst.op == Op::kBroadcastInDim) {
        return f_.type(inst.operands[0]).num_elements() * 16 <= f_.type(leaf).num_elements();
      }
      if (inst.op != Op::kReshape) return false;
      x = inst.operands[0];
    }
  }

  const Function& f_;
  const FunctionAnalysis& a_;
  const FusionPlan& plan_;
  std::vector<bool> stored_, pinned_;
};

}  // namespace

int64_t TrailingBroadcastCount(const Function& f, int b) {
  const Instruction& bc = f.instructions[b];
  const Shape& in = f.type(bc.operands[0]).shape;
  const Shape& out = f.type(bc.result).shape;
  if (bc.attrs.dims.size() != in.size() || out.size() < in.size()) return -1;
  int64_t trailing = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    if (d < in.size() && (bc.attrs.dims[d] != static_cast<int64_t>(d) || in[d] != out[d])) return -1;
    if (d >= in.size()) trailing *= out[d];
  }
  return trailing;
}

FusionPlan PlanFusion(const Function& function, const FunctionAnalysis& analysis, FusionOptions options) {
  FusionPlan plan = Fuser(function, analysis, options).Run();
  plan.recompute = RecomputePlanner(function, analysis, plan).Run();
  return plan;
}

}  // namespace pcp::cpu
