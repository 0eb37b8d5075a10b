// Private: every worker the shepherd knows, by supervisor id, and the sessions of the ones
// connected now. It admits joins (one live stream per supervisor id: a second one is refused
// with ALREADY_EXISTS unless it comes from a newer incarnation, which replaces the old
// stream), sends heartbeats to every session and closes the ones that fell silent, and tells
// the coordinator who joined and left (WorkerEventSink; the sessions post everything else
// there themselves).
//
//   WorkerRegistry registry(session_options, /*timeout_s=*/3.0, /*interval_s=*/1.0);
//   registry.SetSink(&coordinator);
//   registry.Start();                                       // the heartbeat thread
//   std::shared_ptr<WorkerSession> s = registry.NewSession(peer, caller);   // per Connect call
//   std::vector<v1::WorkerInfo> all = registry.List();     // for Admin.ListWorkers
//   registry.Stop(absl::UnavailableError("shepherd shutting down"));
#ifndef PCP_SHEPHERD_SRC_WORKER_REGISTRY_H_
#define PCP_SHEPHERD_SRC_WORKER_REGISTRY_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pcp/v1/admin.pb.h"
#include "pcp/v1/training.pb.h"
#include "worker_session.h"

namespace pcp::shepherd {

class WorkerRegistry final : public SessionObserver {
 public:
  // A worker slot without a live stream for longer than forget_after_s is forgotten (removed
  // when another worker joins), so the registry does not grow with every id ever seen.
  WorkerRegistry(SessionOptions options, double heartbeat_timeout_s, double heartbeat_interval_s,
                 double forget_after_s = 86400.0);
  ~WorkerRegistry() override;

  // Where the sessions post their workers' events (worker_event.h); set before the first
  // NewSession.
  void SetSink(WorkerEventSink* sink) { sink_ = sink; }
  void Start();
  // Closes every session with `why` and stops the heartbeat thread.
  void Stop(const absl::Status& why);

  // `caller`: who opened the stream (pcp/auth/authorization.h); its Join must be for its own
  // supervisor id when auth is on.
  std::shared_ptr<WorkerSession> NewSession(std::string peer, auth::Principal caller = {});

  std::vector<v1::WorkerInfo> List() const;
  uint32_t connected() const;
  // Bookkeeping shown by ListWorkers.
  void NoteActivity(const std::string& supervisor_id, const std::string& job_id, uint64_t round);
  // A delivered round's speed, steps and idle time (WorkerInfo, pcp_shepherd_worker_* metrics);
  // `staleness`: outer updates between the θ its Δ started from and its arrival.
  void NoteRoundDelivered(const std::string& supervisor_id, const v1::RoundResult& result, uint64_t staleness = 0);

  // SessionObserver
  absl::Status AdmitJoin(const std::shared_ptr<WorkerSession>& session) override;
  void OnJoined(const std::shared_ptr<WorkerSession>& session) override;
  void OnHeartbeat(const std::shared_ptr<WorkerSession>& session, const v1::WorkerHeartbeat& heartbeat) override;
  void OnEnded(const std::shared_ptr<WorkerSession>& session, const absl::Status& why) override;

 private:
  struct Slot {
    v1::WorkerInfo info;
    std::weak_ptr<WorkerSession> live;
    std::chrono::steady_clock::time_point last_seen;
  };
  void HeartbeatLoop();

  const SessionOptions options_;
  const double timeout_s_;
  const double interval_s_;
  const double forget_after_s_;
  WorkerEventSink* sink_ = nullptr;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, Slot> slots_;                  // by supervisor id
  std::set<std::shared_ptr<WorkerSession>> sessions_;  // until their transport is gone
  std::atomic<uint64_t> next_session_{1};
  std::thread thread_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_WORKER_REGISTRY_H_
