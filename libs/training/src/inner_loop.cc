#include "pcp/training/inner_loop.h"

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"

namespace pcp {
namespace {

absl::Status CheckType(const Tensor& t, const TensorType& want, absl::string_view what) {
  if (t.dtype() != want.dtype || t.shape() != want.shape) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": expected ", want.ToString(), ", got ", t.TypeString()));
  }
  return absl::OkStatus();
}

Tensor ScalarF32(float v) { return Tensor::Scalar<float>(v); }

}  // namespace

absl::StatusOr<std::unique_ptr<InnerLoop>> InnerLoop::Create(Backend& backend, const Function& step_fn) {
  const int n_in = static_cast<int>(step_fn.params.size());
  const int n_out = static_cast<int>(step_fn.results.size());
  if ((n_in - 4) % 3 != 0 || n_in < 7 || n_out != n_in - 3) {
    return absl::InvalidArgumentError(absl::StrCat("function @", step_fn.name,
                                                   " does not have the train_step signature (", n_in, " parameters, ",
                                                   n_out, " results)"));
  }
  std::unique_ptr<InnerLoop> loop(new InnerLoop(backend));
  loop->num_params_ = (n_in - 4) / 3;
  const int p = loop->num_params_;
  for (int i = 0; i < p; ++i) loop->param_names_.push_back(step_fn.param_names[i]);
  PCP_ASSIGN_OR_RETURN(loop->exe_, backend.Compile(step_fn), _ << "compiling @" << step_fn.name);
  for (int i = 0; i < n_in; ++i) {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, backend.Allocate(step_fn.type(step_fn.params[i])));
    loop->args_.push_back(b.get());
    loop->buffers_.push_back(std::move(b));
  }
  PCP_ASSIGN_OR_RETURN(loop->loss_, backend.Allocate(step_fn.type(step_fn.results.back())));
  // Results 0..3p-1 overwrite params, m and v in place.
  for (int i = 0; i < 3 * p; ++i) {
    if (step_fn.type(step_fn.results[i]) != step_fn.type(step_fn.params[i])) {
      return absl::InvalidArgumentError(absl::StrCat("train_step result ", i, " does not match parameter ", i));
    }
    loop->results_.push_back(loop->args_[i]);
  }
  loop->results_.push_back(loop->loss_.get());
  return loop;
}

absl::Status InnerLoop::CopyInAll(const std::vector<Tensor>& tensors, size_t first) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    Buffer& dst = *args_[first + i];
    PCP_RETURN_IF_ERROR(CheckType(tensors[i], dst.type(), absl::StrCat("state tensor ", first + i)));
    PCP_RETURN_IF_ERROR(backend_.CopyIn(tensors[i], dst));
  }
  return absl::OkStatus();
}

absl::Status InnerLoop::LoadParamsKeepOptimizer(const std::vector<Tensor>& params) {
  if (static_cast<int>(params.size()) != num_params_) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", num_params_, " parameters, got ", params.size()));
  }
  for (int i = 0; i < num_params_; ++i) {
    PCP_RETURN_IF_ERROR(CheckType(params[i], args_[i]->type(), param_names_[i]));
  }
  return CopyInAll(params, 0);
}

absl::Status InnerLoop::SetParams(const std::vector<Tensor>& params) {
  PCP_RETURN_IF_ERROR(LoadParamsKeepOptimizer(params));
  std::vector<Tensor> zeros;
  for (int i = num_params_; i < 3 * num_params_; ++i) {
    zeros.emplace_back(args_[i]->type().dtype, args_[i]->type().shape);
  }
  step_ = 0;
  return CopyInAll(zeros, num_params_);
}

absl::StatusOr<std::vector<Tensor>> InnerLoop::GetParams() const {
  std::vector<Tensor> out;
  for (int i = 0; i < num_params_; ++i) {
    PCP_ASSIGN_OR_RETURN(Tensor t, backend_.CopyOut(*args_[i]));
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> InnerLoop::GetOptimizerState() const {
  std::vector<Tensor> out;
  for (int i = num_params_; i < 3 * num_params_; ++i) {
    PCP_ASSIGN_OR_RETURN(Tensor t, backend_.CopyOut(*args_[i]));
    out.push_back(std::move(t));
  }
  return out;
}

absl::Status InnerLoop::SetOptimizerState(const std::vector<Tensor>& m_then_v, int64_t step) {
  if (static_cast<int>(m_then_v.size()) != 2 * num_params_) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", 2 * num_params_, " optimizer tensors (m then v), got ", m_then_v.size()));
  }
  if (step < 0) return absl::InvalidArgumentError("optimizer step must be >= 0");
  PCP_RETURN_IF_ERROR(CopyInAll(m_then_v, num_params_));
  step_ = step;
  return absl::OkStatus();
}

absl::StatusOr<float> InnerLoop::Step(const Batch& batch, float lr) {
  const size_t base = 3 * static_cast<size_t>(num_params_);
  ++step_;
  PCP_RETURN_IF_ERROR(backend_.CopyIn(ScalarF32(static_cast<float>(step_)), *args_[base]));
  PCP_RETURN_IF_ERROR(backend_.CopyIn(ScalarF32(lr), *args_[base + 1]));
  PCP_RETURN_IF_ERROR(CheckType(batch.x, args_[base + 2]->type(), "tokens"));
  PCP_RETURN_IF_ERROR(CheckType(batch.y, args_[base + 3]->type(), "targets"));
  PCP_RETURN_IF_ERROR(backend_.CopyIn(batch.x, *args_[base + 2]));
  PCP_RETURN_IF_ERROR(backend_.CopyIn(batch.y, *args_[base + 3]));
  PCP_RETURN_IF_ERROR(exe_->Run(args_, results_), _ << "train_step " << step_);
  PCP_ASSIGN_OR_RETURN(Tensor loss, backend_.CopyOut(*loss_));
  return loss.data<float>()[0];
}

std::vector<Buffer*> InnerLoop::param_buffers() const {
  return std::vector<Buffer*>(args_.begin(), args_.begin() + num_params_);
}

absl::StatusOr<std::unique_ptr<Evaluator>> Evaluator::Create(InnerLoop& loop, const Function& fwd) {
  std::unique_ptr<Evaluator> e(new Evaluator(loop.backend()));
  e->params_ = loop.param_buffers();
  PCP_RETURN_IF_ERROR(e->Compile(fwd));
  return e;
}

absl::StatusOr<std::unique_ptr<Evaluator>> Evaluator::Create(Backend& backend, const Function& fwd) {
  std::unique_ptr<Evaluator> e(new Evaluator(backend));
  if (fwd.params.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("function @", fwd.name, " must take parameters plus tokens and targets"));
  }
  // The parameters' buffers come with SetParams and go with ReleaseParams.
  for (size_t i = 0; i + 2 < fwd.params.size(); ++i) e->own_types_.push_back(fwd.type(fwd.params[i]));
  PCP_RETURN_IF_ERROR(e->Compile(fwd));
  return e;
}

