// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The dualpi2 queue discipline (mm-link --uplink-queue=dualpi2): the coupled dual queue of
// RFC 9332 with the PI2 controller, as Linux's sch_dualpi2 defines its defaults and behaviour.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "packet/queue_discipline.hh"
#include "packet/queue_limits.hh"
#include "util/clock.hh"
#include "util/random.hh"

// DualPI2's parameters (Linux's names and defaults; times in ms, alpha and beta in Hz).
struct DualPi2Params {
  QueueLimits limits{0, 10000};     // packets in both queues (125 ms at 1 Gbit/s)
  double target_ms = 15;            // the classic queue's delay the PI controller aims at
  double tupdate_ms = 16;           // how often it updates its probability
  double alpha = 0.16, beta = 3.2;  // its gains: a 10 dB stability margin at a 100 ms round trip
  double step_thresh_ms = 1;        // L4S packets that waited longer are marked (the step)
  uint64_t min_qlen_step = 0;       // ... while the L4S queue holds more packets than this
  double coupling_factor = 2;       // k: L4S marking = k * p', classic = p'^2 (window fairness)
  uint32_t c_protection = 10;       // the classic queue's weight, in %, in the round robin
  bool drop_overload = true;        // when k * p' passes 1, drop L4S packets as classic (with p'^2)
  std::string describe() const;
};

// RFC 9332's DualQ: packets whose ECN field is ECT(1) or CE (L4S, RFC 9331) go to the L queue,
// the others to the classic (C) queue. Every tupdate, the PI2 controller moves the base
// probability p' by alpha * (qdelay - target) + beta * (qdelay - previous qdelay), qdelay being
// the larger of the two queues' head sojourn times. At dequeue, with at least two MTUs queued
// besides the packet: an L packet is marked CE with probability k * p' (the coupling; on
// overload, k * p' > 1, it is dropped with p'^2 instead, with drop_overload), a C packet is
// marked (ECT(0)) or dropped (not ECN-capable, or on overload) with p'^2; and an L packet that
// waited longer than step_thresh is marked (the step AQM for L4S senders' own control). A
// weighted round robin serves L first but gives C c_protection % of the bytes whenever both
// hold packets, so that classic traffic is never starved. Admission is drop-tail at the limit.
class DualPi2Queue final : public QueueDiscipline {
 public:
  DualPi2Queue(const DualPi2Params& params, uint64_t seed);

  std::span<uint8_t> reserve() override { return {scratch_.get(), kScratch}; }
  void enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) override;
  bool next(Nanos now, QueueEvents& events) override;
  const PacketRing::Record& front() const override { return current_->front(); }
  std::span<const uint8_t> front_data() const override { return current_->front_data(); }
  void pop() override {
    current_->pop();
    current_ = nullptr;
  }
  bool empty() const override { return l_.empty() && c_.empty(); }
  bool drops_when_dequeuing() const override { return true; }
  std::string description() const override { return "dualpi2 [" + params_.describe() + "]"; }

  // For tests: the controller's base probability p' (classic: p'^2, L4S: k * p').
  double base_probability() const { return probability_; }

 private:
  static constexpr size_t kScratch = 65536;
  enum class Verdict { Pass, Mark, Drop };

  void update(Nanos now);  // catches up on every tupdate that has passed
  Verdict verdict(bool l4s, bool ect, size_t backlog_besides);
  Nanos head_delay(const PacketRing& ring, Nanos now) const { return ring.empty() ? 0 : now - ring.front().arrival; }

  DualPi2Params params_;
  Nanos target_, tupdate_, step_thresh_;
  Random random_;
  PacketRing l_, c_;
  std::unique_ptr<uint8_t[]> scratch_{new uint8_t[kScratch]};
  PacketRing* current_ = nullptr;
  double probability_ = 0;  // p'
  Nanos previous_delay_ = 0;
  Nanos next_update_ = 0;
  int64_t credit_init_, credit_;  // the round robin's: L is served while it is at most 0
};
