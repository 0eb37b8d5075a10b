// Every Prometheus metric PCP exports, declared once: name, type, label names (with their
// values where the set is fixed), histogram buckets and help text. The services, the
// "Metrics" table of docs/operations.md (CatalogMarkdown, tool pcp-metrics-catalog) and the tests
// all read this list; nothing else spells a metric name.
//
//   using namespace pcp::metrics;
//   const MetricInfo& info = InfoOf(Metric::kShepherdRoundsCompletedTotal);
//   info.name == "pcp_shepherd_rounds_completed_total";  info.type == MetricType::kCounter;
//   for (Metric m : MetricsOf(Service::kWorker)) { ... }   // pcp_build_info included
//   std::string table = CatalogMarkdown();                  // pasted into docs/operations.md
//
// Adding a metric = one V(...) line below, plus the code that updates it (registry.h gives
// typed handles: kCounter ids only yield counters, etc.). Label values must stay bounded:
// never a per-chunk or per-request id as a label.
#ifndef PCP_METRICS_CATALOG_H_
#define PCP_METRICS_CATALOG_H_

#include <array>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pcp::metrics {

// V(id, service, type, name, labels, buckets, help)
//   service: Shepherd | Worker | Supervisor | All (exported by every service)
//   type:    Counter | Gauge | Histogram
//   labels:  "" | "name" | "a,b" | "name=v1|v2|v3" (a fixed set of values: each series is
//            created at start, at 0, so rate() and absent() work from the first scrape; with
//            several such labels, every combination of their values)
//   buckets: None | RoundSeconds | StepSeconds | ShortSeconds | WaitSeconds (see BucketsOf)
// clang-format off
#define PCP_METRIC_LIST(V)                                                                                         \
  V(kBuildInfo, All, Gauge, "pcp_build_info", "service,version", None,                                              \
    "Always 1; the labels name the service and its version.")                                                       \
  /* ---- shepherd */                                                                                              \
  V(kShepherdJobs, Shepherd, Gauge, "pcp_shepherd_jobs", "state=queued|running|completed|failed|cancelled", None,    \
    "Jobs known to the shepherd, by state.")                                                                        \
  V(kShepherdRound, Shepherd, Gauge, "pcp_shepherd_round", "job_id", None,                                          \
    "The job's current round: the one running, else the last one completed.")                               \
  V(kShepherdRoundsCompletedTotal, Shepherd, Counter, "pcp_shepherd_rounds_completed_total", "job_id", None,        \
    "DiLoCo rounds completed (outer step applied) by this shepherd process.")                                       \
  V(kShepherdTrainLoss, Shepherd, Gauge, "pcp_shepherd_train_loss", "job_id", None,                                 \
    "Token-weighted mean worker training loss of the job's last round.")                                            \
  V(kShepherdValLoss, Shepherd, Gauge, "pcp_shepherd_val_loss", "job_id", None,                                     \
    "The job's last validation loss estimate.")                                                                     \
  V(kShepherdTokensTotal, Shepherd, Counter, "pcp_shepherd_tokens_total", "job_id", None,                           \
    "Training tokens processed by workers in completed rounds.")                                                    \
  V(kShepherdTokensPerSecond, Shepherd, Gauge, "pcp_shepherd_tokens_per_second", "job_id", None,                    \
    "Tokens per second of the job's last round (all workers, round wall time).")                                    \
  V(kShepherdRoundDurationSeconds, Shepherd, Histogram, "pcp_shepherd_round_duration_seconds", "", RoundSeconds,     \
    "Wall time of a round, from StartRound to the outer step.")                                                     \
  V(kShepherdOuterStepDurationSeconds, Shepherd, Histogram, "pcp_shepherd_outer_step_duration_seconds", "",          \
    ShortSeconds, "Time to average the deltas and apply the outer Nesterov step.")                                  \
  V(kShepherdWorkers, Shepherd, Gauge, "pcp_shepherd_workers",                                                      \
    "state=idle|preparing|ready|receiving|training|sending|disconnected", None,                                     \
    "Workers known to the shepherd, by the phase of their last heartbeat (disconnected: no live stream).")          \
  V(kShepherdBytesSentTotal, Shepherd, Counter, "pcp_shepherd_bytes_sent_total",                                    \
    "kind=theta_full|theta_update|program|shard|control,codec=none|f32|bf16|int8|int4|topk2|topk4|topk8", None,      \
    "Bytes of Training messages sent to workers (serialized size), by kind and by the codec of their tensor data "  \
    "(none: no tensor data).")                                                                                      \
  V(kShepherdBytesReceivedTotal, Shepherd, Counter, "pcp_shepherd_bytes_received_total",                            \
    "kind=delta|control,codec=none|f32|bf16|int8|int4|topk2|topk4|topk8", None,                                      \
    "Bytes of Training messages received from workers (serialized size), by kind and by the codec of their tensor " \
    "data (none: no tensor data).")                                                                                 \
  V(kShepherdPayloadF32BytesSentTotal, Shepherd, Counter, "pcp_shepherd_payload_f32_bytes_sent_total",              \
    "kind=theta_full|theta_update,codec=f32|bf16|int8|int4|topk2|topk4|topk8", None,                                 \
    "What the tensors sent to workers would take as f32 (4 bytes per element), counted with each tensor's first "   \
    "chunk; divided by pcp_shepherd_bytes_sent_total of the same kind and codec: the compression ratio.")           \
  V(kShepherdPayloadF32BytesReceivedTotal, Shepherd, Counter, "pcp_shepherd_payload_f32_bytes_received_total",      \
    "kind=delta,codec=f32|bf16|int8|int4|topk2|topk4|topk8", None,                                                   \
    "What the tensors received from workers would take as f32 (4 bytes per element), counted with each tensor's "   \
    "first chunk; divided by pcp_shepherd_bytes_received_total of the same kind and codec: the compression ratio.") \
  V(kShepherdCodecSecondsTotal, Shepherd, Counter, "pcp_shepherd_codec_seconds_total",                              \
    "op=encode|decode,codec=bf16|int8|int4|topk2|topk4|topk8", None,                                                 \
    "Seconds spent encoding θ updates (the replica's error feedback and decoded update included, and each "         \
    "worker's stream) and decoding Δs, by codec (f32 is sent as it is: no codec time).")                            \
  V(kShepherdCheckpointDurationSeconds, Shepherd, Histogram, "pcp_shepherd_checkpoint_duration_seconds", "",         \
    ShortSeconds, "Time to write one checkpoint (successful writes).")                                              \
  V(kShepherdCheckpointLastSuccessTimestampSeconds, Shepherd, Gauge,                                                \
    "pcp_shepherd_checkpoint_last_success_timestamp_seconds", "", None,                                             \
    "Unix time of the last checkpoint written successfully (0: none yet).")                                         \
  V(kShepherdDeltasRefusedTotal, Shepherd, Counter, "pcp_shepherd_deltas_refused_total",                           \
    "reason=non_finite|declared_norm|norm|max_norm", None,                                                          \
    "Workers' Δs refused (rejected or clipped) by the shepherd's screening, by reason (diloco.screening).")         \
  V(kShepherdReplicaResyncsTotal, Shepherd, Counter, "pcp_shepherd_replica_resyncs_total", "", None,                \
    "Workers sent θ in full because their replica did not match the shepherd's (θ crc32c, or a θ update for a "   \
    "θ they did not hold; diloco.compression.down).")                                                               \
  V(kShepherdAdminRequestsTotal, Shepherd, Counter, "pcp_shepherd_admin_requests_total", "method,code", None,       \
    "Admin API calls answered, by method and gRPC status code name (e.g. OK, NOT_FOUND).")                          \
  V(kShepherdAdmissionRefusalsTotal, Shepherd, Counter, "pcp_shepherd_admission_refusals_total",                   \
    "limit=jobs_queued|jobs_stored|admin_calls|watch_streams|watch_queue", None,                                   \
    "Calls refused (RESOURCE_EXHAUSTED) or watchers dropped because a bound was reached, by the bound.")           \
  V(kShepherdAuthRefusalsTotal, Shepherd, Counter, "pcp_shepherd_auth_refusals_total", "service,reason", None,      \
    "Calls refused by authentication or authorization, by service (Admin, Training, Control; other for any "      \
    "method a caller makes up) and reason (no_credential, bad_token, unknown_identity, wrong_role, node_mismatch).") \
  V(kShepherdTlsRefusalsTotal, Shepherd, Counter, "pcp_shepherd_tls_refusals_total",                            \
    "reason=no_certificate|bad_certificate|not_tls|other", None,                                                  \
    "TLS handshakes the shepherd refused, before any call: no client certificate (mTLS), one its CA does not "    \
    "verify, a plaintext client, other failures.")                                                                \
  V(kShepherdInsecureListen, Shepherd, Gauge, "pcp_shepherd_insecure_listen", "", None,                             \
    "1 while the shepherd serves plaintext on a non-loopback address because the config says insecure: true.")      \
  V(kShepherdWorkerStepSeconds, Shepherd, Gauge, "pcp_shepherd_worker_step_seconds", "worker", None,              \
    "Each worker's (supervisor id's) mean inner step time in its last delivered round, in seconds.")              \
  V(kShepherdWorkerTokensPerSecond, Shepherd, Gauge, "pcp_shepherd_worker_tokens_per_second", "worker", None,      \
    "Each worker's training tokens per second (step time only) in its last delivered round.")                     \
  V(kShepherdWorkerRoundSteps, Shepherd, Gauge, "pcp_shepherd_worker_round_steps", "worker", None,                 \
    "Inner steps each worker ran in its last delivered round (diloco.time_budget: what its speed fit).")           \
  V(kShepherdWorkerStaleness, Shepherd, Gauge, "pcp_shepherd_worker_staleness", "worker", None,                    \
    "Outer updates applied between the θ a worker's last delivered Δ started from and the Δ's arrival (0 in "     \
    "synchronous rounds).")                                                                                         \
  V(kShepherdWorkerIdleSecondsTotal, Shepherd, Counter, "pcp_shepherd_worker_idle_seconds_total", "worker", None,  \
    "Seconds each worker's compute sat idle between rounds (its RoundResult.network_wait_ms: sending Δ, waiting "  \
    "for the round to close and for θ); against wall time: its idle share.")                                       \
  /* ---- worker */                                                                                                \
  V(kWorkerInnerStepDurationSeconds, Worker, Histogram, "pcp_worker_inner_step_duration_seconds", "", StepSeconds,   \
    "Time of one inner training step (forward, backward, AdamW).")                                                  \
  V(kWorkerTokensPerSecond, Worker, Gauge, "pcp_worker_tokens_per_second", "", None,                                \
    "Training tokens per second of the worker's last round (step time only).")                                      \
  V(kWorkerBackendInfo, Worker, Gauge, "pcp_worker_backend_info", "backend,device", None,                           \
    "Always 1; the labels name the compute backend and device.")                                                    \
  V(kWorkerBytesSentTotal, Worker, Counter, "pcp_worker_bytes_sent_total",                                          \
    "kind=delta|control,codec=none|f32|bf16|int8|int4|topk2|topk4|topk8", None,                                      \
    "Bytes of Training messages sent to the shepherd (serialized size), by kind and by the codec of their tensor "  \
    "data (none: no tensor data).")                                                                                 \
  V(kWorkerBytesReceivedTotal, Worker, Counter, "pcp_worker_bytes_received_total",                                  \
    "kind=theta_full|theta_update|program|shard|control,codec=none|f32|bf16|int8|int4|topk2|topk4|topk8", None,      \
    "Bytes of Training messages received from the shepherd (serialized size), by kind and by the codec of their "   \
    "tensor data (none: no tensor data).")                                                                          \
  V(kWorkerPayloadF32BytesSentTotal, Worker, Counter, "pcp_worker_payload_f32_bytes_sent_total",                    \
    "kind=delta,codec=f32|bf16|int8|int4|topk2|topk4|topk8", None,                                                   \
    "What the tensors sent to the shepherd would take as f32 (4 bytes per element), counted with each tensor's "    \
    "first chunk; divided by pcp_worker_bytes_sent_total of the same kind and codec: the compression ratio.")       \
  V(kWorkerPayloadF32BytesReceivedTotal, Worker, Counter, "pcp_worker_payload_f32_bytes_received_total",            \
    "kind=theta_full|theta_update,codec=f32|bf16|int8|int4|topk2|topk4|topk8", None,                                 \
    "What the tensors received from the shepherd would take as f32 (4 bytes per element), counted with each "       \
    "tensor's first chunk; divided by pcp_worker_bytes_received_total of the same kind and codec: the ratio.")      \
  V(kWorkerCodecSecondsTotal, Worker, Counter, "pcp_worker_codec_seconds_total",                                    \
    "op=encode|decode,codec=bf16|int8|int4|topk2|topk4|topk8", None,                                                 \
    "Seconds spent encoding Δs (error feedback included) and decoding θ updates, by codec (f32 is sent as it "      \
    "is: no codec time).")                                                                                          \
  V(kWorkerNetworkWaitSeconds, Worker, Histogram, "pcp_worker_network_wait_seconds", "", WaitSeconds,               \
    "Per round, how long compute sat idle on the network: from the last inner step of a round to the first of "     \
    "the next (sending Δ, receiving θ, waiting for StartRound). Not observed for an assignment's first round.")     \
  V(kWorkerReplicaMismatchesTotal, Worker, Counter, "pcp_worker_replica_mismatches_total", "", None,                \
    "Times this worker's θ replica did not match the shepherd's and it asked for θ in full (ResyncRequest).")       \
  V(kWorkerProgramCompileSeconds, Worker, Gauge, "pcp_worker_program_compile_seconds", "", None,                    \
    "Compile time of the last program prepared (0 when it came from the compiled cache).")                          \
  V(kWorkerErrorsTotal, Worker, Counter, "pcp_worker_errors_total", "kind=connect|stream|compile|run", None,        \
    "Errors by kind: connect (join failed), stream (stream broke), compile (program), run (round failed).")         \
  /* ---- supervisor */                                                                                            \
  V(kSupervisorChildUp, Supervisor, Gauge, "pcp_supervisor_child_up", "", None,                                     \
    "1 while the worker process runs, else 0.")                                                                     \
  V(kSupervisorRestartsTotal, Supervisor, Counter, "pcp_supervisor_restarts_total", "", None,                       \
    "Worker processes started after the first one (any cause).")                                                    \
  V(kSupervisorLastExitCode, Supervisor, Gauge, "pcp_supervisor_last_exit_code", "", None,                          \
    "Exit code of the last worker that exited (-1 if a signal killed it).")                                         \
  V(kSupervisorLastExitSignal, Supervisor, Gauge, "pcp_supervisor_last_exit_signal", "", None,                      \
    "Signal that killed the last worker that exited (0 if none).")                                                  \
  V(kSupervisorBackoffSeconds, Supervisor, Gauge, "pcp_supervisor_backoff_seconds", "", None,                       \
    "Current restart delay while the worker waits to restart, else 0.")                                             \
  V(kSupervisorConnected, Supervisor, Gauge, "pcp_supervisor_connected", "", None,                                  \
    "1 while the Control stream to the shepherd is up, else 0.")
