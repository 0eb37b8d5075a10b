// ControlRegistry on its own, with a fake stream (ControlSession) standing in for gRPC.
#include "pcp/shepherd/control_registry.h"

#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pcp::shepherd {
namespace {

using ::testing::HasSubstr;

class FakeSession : public ControlSession {
 public:
  void Send(v1::ControlCommand command) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.push_back(std::move(command));
  }
  std::vector<v1::ControlCommand> sent() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }

 private:
  std::mutex mu_;
  std::vector<v1::ControlCommand> sent_;
};

v1::SupervisorHello Hello(const std::string& id, int32_t pid = 100) {
  v1::SupervisorHello hello;
  hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.set_supervisor_id(id);
  hello.set_host("host-" + id);
  hello.set_version("0.1.0");
  hello.mutable_worker()->set_state(v1::WORKER_PROCESS_STATE_RUNNING);
  hello.mutable_worker()->set_pid(pid);
  hello.mutable_worker()->set_incarnation(1);
  return hello;
}

// Collects one command outcome.
struct Outcome {
  std::promise<absl::StatusOr<v1::CommandAck>> promise;
  std::future<absl::StatusOr<v1::CommandAck>> future = promise.get_future();
  ControlRegistry::CommandCallback Callback() {
    return [this](absl::StatusOr<v1::CommandAck> r) { promise.set_value(std::move(r)); };
  }
  absl::StatusOr<v1::CommandAck> Get() {
    EXPECT_EQ(future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    return future.get();
  }
  bool Ready() { return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
};

TEST(ControlRegistryTest, ConnectListsTheSupervisorWithItsWorker) {
  ControlRegistry registry;
  EXPECT_TRUE(registry.ListSupervisors().empty());
  FakeSession session;
  auto token = registry.Connect(Hello("node-b", 42), &session);
  ASSERT_TRUE(token.ok()) << token.status();
  ASSERT_TRUE(registry.Connect(Hello("node-a"), &session).ok());
  std::vector<SupervisorInfo> all = registry.ListSupervisors();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].supervisor_id, "node-a");  // sorted by id
  const SupervisorInfo& b = all[1];
  EXPECT_EQ(b.supervisor_id, "node-b");
  EXPECT_EQ(b.host, "host-node-b");
  EXPECT_EQ(b.version, "0.1.0");
  EXPECT_TRUE(b.connected);
  EXPECT_EQ(b.worker.pid(), 42);
  EXPECT_EQ(b.connections, 1u);
  EXPECT_GT(b.connected_unix_ms, 0);
  EXPECT_EQ(registry.connected(), 2u);
}

TEST(ControlRegistryTest, HeartbeatsUpdateTheWorkerState) {
  ControlRegistry registry;
  FakeSession session;
  uint64_t token = *registry.Connect(Hello("n"), &session);
  v1::SupervisorHeartbeat beat;
  beat.mutable_heartbeat()->set_sequence(7);
  beat.mutable_worker()->set_state(v1::WORKER_PROCESS_STATE_BACKOFF);
  beat.mutable_worker()->set_last_signal(9);
  beat.mutable_worker()->set_last_exit_code(-1);
  beat.mutable_worker()->set_backoff_ms(400);
  registry.Heartbeat("n", token, beat);
  SupervisorInfo info = *registry.GetSupervisor("n");
  EXPECT_EQ(info.worker.state(), v1::WORKER_PROCESS_STATE_BACKOFF);
  EXPECT_EQ(info.worker.last_signal(), 9);
  EXPECT_EQ(info.worker.backoff_ms(), 400u);
  EXPECT_EQ(info.heartbeats, 1u);
  EXPECT_EQ(info.last_heartbeat_sequence, 7u);
  EXPECT_LT(info.last_seen, absl::Seconds(1));
  // A stale token (an older stream) changes nothing.
  beat.mutable_worker()->set_state(v1::WORKER_PROCESS_STATE_STOPPED);
  registry.Heartbeat("n", token + 100, beat);
  EXPECT_EQ(registry.GetSupervisor("n")->worker.state(), v1::WORKER_PROCESS_STATE_BACKOFF);
}

TEST(ControlRegistryTest, ASecondLiveStreamForOneIdIsRefused) {
  ControlRegistry registry;
  FakeSession first, second;
  uint64_t token = *registry.Connect(Hello("dup"), &first);
  absl::StatusOr<uint64_t> again = registry.Connect(Hello("dup"), &second);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("'dup'"));
  // Once the first stream is gone, the id can connect again.
  registry.Disconnect("dup", token, absl::UnavailableError("gone"));
  SupervisorInfo info = *registry.GetSupervisor("dup");
  EXPECT_FALSE(info.connected);
  EXPECT_EQ(info.disconnect_reason, "gone");
  EXPECT_GT(info.disconnected_unix_ms, 0);
  absl::StatusOr<uint64_t> later = registry.Connect(Hello("dup"), &second);
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_NE(*later, token);
  EXPECT_EQ(registry.GetSupervisor("dup")->connections, 2u);
  // The old stream's late disconnect does not touch the new one.
  registry.Disconnect("dup", token, absl::UnavailableError("late"));
  EXPECT_TRUE(registry.GetSupervisor("dup")->connected);
}

