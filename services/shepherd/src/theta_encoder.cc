#include "theta_encoder.h"

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"
#include "pcp/codec/encoded.h"
#include "pcp/diloco/replica.h"
#include "pcp/diloco/screening.h"
#include "pcp/metrics/codec_seconds.h"
#include "pcp/rpc/tensor_fragments.h"
#include "shepherd_metrics.h"

namespace pcp::shepherd {

ThetaEncoder::ThetaEncoder(codec::CompressionOptions compression, int64_t chunk_bytes,
                           std::vector<TensorSpec> param_specs, const diloco::FragmentPlan* fragments)
    : compression_(compression),
      chunk_bytes_(chunk_bytes),
      param_specs_(std::move(param_specs)),
      fragments_(fragments) {
  if (fragments_ == nullptr) {
    feedback_.resize(param_specs_.size());
  } else {
    for (int64_t p = 0; p < fragments_->fragments(); ++p)
      fragment_feedback_.emplace_back(fragments_->segments(p).size());
  }
}

std::vector<std::string> ThetaEncoder::NamesOf(const std::vector<TensorSpec>& specs) const {
  std::vector<std::string> names;
  for (const TensorSpec& spec : specs) names.push_back(spec.name);
  return names;
}

absl::StatusOr<std::shared_ptr<const ChunkedList>> ThetaEncoder::Full(const std::vector<Tensor>& theta) {
  if (full_ == nullptr) {
    PCP_ASSIGN_OR_RETURN(full_, ChunksOf(theta, NamesOf(param_specs_), codec::Codec::kF32));
  }
  return full_;
}

absl::Status ThetaEncoder::EncodeRound(uint64_t round, const std::vector<Tensor>& theta, std::vector<Tensor>* next) {
  if (compression_.down == codec::Codec::kF32) return absl::OkStatus();
  if (fragments_ == nullptr) {
    const std::vector<std::string> names = NamesOf(param_specs_);
    PCP_ASSIGN_OR_RETURN(std::vector<Tensor> input, EncodeUpdate(theta, next, names, &feedback_));
    PCP_ASSIGN_OR_RETURN(update_, ChunksOf(input, names, compression_.down));
    update_round_ = round;
    return absl::OkStatus();
  }
  const int64_t p = fragments_->FragmentOfRound(round);
  const std::vector<Tensor> before = GatherFragment(*fragments_, p, theta);
  std::vector<Tensor> after = GatherFragment(*fragments_, p, *next);
  PCP_ASSIGN_OR_RETURN(fragment_update_,
                       EncodeUpdate(before, &after, NamesOf(FragmentSpecs(*fragments_, p, param_specs_)),
                                    &fragment_feedback_[static_cast<size_t>(p)]));
  update_round_ = round;
  return ScatterFragment(*fragments_, p, after, next);
}

absl::StatusOr<FragmentChunks> ThetaEncoder::Fragment(uint64_t round, const std::vector<Tensor>& theta) {
  const int64_t p = fragments_->FragmentOfRound(round);
  const bool update = update_round_ == round;
  const std::vector<Tensor> values = update ? fragment_update_ : GatherFragment(*fragments_, p, theta);
  PCP_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkedList> chunks,
                       ChunksOf(values, NamesOf(FragmentSpecs(*fragments_, p, param_specs_)),
                                update ? compression_.down : codec::Codec::kF32));
  return FragmentChunks{.chunks = std::move(chunks), .update = update};
}

absl::StatusOr<std::shared_ptr<const ChunkedList>> ThetaEncoder::ChunksOf(const std::vector<Tensor>& values,
                                                                          const std::vector<std::string>& names,
                                                                          codec::Codec codec) const {
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < values.size(); ++i) named.push_back({names[i], values[i]});
  PCP_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkedList> list,
                       ChunkedList::Create(std::move(named), ChunkOptions{.chunk_bytes = chunk_bytes_,
                                                                          .codec = codec,
                                                                          .density = compression_.DownDensity()}));
  metrics::CountCodecSeconds(metrics::kShepherdCodecSecondsTotal, codec, metrics::CodecOp::kEncode,
                             list->codec_seconds());
  return list;
}

absl::StatusOr<std::vector<Tensor>> ThetaEncoder::EncodeUpdate(const std::vector<Tensor>& before,
                                                               std::vector<Tensor>* next,
                                                               const std::vector<std::string>& names,
                                                               std::vector<codec::ErrorFeedback>* feedback) const {
  const metrics::CodecTimer timer(metrics::kShepherdCodecSecondsTotal, compression_.down, metrics::CodecOp::kEncode);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < before.size(); ++i) {
    const size_t n = static_cast<size_t>(before[i].num_elements());
    // The exact update, plus what earlier encodings lost.
    Tensor input = (*next)[i].Clone();
    float* x = input.data<float>();
    const float* from = before[i].data<float>();
    for (size_t k = 0; k < n; ++k) x[k] -= from[k];
    if (compression_.FeedbackDown()) {
      PCP_RETURN_IF_ERROR(
          (*feedback)[i].Compensate(compression_.down, absl::MakeSpan(x, n), 0, compression_.DownDensity()));
    }
    // What every worker will decode, applied here the same way (a sparse codec's blocks are
    // encoded alone, so the whole tensor decodes as its chunks do). down_mode union: density 1
    // keeps every nonzero of the update (a sparse codec never keeps a zero), no error feedback.
    PCP_ASSIGN_OR_RETURN(const std::string bytes,
                         codec::Encode(compression_.down, absl::MakeConstSpan(x, n), 0, compression_.DownDensity()));
    Tensor decoded(DType::kF32, input.shape());
    PCP_RETURN_IF_ERROR(codec::Decode(bytes, absl::MakeSpan(decoded.data<float>(), n)));
    Tensor replica = before[i].Clone();
    diloco::ApplyUpdate(absl::MakeSpan(replica.data<float>(), n), absl::MakeConstSpan(decoded.data<float>(), n));
    if (!diloco::AllFinite(absl::MakeConstSpan(replica.data<float>(), n))) {
      return absl::FailedPreconditionError(
          absl::StrCat("θ of '", names[i], "' is not finite after the decoded update"));
    }
    (*next)[i] = std::move(replica);
    inputs.push_back(std::move(input));
  }
  return inputs;
}

}  // namespace pcp::shepherd
