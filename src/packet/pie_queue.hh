// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The pie queue discipline (mm-link --uplink-queue=pie): PIE, RFC 8033.
#include <cstdint>
#include <string>

#include "packet/fifo_discipline.hh"
#include "util/clock.hh"
#include "util/random.hh"

// PIE (RFC 8033): drops arriving packets with a probability steered every 15 ms by how far the
// queueing delay (the front packet's sojourn time) is from qdelay_ref, and how it moves.
// With ECN, an ECN-capable packet it would drop is marked CE and queued instead while the
// probability is at most 10 % (RFC 8033 §5.1). Admission is drop-tail.
class PieQueue final : public FifoDiscipline {
 public:
  PieQueue(QueueLimits limits, double qdelay_ref_ms, double max_burst_ms, bool ecn, uint64_t seed)
      : ecn_(ecn),
        limits_(limits),
        qdelay_ref_ms_(qdelay_ref_ms),
        max_burst_ms_(max_burst_ms),
        qdelay_ref_(ms_to_nanos(qdelay_ref_ms)),
        max_burst_(ms_to_nanos(max_burst_ms)),
        random_(seed),
        burst_allowance_(max_burst_) {}

  void enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) override;
  // For tests: the drop (or, up to 10 %, mark) probability.
  double drop_probability() const { return probability_; }
  std::string description() const override {
    return "pie [" + limits_.describe() + ", qdelay_ref=" + format_ms(qdelay_ref_ms_) +
           ", max_burst=" + format_ms(max_burst_ms_) + ", ecn=" + (ecn_ ? "1" : "0") + "]";
  }

 private:
  static constexpr Nanos kUpdate = 15 * kNanosPerMs;
  static constexpr double kAlpha = 0.125, kBeta = 1.25;  // per second of delay
  static constexpr double kMaxMarkProbability = 0.1;

  Nanos queue_delay(Nanos now) const { return ring_.empty() ? 0 : now - ring_.front().arrival; }

  bool should_drop() {
    if (burst_allowance_ > 0) return false;
    if (qdelay_old_ < qdelay_ref_ / 2 && probability_ < 0.2) return false;
    if (ring_.bytes() < 2 * kMtu) return false;
    return random_.bernoulli(probability_);
  }

  // Catches up on every 15 ms update period that has passed.
  void update(Nanos now);

  bool ecn_;
  QueueLimits limits_;
  double qdelay_ref_ms_, max_burst_ms_;
  Nanos qdelay_ref_, max_burst_;
  Random random_;
  double probability_ = 0;
  Nanos qdelay_old_ = 0;
  Nanos burst_allowance_;
  Nanos next_update_ = 0;
};