TEST(ControlRegistryTest, CommandsAreSentAndAcknowledged) {
  ControlRegistry registry;
  FakeSession session;
  uint64_t token = *registry.Connect(Hello("n"), &session);
  Outcome outcome;
  registry.SendCommand("n", MakeRestartWorker("test", 250), absl::Seconds(5), outcome.Callback());
  std::vector<v1::ControlCommand> sent = session.sent();
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_TRUE(sent[0].has_restart_worker());
  EXPECT_EQ(sent[0].restart_worker().reason(), "test");
  EXPECT_EQ(sent[0].restart_worker().grace_ms(), 250u);
  EXPECT_GT(sent[0].command_id(), 0u);
  EXPECT_FALSE(outcome.Ready());
  v1::CommandAck ack;
  ack.set_command_id(sent[0].command_id());
  ack.set_message("started worker 7");
  registry.Acknowledge("n", token, ack);
  absl::StatusOr<v1::CommandAck> got = outcome.Get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->code(), 0);
  EXPECT_EQ(got->message(), "started worker 7");

  // Ids are unique; a supervisor's failure comes back as the ack's code.
  Outcome drain;
  registry.SendCommand("n", MakeDrainWorker("d", 0), absl::Seconds(5), drain.Callback());
  sent = session.sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_NE(sent[1].command_id(), sent[0].command_id());
  ack.set_command_id(sent[1].command_id());
  ack.set_code(static_cast<int>(absl::StatusCode::kFailedPrecondition));
  ack.set_message("shutting down");
  registry.Acknowledge("n", token, ack);
  got = drain.Get();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->code(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
}

TEST(ControlRegistryTest, UnknownAndDisconnectedSupervisorsAndBadCommands) {
  ControlRegistry registry;
  Outcome unknown;
  registry.SendCommand("nobody", MakeShutdown("x", 0), absl::Seconds(1), unknown.Callback());
  absl::StatusOr<v1::CommandAck> got = unknown.Get();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("'nobody'"));

  FakeSession session;
  uint64_t token = *registry.Connect(Hello("gone"), &session);
  registry.Disconnect("gone", token, absl::UnavailableError("heartbeat timeout"));
  got = registry.SendCommandAndWait("gone", MakeDrainWorker("x", 0), absl::Seconds(1));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("not connected"));
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("heartbeat timeout"));

  ASSERT_TRUE(registry.Connect(Hello("live"), &session).ok());
  v1::ControlCommand welcome;
  welcome.mutable_welcome();
  got = registry.SendCommandAndWait("live", welcome, absl::Seconds(1));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(session.sent().empty());
}

TEST(ControlRegistryTest, UnansweredCommandsTimeOut) {
  ControlRegistry registry;
  FakeSession session;
  uint64_t token = *registry.Connect(Hello("slow"), &session);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<v1::CommandAck> got =
      registry.SendCommandAndWait("slow", MakeRestartWorker("x", 0), absl::Milliseconds(200));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(190));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  // A late answer is ignored.
  v1::CommandAck ack;
  ack.set_command_id(session.sent()[0].command_id());
  registry.Acknowledge("slow", token, ack);
}

TEST(ControlRegistryTest, ADisconnectFailsPendingCommands) {
  ControlRegistry registry;
  FakeSession session;
  uint64_t token = *registry.Connect(Hello("n"), &session);
  Outcome a, b;
  registry.SendCommand("n", MakeRestartWorker("x", 0), absl::Seconds(30), a.Callback());
  registry.SendCommand("n", MakeDrainWorker("x", 0), absl::Seconds(30), b.Callback());
  registry.Disconnect("n", token, absl::UnavailableError("stream broke"));
  EXPECT_EQ(a.Get().status().code(), absl::StatusCode::kUnavailable);
  absl::StatusOr<v1::CommandAck> got = b.Get();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("disconnected before acknowledging"));
}

TEST(ControlRegistryTest, DestroyingTheRegistryFailsPendingCommands) {
  Outcome outcome;
  {
    ControlRegistry registry;
    FakeSession session;
    ASSERT_TRUE(registry.Connect(Hello("n"), &session).ok());
    registry.SendCommand("n", MakeShutdown("x", 0), absl::Seconds(30), outcome.Callback());
  }
  EXPECT_EQ(outcome.Get().status().code(), absl::StatusCode::kUnavailable);
}

TEST(ControlRegistryTest, SupervisorIdValidation) {
  EXPECT_TRUE(ValidateSupervisorId("node-1.a_b:c").ok());
  EXPECT_FALSE(ValidateSupervisorId("").ok());
  EXPECT_FALSE(ValidateSupervisorId("has space").ok());
  EXPECT_FALSE(ValidateSupervisorId(std::string(129, 'x')).ok());
  EXPECT_TRUE(ValidateSupervisorId(std::string(128, 'x')).ok());
}

}  // namespace
}  // namespace pcp::shepherd
