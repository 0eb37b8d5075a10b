// A worker's training programs by content hash ("sha256:<hex>" of the MLIR text): compiled
// inner loops in memory (the last few), and optionally the texts on disk so a restarted
// worker still tells the shepherd it has them (Join.cached_program_hashes) and only
// compiles, without a transfer.
//
//   ProgramCache cache(backend, /*dir=*/"/var/cache/pcp-worker");   // "" = memory only
//   std::vector<std::string> hashes = cache.Hashes();                  // for Join
//   PCP_RETURN_IF_ERROR(cache.AddText(hash, text));                    // checks the hash
//   PCP_ASSIGN_OR_RETURN(ProgramCache::Entry* e, cache.Get(hash));     // compiles if needed
//   e->loop->Step(...);
//
// Not thread-safe (the worker's main thread owns it). The backend must outlive the cache.
#ifndef PCP_WORKER_PROGRAM_CACHE_H_
#define PCP_WORKER_PROGRAM_CACHE_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/kernels/backend.h"
#include "pcp/training/inner_loop.h"

namespace pcp::worker {

class ProgramCache {
 public:
  struct Entry {
    std::string hash;
    std::unique_ptr<InnerLoop> loop;
    int64_t compile_ms = 0;  // of the compilation that made `loop`
    // Which assignment the loop's AdamW state belongs to (set by the worker), so that the same
    // assignment coming back (a reconnect) keeps it.
    std::string owner;
  };

  // Compiled loops kept in memory (each holds parameters and AdamW moments).
  static constexpr size_t kMaxCompiled = 2;

  ProgramCache(Backend& backend, std::string dir);

  // Hashes of every program held (compiled, or as text in memory or on disk).
  std::vector<std::string> Hashes() const;
  bool Has(const std::string& hash) const;
  // Stores a received program text. InvalidArgument if it does not hash to `hash`.
  absl::Status AddText(const std::string& hash, std::string text);
  // The compiled loop for `hash` (parsed and compiled on first use; compile_ms set then).
  // NotFound when the text is unknown.
  absl::StatusOr<Entry*> Get(const std::string& hash);

 private:
  std::string PathOf(const std::string& hash) const;

  Backend& backend_;
  std::string dir_;
  std::map<std::string, std::string> texts_;  // in memory, until compiled
  std::list<Entry> compiled_;                 // most recently used first
};

}  // namespace pcp::worker

#endif  // PCP_WORKER_PROGRAM_CACHE_H_
