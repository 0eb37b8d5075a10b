#include "memory_plan.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace pcp::cpu {
namespace {

int64_t Align(int64_t x) { return (x + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool LifetimesIntersect(const ArenaBlock& a, const ArenaBlock& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

int64_t PlanMemory(std::vector<ArenaBlock>& blocks) {
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (blocks[a].size != blocks[b].size) return blocks[a].size > blocks[b].size;
    return blocks[a].first < blocks[b].first;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of intersecting placed blocks
  int64_t arena = 0;
  for (size_t i : order) {
    ArenaBlock& b = blocks[i];
    const int64_t size = Align(std::max<int64_t>(b.size, 1));
    busy.clear();
    for (size_t j : placed) {
      if (LifetimesIntersect(b, blocks[j]))
        busy.push_back({blocks[j].offset, blocks[j].offset + Align(blocks[j].size)});
    }
    std::sort(busy.begin(), busy.end());
    // Smallest gap that fits; else after the last intersecting block.
    int64_t best = -1, best_gap = 0, cursor = 0;
    for (const auto& [start, end] : busy) {
      const int64_t gap = start - cursor;
      if (gap >= size && (best < 0 || gap < best_gap)) {
        best = cursor;
        best_gap = gap;
      }
      cursor = std::max(cursor, end);
    }
    b.offset = best >= 0 ? best : cursor;
    arena = std::max(arena, b.offset + size);
    placed.push_back(i);
  }
  return arena;
}

absl::Status CheckMemoryPlan(const std::vector<ArenaBlock>& blocks, int64_t arena_bytes) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    const ArenaBlock& a = blocks[i];
    if (a.offset < 0 || a.offset % kArenaAlignment != 0 || a.offset + a.size > arena_bytes) {
      return absl::InternalError(absl::StrCat("arena block ", a.what, " at [", a.offset, ", ", a.offset + a.size,
                                              ") is misaligned or outside the arena of ", arena_bytes, " bytes"));
    }
    for (size_t j = i + 1; j < blocks.size(); ++j) {
      const ArenaBlock& b = blocks[j];
      if (a.size == 0 || b.size == 0 || !LifetimesIntersect(a, b)) continue;
      if (a.offset < b.offset + b.size && b.offset < a.offset + a.size) {
        return absl::InternalError(absl::StrCat("arena blocks ", a.what, " [", a.offset, ", ", a.offset + a.size,
                                                ") live ", a.first, "..", a.last, " and ", b.what, " [", b.offset, ", ",
                                                b.offset + b.size, ") live ", b.first, "..", b.last, " overlap"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace pcp::cpu
