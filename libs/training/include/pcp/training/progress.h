// Remaining-time estimates for long loops: an exponential moving average of step times.
//
//   ProgressMeter meter(/*total_steps=*/2000);
//   meter.Advance(step_ms);
//   meter.Eta();    // "1m32s"
#ifndef PCP_TRAINING_PROGRESS_H_
#define PCP_TRAINING_PROGRESS_H_

#include <cstdint>
#include <string>

namespace pcp {

class ProgressMeter {
 public:
  explicit ProgressMeter(int64_t total_steps) : total_(total_steps) {}
  // Records one finished step that took `ms` milliseconds.
  void Advance(double ms);
  int64_t done() const { return done_; }
  // Estimated time for the remaining steps, as "2h03m", "1m32s" or "12s" (FormatDuration).
  std::string Eta() const;
  // Seconds remaining, by the moving average.
  double EtaSeconds() const;

 private:
  int64_t total_;
  int64_t done_ = 0;
  double avg_ms_ = 0;
};

}  // namespace pcp

#endif  // PCP_TRAINING_PROGRESS_H_
