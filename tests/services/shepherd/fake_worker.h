// Test-only: a hand-driven Training.Connect client, for tests that need a worker that
// misbehaves (wrong shapes, silence, stalls) next to the shepherd.
//
//   FakeWorker w(stub, "node-1");                     // sends the Join
//   ASSERT_TRUE(w.ExpectJoinAck());
//   v1::Assignment a;
//   uint64_t round = w.RunToStartRound(&a);           // takes program/shard, says ready, takes θ
//   w.StartHeartbeats(std::chrono::milliseconds(200));
//   absl::Status end = w.Finish();                    // drains, returns the RPC's status
#ifndef PCP_TESTS_SERVICES_SHEPHERD_FAKE_WORKER_H_
#define PCP_TESTS_SERVICES_SHEPHERD_FAKE_WORKER_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "pcp/v1/training.grpc.pb.h"

namespace pcp::shepherd {

class FakeWorker {
 public:
  using Stream = grpc::ClientReaderWriter<v1::WorkerMessage, v1::ShepherdMessage>;

  // `features`: what its Join declares (by default what today's worker does; {}: an older one).
  FakeWorker(v1::Training::Stub* stub, const std::string& supervisor_id, uint64_t incarnation = 1,
             const std::vector<v1::WorkerFeature>& features = {v1::WORKER_FEATURE_THETA_FROM_INIT}) {
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
    stream_ = stub->Connect(&context_);
    v1::WorkerMessage m;
    v1::Join* j = m.mutable_join();
    j->set_protocol_version(v1::PROTOCOL_VERSION_1);
    j->set_supervisor_id(supervisor_id);
    j->set_incarnation(incarnation);
    j->set_backend(v1::BACKEND_CPU);
    j->set_pid(4242);
    for (v1::WorkerFeature f : features) j->add_features(f);
    Write(m);
  }
  ~FakeWorker() {
    StopHeartbeats();
    context_.TryCancel();
  }

  Stream* stream() { return stream_.get(); }
  grpc::ClientContext& context() { return context_; }

  bool Write(const v1::WorkerMessage& m) {
    std::lock_guard<std::mutex> lock(write_mu_);
    return stream_->Write(m);
  }
  // The next message that is not a heartbeat; false when the stream ended.
  bool ReadNext(v1::ShepherdMessage* out) {
    while (stream_->Read(out)) {
      if (!out->has_heartbeat()) return true;
    }
    return false;
  }
  bool ExpectJoinAck() {
    v1::ShepherdMessage m;
    return ReadNext(&m) && m.has_join_ack() && !m.join_ack().has_rejection();
  }
  // After the JoinAck: takes the Assignment with its program and shard, answers
  // AssignmentReady, takes θ; returns StartRound's round (0 if the stream ended).
  uint64_t RunToStartRound(v1::Assignment* assignment) { return TakeAssignment(assignment) ? NextStartRound() : 0; }
  // The first half of that: the Assignment, its program and shard, AssignmentReady.
  bool TakeAssignment(v1::Assignment* assignment) {
    v1::ShepherdMessage m;
    if (!ReadNext(&m) || !m.has_assignment()) return false;
    *assignment = m.assignment();
    uint64_t program = 0, shard = 0;
    const uint64_t shard_bytes = assignment->shard().inline_tokens().num_tokens() * 2;
    const uint64_t program_bytes = assignment->program_follows() ? assignment->program_bytes() : 0;
    while (program < program_bytes || shard < shard_bytes) {
      if (!ReadNext(&m)) return false;
      if (m.has_program_chunk()) program += m.program_chunk().data().size();
      if (m.has_shard_chunk()) shard += m.shard_chunk().data().size();
    }
    v1::WorkerMessage ready;
    ready.mutable_ready()->set_job_id(assignment->job_id());
    ready.mutable_ready()->set_program_hash(assignment->program_hash());
    return Write(ready);
  }
  // Skips θ chunks up to the next StartRound (waiting `per_chunk` after each); returns its
  // round (0: the stream ended or something else came, left in *other when given).
  uint64_t NextStartRound(v1::ShepherdMessage* other = nullptr, std::chrono::milliseconds per_chunk = {}) {
    v1::ShepherdMessage m;
    while (ReadNext(&m)) {
      if (m.has_start_round()) return m.start_round().round();
      if (!m.has_parameter_chunk()) {
        if (other != nullptr) *other = m;
        return 0;
      }
      std::this_thread::sleep_for(per_chunk);
    }
    return 0;
  }

  // Sends a WorkerHeartbeat every `interval` from a thread of its own (so the shepherd
  // keeps the worker alive while it does nothing else).
  void StartHeartbeats(std::chrono::milliseconds interval) {
    heartbeats_ = std::thread([this, interval] {
      uint64_t seq = 0;
      while (!stop_) {
        v1::WorkerMessage hb;
        hb.mutable_heartbeat()->mutable_heartbeat()->set_sequence(++seq);
        hb.mutable_heartbeat()->set_phase(v1::WORKER_PHASE_TRAINING);
        if (!Write(hb)) return;
        std::this_thread::sleep_for(interval);
      }
    });
  }
  void StopHeartbeats() {
    stop_ = true;
    if (heartbeats_.joinable()) heartbeats_.join();
  }

  // Drains the stream and returns the RPC's status.
  absl::Status Finish() {
    v1::ShepherdMessage m;
    while (stream_->Read(&m)) {
    }
    StopHeartbeats();
    grpc::Status s = stream_->Finish();
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<Stream> stream_;
  std::mutex write_mu_;
  std::atomic<bool> stop_{false};
  std::thread heartbeats_;
};

}  // namespace pcp::shepherd

#endif  // PCP_TESTS_SERVICES_SHEPHERD_FAKE_WORKER_H_