absl::Status Evaluator::Compile(const Function& fwd) {
  const bool own = !own_types_.empty();
  const int p = static_cast<int>(own ? own_types_.size() : params_.size());
  if (static_cast<int>(fwd.params.size()) != p + 2 || fwd.results.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("function @", fwd.name, " must take ", p,
                                                   " parameters plus tokens and targets and return the loss"));
  }
  for (int i = 0; !own && i < p; ++i) {
    if (fwd.type(fwd.params[i]) != params_[i]->type()) {
      return absl::InvalidArgumentError(
          absl::StrCat("@", fwd.name, " parameter ", i, " does not match the train step"));
    }
  }
  PCP_ASSIGN_OR_RETURN(exe_, backend_.Compile(fwd), _ << "compiling @" << fwd.name);
  const TensorType& tok = fwd.type(fwd.params[p]);
  PCP_ASSIGN_OR_RETURN(tokens_, backend_.Allocate(tok));
  PCP_ASSIGN_OR_RETURN(targets_, backend_.Allocate(fwd.type(fwd.params[p + 1])));
  for (ValueId r : fwd.results) {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, backend_.Allocate(fwd.type(r)));
    outputs_.push_back(std::move(b));
  }
  if (tok.rank() != 2) return absl::InvalidArgumentError("tokens must be [batch, block]");
  batch_ = tok.shape[0];
  block_ = tok.shape[1];
  return absl::OkStatus();
}

absl::Status Evaluator::SetParams(const std::vector<Tensor>& params) {
  if (own_types_.empty()) return absl::FailedPreconditionError("this evaluator runs on an inner loop's parameters");
  if (params.size() != own_types_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(params.size(), " parameters, the evaluator takes ", own_types_.size()));
  }
  if (own_params_.empty()) {
    for (const TensorType& type : own_types_) {
      PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, backend_.Allocate(type));
      params_.push_back(b.get());
      own_params_.push_back(std::move(b));
    }
  }
  for (size_t i = 0; i < params.size(); ++i)
    PCP_RETURN_IF_ERROR(backend_.CopyIn(params[i], *own_params_[i]), _ << "parameter " << i);
  return absl::OkStatus();
}

void Evaluator::ReleaseParams() {
  if (own_types_.empty()) return;
  params_.clear();
  own_params_.clear();
}

absl::StatusOr<float> Evaluator::Loss(const Batch& batch) {
  if (params_.empty() && !own_types_.empty())
    return absl::FailedPreconditionError("the evaluator has no parameters (SetParams)");
  PCP_RETURN_IF_ERROR(backend_.CopyIn(batch.x, *tokens_));
  PCP_RETURN_IF_ERROR(backend_.CopyIn(batch.y, *targets_));
  std::vector<Buffer*> args = params_;
  args.push_back(tokens_.get());
  args.push_back(targets_.get());
  std::vector<Buffer*> results;
  for (auto& b : outputs_) results.push_back(b.get());
  PCP_RETURN_IF_ERROR(exe_->Run(args, results));
  PCP_ASSIGN_OR_RETURN(Tensor loss, backend_.CopyOut(*outputs_[0]));
  return loss.data<float>()[0];
}

absl::StatusOr<float> Evaluator::MeanLoss(const TokenSequence& data, int64_t iters, uint64_t seed) {
  if (iters <= 0) return absl::InvalidArgumentError("eval iters must be positive");
  BatchSampler sampler(seed);
  double sum = 0;
  for (int64_t i = 0; i < iters; ++i) {
    PCP_ASSIGN_OR_RETURN(Batch b, sampler.Next(data, batch_, block_));
    PCP_ASSIGN_OR_RETURN(float l, Loss(b));
    sum += l;
  }
  return static_cast<float>(sum / static_cast<double>(iters));
}

}  // namespace pcp
