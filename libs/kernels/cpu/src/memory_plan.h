// The static memory plan: arena buffers with known lifetimes (schedule positions) get
// offsets so that buffers alive at the same time never overlap. Greedy by size, largest
// first, each into the smallest gap that fits among the already placed buffers whose
// lifetimes intersect its own (the "greedy by size" planner of TFLite and MNN).
#ifndef PCP_KERNELS_CPU_MEMORY_PLAN_H_
#define PCP_KERNELS_CPU_MEMORY_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "pcp/kernels/cpu_backend.h"

namespace pcp::cpu {

inline constexpr int64_t kArenaAlignment = 64;

// Fills in offset for every block (sizes and lifetimes given) and returns the arena size.
int64_t PlanMemory(std::vector<ArenaBlock>& blocks);

// Every block lies inside [0, arena_bytes), is aligned, and overlaps no block whose
// lifetime intersects its own.
absl::Status CheckMemoryPlan(const std::vector<ArenaBlock>& blocks, int64_t arena_bytes);

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_MEMORY_PLAN_H_
