// Rematerialisation: a value that is cheap to compute again (a few elementwise ops, through
// views) from values that stay alive anyway is recomputed where it is used again long after,
// instead of being kept alive in between. In a train step this is what JAX's "save only the
// dots" policy does in spirit: the backward pass recomputes GELU's output from the saved fc
// output (which GELU's derivative reads anyway) and LayerNorm's output from its saved centred
// input and rstd, so neither is kept from the forward; the peak of live memory falls by their
// size times the layers, and so does the working set a step runs through the caches.
//
//   PCP_RETURN_IF_ERROR(RunStandardPasses(step));       // first: CSE would merge the copies
//   PCP_ASSIGN_OR_RETURN(RematStats s, Rematerialize(step));
//
// The model: instructions run in program order; a tensor (the result of any instruction but a
// view or a source: broadcast_in_dim, reshape, transpose, slice, constant, iota) is alive from
// its definition to its last use, reads through views included; parameters and constants are
// not counted (a backend holds them outside its working memory). A use is far when the tensors
// that products, reductions, gathers, scatters and concatenations defined since the value's
// previous use (or its definition) total at least `min_reuse_bytes` (by default 2 MiB, two
// cores' L2 here: the value would come back from L3 or DRAM anyway). Elementwise results are
// not counted there: a backend fuses most of them away.
// A value computed by an elementwise op (not a function result) with a far use is recomputed
// right before that use, for that use and all later ones, if its cone of at most `max_ops`
// elementwise ops (views are free) has at most `max_big_leaves` big leaves (more than 1/16 of
// the value's elements: a broadcast per-row value or bias is small) and fewer bytes are kept
// alive: leaves are parameters, constants, values alive there anyway, or values kept longer
// now, which must total fewer bytes than the value and the other values alive there that the
// cone recomputes too (GELU's derivative reads h / sqrt 2 and h / 2: with GELU's output
// they are all recomputed from h, which is kept instead). The cone is copied; copies are
// shared between the values recomputed, and an original no longer used is removed. Dot
// products, reductions, gathers and scatters are never recomputed.
//
// The copy is the same expression on the same inputs, so results are bitwise the same. If the
// peak of live bytes would rise (copies of intermediate values outliving their originals), the
// function is left as it was. Run it after the last CSE (which would fold the copies back into
// the originals); a backend's fuser should keep a copy out of the kernel computing its original
// (the CPU backend does).
#ifndef PCP_AUTODIFF_REMAT_H_
#define PCP_AUTODIFF_REMAT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

struct RematOptions {
  int max_ops = 12;                   // elementwise ops in one value's cone (views are free)
  int max_big_leaves = 1;             // leaves read in full (see above)
  int64_t min_reuse_bytes = 2 << 20;  // a far use (see above)
};

struct RematStats {
  int values = 0;              // tensors recomputed for their far uses
  int instructions_added = 0;  // the copies
  int64_t peak_before = 0;     // the peak of bytes alive, in the model above
  int64_t peak_after = 0;
};

// Rewrites `function` as described above (verified before and after; values renumbered).
// Values are recomputed in the order of their far uses.
absl::StatusOr<RematStats> Rematerialize(Function& function, const RematOptions& options = {});

// The peak of bytes alive in program order, in the model above (for tests and reports).
int64_t PeakLiveBytes(const Function& function);

}  // namespace pcp

#endif  // PCP_AUTODIFF_REMAT_H_
