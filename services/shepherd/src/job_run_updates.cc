// JobRun's θ updates (job_run.h): what the shepherd sends down after a round when the job
// compresses them (diloco.compression.down), applied to its own θ exactly as every worker
// applies it (pcp/diloco/replica.h).
#include "absl/strings/str_cat.h"
#include "job_run.h"
#include "pcp/base/status_macros.h"
#include "pcp/codec/encoded.h"
#include "pcp/diloco/replica.h"
#include "pcp/metrics/codec_seconds.h"
#include "pcp/rpc/tensor_fragments.h"

namespace pcp::shepherd {

absl::Status JobRun::EncodeThetaUpdate(uint64_t round, std::vector<Tensor>* next) {
  down_feedback_.resize(theta_.size());
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> input, EncodeUpdate(theta_, next, prepared_->param_names, &down_feedback_));
  PCP_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkedList> chunks,
                       ChunksOf(input, prepared_->param_names, prepared_->config.diloco.compression.down));
  update_ = ThetaUpdate{.from_round = round, .input = std::move(input), .chunks = std::move(chunks)};
  return absl::OkStatus();
}

absl::Status JobRun::EncodeFragmentUpdate(uint64_t round, std::vector<Tensor>* next) {
  const int64_t p = fragments_->FragmentOfRound(round);
  const std::vector<Tensor> before = GatherFragment(*fragments_, p, theta_);
  std::vector<Tensor> after = GatherFragment(*fragments_, p, *next);
  std::vector<std::string> names;
  for (const TensorSpec& spec : FragmentSpecs(*fragments_, p, prepared_->param_specs)) names.push_back(spec.name);
  PCP_ASSIGN_OR_RETURN(fragment_update_,
                       EncodeUpdate(before, &after, names, &fragment_feedback_[static_cast<size_t>(p)]));
  fragment_update_round_ = round;
  return ScatterFragment(*fragments_, p, after, next);
}

absl::StatusOr<std::shared_ptr<const ChunkedList>> JobRun::ChunksOf(const std::vector<Tensor>& values,
                                                                     const std::vector<std::string>& names,
                                                                     codec::Codec codec) {
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < values.size(); ++i) named.push_back({names[i], values[i]});
  PCP_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkedList> list,
                       ChunkedList::Create(std::move(named), ChunkOptions{.chunk_bytes = ctx_.config->chunk_bytes, .codec = codec}));
  metrics::CountCodecSeconds(metrics::kShepherdCodecSecondsTotal, codec, metrics::CodecOp::kEncode, list->codec_seconds());
  return list;
}

absl::StatusOr<std::shared_ptr<const ChunkedList>> JobRun::ThetaChunks() {
  if (theta_chunks_ == nullptr) {
    PCP_ASSIGN_OR_RETURN(theta_chunks_, ChunksOf(theta_, prepared_->param_names, codec::Codec::kF32));
  }
  return theta_chunks_;
}

absl::StatusOr<std::vector<Tensor>> JobRun::EncodeUpdate(const std::vector<Tensor>& before, std::vector<Tensor>* next,
                                                         const std::vector<std::string>& names,
                                                         std::vector<codec::ErrorFeedback>* feedback) {
  const codec::CompressionOptions& compression = prepared_->config.diloco.compression;
  const metrics::CodecTimer timer(metrics::kShepherdCodecSecondsTotal, compression.down, metrics::CodecOp::kEncode);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < before.size(); ++i) {
    const size_t n = static_cast<size_t>(before[i].num_elements());
    // The exact update, plus what earlier encodings lost.
    Tensor input = (*next)[i].Clone();
    float* x = input.data<float>();
    const float* from = before[i].data<float>();
    for (size_t k = 0; k < n; ++k) x[k] -= from[k];
    if (compression.FeedbackDown()) {
      PCP_RETURN_IF_ERROR((*feedback)[i].Compensate(compression.down, absl::MakeSpan(x, n)));
    }
    // What every worker will decode, applied here the same way.
    const std::string bytes = codec::Encode(compression.down, absl::MakeConstSpan(x, n));
    Tensor decoded(DType::kF32, input.shape());
    PCP_RETURN_IF_ERROR(codec::Decode(bytes, absl::MakeSpan(decoded.data<float>(), n)));
    Tensor replica = before[i].Clone();
    diloco::ApplyUpdate(absl::MakeSpan(replica.data<float>(), n), absl::MakeConstSpan(decoded.data<float>(), n));
    if (!diloco::AllFinite(absl::MakeConstSpan(replica.data<float>(), n))) {
      return absl::FailedPreconditionError(absl::StrCat("θ of '", names[i], "' is not finite after the decoded update"));
    }
    (*next)[i] = std::move(replica);
    inputs.push_back(std::move(input));
  }
  return inputs;
}

}  // namespace pcp::shepherd
