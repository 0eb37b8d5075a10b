#include "expression_fusion.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "expression_ops.h"

namespace pcp::cpu {
namespace {

constexpr size_t kMaxTreeNodes = 13;  // the root and 12 more: at most 4096 subtrees to try

struct TreeNode {
  int op = -1;
  int parent = -1;               // index in the tree
  int child[kMaxOperands] = {};  // per operand: its node's index in the tree, or -1
};

bool Reports() {
  static const bool on = [] {
    const char* e = std::getenv("PCP_CPU_EXPRESSIONS");
    return e != nullptr && e[0] == '1';
  }();
  return on;
}

// Appends the signature of the subtree of `tree` below node `t` made of the nodes in `mask`,
// collecting its leaves (registers) in order of first appearance.
void Sign(const std::vector<FusedOp>& ops, const std::vector<std::string_view>& node, const std::vector<TreeNode>& tree,
          int t, uint32_t mask, std::string& out, std::vector<int32_t>& leaves) {
  const FusedOp& op = ops[tree[t].op];
  out += node[tree[t].op];
  out += '(';
  for (int k = 0; k < kMaxOperands && op.src[k] >= 0; ++k) {
    if (k > 0) out += ',';
    const int c = tree[t].child[k];
    if (c >= 0 && (mask >> c & 1u) != 0) {
      Sign(ops, node, tree, c, mask, out, leaves);
      continue;
    }
    auto it = std::find(leaves.begin(), leaves.end(), op.src[k]);
    if (it == leaves.end()) it = leaves.insert(leaves.end(), op.src[k]);
    out += std::to_string(it - leaves.begin());
  }
  out += ')';
}

}  // namespace

std::vector<FusedOp> FuseExpressions(const std::vector<FusedOp>& ops, const std::vector<std::string_view>& node,
                                     const std::vector<bool>& pinned, int64_t n) {
  const int num_ops = static_cast<int>(ops.size());
  std::vector<int> producer(pinned.size(), -1), uses(pinned.size(), 0);
  for (int i = 0; i < num_ops; ++i) {
    producer[ops[i].dst] = i;
    for (int32_t s : ops[i].src) {
      if (s >= 0) ++uses[s];
    }
  }
  std::vector<FusedOp> out = ops;
  std::vector<bool> absorbed(ops.size(), false);
  for (int r = num_ops - 1; r >= 0; --r) {
    if (absorbed[r] || node[r].empty() || IsPredicateNode(node[r])) continue;
    std::vector<TreeNode> tree(1);
    tree[0].op = r;
    std::fill(std::begin(tree[0].child), std::end(tree[0].child), -1);
    for (size_t t = 0; t < tree.size(); ++t) {
      for (int k = 0; k < kMaxOperands; ++k) {
        const int32_t s = ops[tree[t].op].src[k];
        if (s < 0 || tree.size() >= kMaxTreeNodes) continue;
        const int p = producer[s];
        if (p < 0 || node[p].empty() || absorbed[p] || uses[s] != 1 || pinned[s]) continue;
        TreeNode c;
        c.op = p;
        c.parent = static_cast<int>(t);
        std::fill(std::begin(c.child), std::end(c.child), -1);
        tree[t].child[k] = static_cast<int>(tree.size());
        tree.push_back(c);
      }
    }
    if (tree.size() == 1) continue;
    const uint32_t full = (1u << tree.size()) - 1;
    if (Reports()) {
      std::string sig;
      std::vector<int32_t> leaves;
      Sign(ops, node, tree, 0, full, sig, leaves);
      std::fprintf(stderr, "expression n=%lld nodes %zu leaves %zu %s %s\n", static_cast<long long>(n), tree.size(),
                   leaves.size(), GetExpressionFn(sig) != nullptr ? "compiled" : "missing", sig.c_str());
    }
    int best_count = 0;
    uint32_t best_mask = 0;
    ElementwiseFn best_fn = nullptr;
    std::vector<int32_t> best_leaves;
    for (uint32_t m = 3; m <= full; m += 2) {  // the root (bit 0) and at least one more node
      const int count = std::popcount(m);
      if (count <= best_count) continue;
      bool closed = true;
      for (size_t j = 1; j < tree.size() && closed; ++j) closed = (m >> j & 1u) == 0 || (m >> tree[j].parent & 1u) != 0;
      if (!closed) continue;
      std::string sig;
      std::vector<int32_t> leaves;
      Sign(ops, node, tree, 0, m, sig, leaves);
      if (leaves.size() > static_cast<size_t>(kMaxOperands)) continue;
      ElementwiseFn fn = GetExpressionFn(sig);
      if (fn == nullptr) continue;
      best_count = count;
      best_mask = m;
      best_fn = fn;
      best_leaves = std::move(leaves);
    }
    if (best_fn == nullptr) continue;
    FusedOp e;
    e.fn = best_fn;
    e.dst = ops[r].dst;
    e.instruction = ops[r].instruction;
    e.per_row = ops[r].per_row;
    e.nodes = 0;
    for (size_t j = 0; j < tree.size(); ++j) {
      if ((best_mask >> j & 1u) != 0) e.nodes += ops[tree[j].op].nodes;
    }
    std::copy(best_leaves.begin(), best_leaves.end(), e.src);
    out[r] = e;
    for (size_t j = 1; j < tree.size(); ++j) {
      if ((best_mask >> j & 1u) != 0) absorbed[tree[j].op] = true;
    }
  }
  std::vector<FusedOp> kept;
  for (int i = 0; i < num_ops; ++i) {
    if (!absorbed[i]) kept.push_back(out[i]);
  }
  return kept;
}

}  // namespace pcp::cpu
