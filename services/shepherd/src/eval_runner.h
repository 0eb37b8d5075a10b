// Private: validation-loss estimates on the shepherd's own CPU backend, in a thread of their
// own so that the next round does not wait for them. One estimate runs at a time; a newer
// request replaces one that has not started yet.
//
//   PCP_ASSIGN_OR_RETURN(auto eval, EvalRunner::Create(program, val_tokens, iters, seed, threads,
//                                                      [&] { coordinator.Nudge(); }));
//   eval->Start(/*round=*/7, theta);               // returns at once
//   if (std::optional<EvalRunner::Result> r = eval->Take()) { ...r->round, r->val_loss... }
//   absl::StatusOr<Result> last = eval->Finish(); // waits for the running one (last round)
#ifndef PCP_SHEPHERD_SRC_EVAL_RUNNER_H_
#define PCP_SHEPHERD_SRC_EVAL_RUNNER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/kernels/backend.h"
#include "pcp/training/dataset.h"
#include "pcp/training/inner_loop.h"
#include "pcp/training/model_program.h"

namespace pcp::shepherd {

class EvalRunner {
 public:
  struct Result {
    uint64_t round = 0;
    absl::StatusOr<float> val_loss = absl::UnknownError("not estimated");
    double seconds = 0;
  };

  // Compiles the program's evaluation on a CPU backend with `threads` threads. `done` is
  // called (on the runner's thread) after each estimate.
  static absl::StatusOr<std::unique_ptr<EvalRunner>> Create(const ModelProgram& program, TokenSequence data,
                                                            int64_t iters, uint64_t seed, int threads,
                                                            std::function<void()> done);
  ~EvalRunner();

  // Estimates the loss of `params` (the result of `round`); copies nothing (θ is not modified
  // once handed out).
  void Start(uint64_t round, std::vector<Tensor> params);
  // The latest finished estimate not yet taken.
  std::optional<Result> Take();
  // Waits until nothing is pending or running; returns the latest estimate not yet taken.
  std::optional<Result> Finish();

 private:
  EvalRunner() = default;
  void Loop();

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Evaluator> evaluator_;
  TokenSequence data_;
  int64_t iters_ = 0;
  uint64_t seed_ = 0;
  std::function<void()> done_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::pair<uint64_t, std::vector<Tensor>>> pending_;
  bool running_ = false;
  bool stop_ = false;
  std::optional<Result> result_;
  std::thread thread_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_EVAL_RUNNER_H_