// clang-format on

enum class Service { kShepherd, kWorker, kSupervisor, kAll };
enum class MetricType { kCounter, kGauge, kHistogram };
enum class Buckets { kNone, kRoundSeconds, kStepSeconds, kShortSeconds, kWaitSeconds };

enum class Metric {
#define PCP_METRIC_ENUM(id, service, type, name, labels, buckets, help) id,
  PCP_METRIC_LIST(PCP_METRIC_ENUM)
#undef PCP_METRIC_ENUM
};

inline constexpr int kNumMetrics = 0
#define PCP_METRIC_COUNT(id, service, type, name, labels, buckets, help) +1
    PCP_METRIC_LIST(PCP_METRIC_COUNT)
#undef PCP_METRIC_COUNT
    ;

struct MetricInfo {
  Metric id;
  Service service;
  MetricType type;
  absl::string_view name;
  absl::string_view labels;  // as in the list: "", "job_id", "kind=a|b"
  Buckets buckets;
  absl::string_view help;
};

inline constexpr std::array<MetricInfo, kNumMetrics> kMetrics = {{
#define PCP_METRIC_INFO(id, service, type, name, labels, buckets, help) \
  {Metric::id, Service::k##service, MetricType::k##type, name, labels, Buckets::k##buckets, help},
    PCP_METRIC_LIST(PCP_METRIC_INFO)
#undef PCP_METRIC_INFO
}};

// Typed ids, so that a counter cannot be fetched as a gauge: kShepherdJobs is a GaugeId.
struct CounterId {
  Metric metric;
};
struct GaugeId {
  Metric metric;
};
struct HistogramId {
  Metric metric;
};
#define PCP_METRIC_TYPED_ID(id, service, type, name, labels, buckets, help) inline constexpr type##Id id{Metric::id};
PCP_METRIC_LIST(PCP_METRIC_TYPED_ID)
#undef PCP_METRIC_TYPED_ID

inline const MetricInfo& InfoOf(Metric m) { return kMetrics[static_cast<int>(m)]; }

// One declared label: its name and, when fixed, its values.
struct LabelSpec {
  std::string name;
  std::vector<std::string> values;  // empty: any (bounded) value
};
std::vector<LabelSpec> LabelsOf(Metric m);

// Upper bounds (seconds) of a histogram's buckets; empty for kNone.
absl::Span<const double> BucketsOf(Buckets b);

// Metrics the service exports (those of Service::kAll included), in list order.
std::vector<Metric> MetricsOf(Service service);
// "shepherd", "worker", "supervisor", "all"; "counter", "gauge", "histogram".
absl::string_view ServiceName(Service service);
absl::string_view TypeName(MetricType type);

// A Markdown table of the whole catalog (service, name, type, labels, help), one row per metric.
std::string CatalogMarkdown();

}  // namespace pcp::metrics

#endif  // PCP_METRICS_CATALOG_H_
