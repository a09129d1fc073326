// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A one-way delay that varies over time (mm-delay --delay-trace), with jitter around it
// (--jitter), and the queue that applies them.
//
// A trace is either timestamped, one "TIME-MS DELAY-MS" per line (fractions allowed, times
// increasing, the first at 0), or one "DELAY-MS" per line at a fixed interval (the formats of
// ravinet/mahimahi PR #135 and LeoReplayer, read as they are: line i covers [i, i+1) intervals).
// Between points the delay steps (the default) or moves linearly. It repeats, or with `once`
// holds its last value after its end. The period of a timestamped trace is its last time (that
// line only closes the last step: for a smooth loop repeat the first delay there); of an
// interval trace, lines times interval. Time is counted from the shell's start.
//
// Order: by default no packet leaves before one that arrived earlier (Rattan's rule: when the
// delay drops, a packet waits behind its predecessors, so its delay is the larger of its own
// and its predecessor's remaining one). With overtaking (LeoReplayer's behaviour) each packet
// leaves at its own time, and packets reorder when the delay drops by more than their spacing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "packet/packet_ring.hh"
#include "util/clock.hh"
#include "util/random.hh"

struct DelayTrace {
  struct Point {
    Nanos time;
    Nanos delay;
  };
  std::vector<Point> points;  // times increasing from 0
  Nanos period = 0;           // > 0: the trace's length; times are taken modulo it unless `once`
  bool linear = false;
  bool once = false;
  std::string name;  // the file, for messages

  // The delay at `elapsed` since the start (binary search: no allocation).
  Nanos at(Nanos elapsed) const;
};

constexpr size_t kMaxDelayTracePoints = 10'000'000;
constexpr double kMaxDelayTraceMs = 3'600'000;  // an hour, as a destination's delay

// Parses a trace file's text. interval_ms > 0: one delay per line at that interval; 0: the
// timestamped format (a file of single values then needs an interval: the error says so).
// Errors (a UserError) name the file and the line.
DelayTrace parse_delay_trace(const std::string& text, const std::string& name, double interval_ms);

// Jitter: a random offset added to each packet's delay, drawn from a distribution with mean 0
// and standard deviation `sigma` (normal; uniform; paretonormal, netem's mix of three quarters
// normal and one quarter Pareto of shape 3, by quantiles), from a table of quantiles made once,
// so that a draw costs one uniform number and no allocation. The delay never goes below 0.
class Jitter {
 public:
  enum class Distribution { kNone, kNormal, kUniform, kParetoNormal };
  Jitter() = default;
  Jitter(Distribution distribution, Nanos sigma, uint64_t seed);
  Nanos draw() {
    if (distribution_ == Distribution::kNone) return 0;
    const double u = random_.uniform() * static_cast<double>(kTable - 1);
    const size_t i = static_cast<size_t>(u);
    const double f = u - static_cast<double>(i);
    const double z = table_[i] + (table_[i + 1 < kTable ? i + 1 : i] - table_[i]) * f;
    return static_cast<Nanos>(z * static_cast<double>(sigma_));
  }
  static const char* name(Distribution d);

 private:
  static constexpr size_t kTable = 4097;
  Distribution distribution_ = Distribution::kNone;
  Nanos sigma_ = 0;
  Random random_{1};
  std::vector<double> table_;  // standardised quantiles at i / (kTable - 1)
};

// mm-delay's queue with a varying delay and jitter (one direction). Every wire packet gets its
// own delay, drawn as it arrives.
class VaryingDelayQueue {
 public:
  static constexpr bool kWholeSuperPackets = false;
  // `constant` is the delay where `trace` has no points.
  VaryingDelayQueue(Nanos constant, DelayTrace trace, Jitter jitter, bool overtake, Nanos start)
      : constant_(constant), trace_(std::move(trace)), jitter_(std::move(jitter)), overtake_(overtake), start_(start) {}

  std::span<uint8_t> reserve() { return ring_.reserve(); }
  void commit(Nanos now, uint32_t length, uint32_t meta) {
    const Nanos base = trace_.points.empty() ? constant_ : trace_.at(now - start_);
    Nanos leave = now + std::max<Nanos>(0, base + jitter_.draw());
    if (!overtake_) {
      leave = std::max(leave, last_);
      last_ = leave;
    } else {
      next_ = std::min(next_, leave);
    }
    ring_.commit(leave, length, meta);  // the ring's time: when the packet leaves
  }
  Nanos next_departure() const {
    if (ring_.empty()) return kNever;
    return overtake_ ? next_ : ring_.front().arrival;
  }
  template <class Send>
  void release(Nanos now, Send&& send) {
    if (!overtake_) {
      while (!ring_.empty() && ring_.front().arrival <= now) {
        send(ring_.front_data(), ring_.front().meta);
        ring_.pop();
      }
      return;
    }
    // Overtaking: whatever is due leaves, wherever it is in the ring; a packet that left is
    // marked, and the ring's front is freed once it has left. A pass over the queue per release.
    if (ring_.empty() || next_ > now) return;
    Nanos next = kNever;
    ring_.for_each([&](PacketRing::Record& r, std::span<const uint8_t> data) {
      if (r.arrival == kLeft) return;
      if (r.arrival <= now) {
        send(data, r.meta);
        r.arrival = kLeft;
      } else {
        next = std::min(next, r.arrival);
      }
    });
    while (!ring_.empty() && ring_.front().arrival == kLeft) ring_.pop();
    next_ = next;
  }
  bool finished() const { return false; }

 private:
  static constexpr Nanos kLeft = -1;
  Nanos constant_;
  DelayTrace trace_;
  Jitter jitter_;
  bool overtake_;
  Nanos start_;
  Nanos last_ = 0;       // in order: the last packet's departure
  Nanos next_ = kNever;  // overtaking: the earliest departure queued
  PacketRing ring_{64 * 1024 * 4};
};
