#include "pcp/netem/shaper.h"

#include <algorithm>
#include <cmath>

namespace pcp::netem {
namespace {

constexpr size_t kMinBurstBytes = 16 * 1024;
constexpr double kBurstSeconds = 0.005;
constexpr double kQuantumSeconds = 0.001;
constexpr double kMinQuantumBytes = 1500;  // one Ethernet frame
constexpr size_t kMinBufferBytes = 1 << 20;
constexpr size_t kUnlimitedBufferBytes = 16 << 20;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

size_t DefaultBurstBytes(double rate_bytes_per_s) {
  return std::max(kMinBurstBytes, static_cast<size_t>(rate_bytes_per_s * kBurstSeconds));
}

size_t BufferBytes(const LinkShape& shape) {
  if (shape.rate_bytes_per_s <= 0) return kUnlimitedBufferBytes;
  const size_t burst = shape.burst_bytes > 0 ? shape.burst_bytes : DefaultBurstBytes(shape.rate_bytes_per_s);
  const double bdp = shape.rate_bytes_per_s * Seconds(shape.delay);
  return std::max(kMinBufferBytes, static_cast<size_t>(2 * bdp) + burst);
}

Shaper::Shaper(const LinkShape& shape, Clock::time_point now) : shape_(shape), refilled_(now) {
  if (shape_.rate_bytes_per_s > 0) {
    if (shape_.burst_bytes == 0) shape_.burst_bytes = DefaultBurstBytes(shape_.rate_bytes_per_s);
    quantum_ = std::min(static_cast<double>(shape_.burst_bytes),
                        std::max(kMinQuantumBytes, shape_.rate_bytes_per_s * kQuantumSeconds));
    tokens_ = static_cast<double>(shape_.burst_bytes);
  }
}

void Shaper::Arrive(size_t n, Clock::time_point now) {
  if (n == 0) return;
  const Clock::time_point ready = now + shape_.delay;
  // Same release time as the newest batch (no delay, or one clock tick): one batch.
  if (batches_.size() > ready_batches_ && batches_.back().ready == ready) {
    batches_.back().bytes += n;
  } else {
    batches_.push_back({ready, n});
  }
  pending_ += n;
}

void Shaper::Refill(Clock::time_point now) {
  if (shape_.rate_bytes_per_s <= 0 || now <= refilled_) return;
  tokens_ =
      std::min(static_cast<double>(shape_.burst_bytes), tokens_ + shape_.rate_bytes_per_s * Seconds(now - refilled_));
  refilled_ = now;
}

size_t Shaper::ReadyBytes(Clock::time_point now) {
  while (ready_batches_ < batches_.size() && batches_[ready_batches_].ready <= now) {
    ready_bytes_ += batches_[ready_batches_].bytes;
    ++ready_batches_;
  }
  return ready_bytes_;
}

size_t Shaper::Threshold(size_t ready) const { return std::min(ready, static_cast<size_t>(std::ceil(quantum_))); }

size_t Shaper::Sendable(Clock::time_point now) {
  const size_t ready = ReadyBytes(now);
  if (ready == 0) return 0;
  if (shape_.rate_bytes_per_s <= 0) return ready;
  Refill(now);
  const auto whole = static_cast<size_t>(tokens_);
  if (whole < Threshold(ready)) return 0;
  return std::min(ready, whole);
}

void Shaper::Sent(size_t n) {
  n = std::min(n, ready_bytes_);
  if (shape_.rate_bytes_per_s > 0) tokens_ -= static_cast<double>(n);
  pending_ -= n;
  ready_bytes_ -= n;
  while (n > 0) {
    Batch& front = batches_.front();
    const size_t take = std::min(n, front.bytes);
    front.bytes -= take;
    n -= take;
    if (front.bytes == 0) {
      batches_.pop_front();
      --ready_batches_;
    }
  }
}

std::optional<Clock::time_point> Shaper::NextChange(Clock::time_point now) {
  if (pending_ == 0) return std::nullopt;
  const size_t ready = ReadyBytes(now);
  if (ready == 0) return batches_[ready_batches_].ready;
  if (shape_.rate_bytes_per_s <= 0) return std::nullopt;
  Refill(now);
  const double missing = static_cast<double>(Threshold(ready)) - tokens_;
  if (missing <= 0) return std::nullopt;
  // Rounded up to the next microsecond, so that waking then finds the tokens there.
  const auto wait = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(missing / shape_.rate_bytes_per_s) + std::chrono::microseconds(1));
  return now + wait;
}

}  // namespace pcp::netem
