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
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "packet/link_log.hh"
#include "packet/packet_ring.hh"
#include "util/clock.hh"
#include "util/random.hh"

// A value that varies over time: a delay (in nanoseconds) or a loss probability (in parts per
// 10^9), read from a trace file of milliseconds or probabilities.
struct TimeSeries {
  struct Point {
    Nanos time;
    int64_t value;
  };
  std::vector<Point> points;  // times increasing from 0
  Nanos period = 0;           // > 0: the trace's length; times are taken modulo it unless `once`
  bool linear = false;
  bool once = false;
  std::string name;  // the file, for messages

  // The value at `elapsed` since the start (binary search: no allocation).
  int64_t at(Nanos elapsed) const;
};
using DelayTrace = TimeSeries;

constexpr size_t kMaxDelayTracePoints = 10'000'000;
constexpr double kMaxDelayTraceMs = 3'600'000;  // an hour, as a destination's delay

// What a trace's values are: their bound, their unit's size in the series (1e6: milliseconds
// as nanoseconds), what an error calls them, and the option that gives a one-value file's
// interval.
struct TimeSeriesKind {
  double max;
  double scale;
  std::string what;  // "a number of milliseconds from 0 to 3600000"
  std::string interval_option;
};
const TimeSeriesKind& delay_trace_kind();
const TimeSeriesKind& loss_trace_kind();

// Parses a trace file's text. interval_ms > 0: one value per line at that interval; 0: the
// timestamped format (a file of single values then needs an interval: the error says so).
// Errors (a UserError) name the file and the line.
TimeSeries parse_time_series(const std::string& text, const std::string& name, double interval_ms,
                             const TimeSeriesKind& kind);
inline DelayTrace parse_delay_trace(const std::string& text, const std::string& name, double interval_ms) {
  return parse_time_series(text, name, interval_ms, delay_trace_kind());
}

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

// Reordering and duplication (mm-delay --reorder, --duplicate): with probability `probability` a
// packet jumps ahead of the `gap` packets before it (leaving just before the gap-th one
// before it, so that it is `gap` places early: 1 is an adjacent swap), if that packet is still
// queued (like netem's reorder, it needs packets to jump over); with probability `duplicate`
// a packet leaves twice, the copy right after it. Seeded.
struct Reordering {
  double probability = 0;
  uint32_t gap = 1;
  double duplicate = 0;
  uint64_t seed = 1;
  bool any() const { return probability > 0 || duplicate > 0; }
};
constexpr uint32_t kMaxReorderGap = 64;

// The arrival times of a queue's packets, in its ring's order: what a log's departures need
// where the ring's own time is when a packet leaves. Grows by doubling, as the ring does.
class ArrivalFifo {
 public:
  explicit ArrivalFifo(size_t capacity = 0) : times_(capacity ? std::bit_ceil(capacity) : 0) {}
  void push(Nanos t) {
    if (size_ == times_.size()) grow();
    times_[(head_ + size_) & (times_.size() - 1)] = t;
    size_++;
  }
  Nanos at(size_t i) const { return times_[(head_ + i) & (times_.size() - 1)]; }  // 0: the oldest
  void pop() {
    head_ = (head_ + 1) & (times_.size() - 1);
    size_--;
  }
  size_t size() const { return size_; }

 private:
  void grow() {
    std::vector<Nanos> bigger(times_.empty() ? 1024 : 2 * times_.size());
    for (size_t i = 0; i < size_; i++) bigger[i] = at(i);
    times_.swap(bigger);
    head_ = 0;
  }
  std::vector<Nanos> times_;
  size_t head_ = 0, size_ = 0;
};

// mm-delay's queue with a varying delay and jitter (one direction). Every wire packet gets its
// own delay, drawn as it arrives.
class VaryingDelayQueue {
 public:
  static constexpr bool kWholeSuperPackets = false;
  // `constant` is the delay where `trace` has no points.
  // log: where arrivals and departures go too (--uplink-log, --meter-*), or nullptr.
  VaryingDelayQueue(Nanos constant, DelayTrace trace, Jitter jitter, bool overtake, Nanos start,
                    Reordering reordering = {}, LinkEventRing* log = nullptr)
      : constant_(constant),
        trace_(std::move(trace)),
        jitter_(std::move(jitter)),
        overtake_(overtake),
        reordering_(reordering),
        any_order_(overtake || reordering.probability > 0),
        random_(reordering.seed),
        start_(start),
        copy_(reordering.duplicate > 0 ? new uint8_t[kMaxPacket] : nullptr),
        log_(log),
        arrivals_(log ? 16384 : 0) {}

  std::span<uint8_t> reserve() {
    reserved_ = ring_.reserve();
    return reserved_;
  }
  void commit(Nanos now, uint32_t length, uint32_t meta) {
    const Nanos base = trace_.points.empty() ? constant_ : trace_.at(now - start_);  // nanoseconds
    Nanos leave = now + std::max<Nanos>(0, base + jitter_.draw());
    if (!overtake_) leave = std::max(leave, last_);
    last_ = std::max(last_, leave);
    if (reordering_.probability > 0) {
      // Ahead of the gap-th packet before it, if that one has not left yet.
      const Nanos ahead = departures_[(count_ + kMaxReorderGap - reordering_.gap) % kMaxReorderGap];
      if (count_ >= reordering_.gap && ahead > now && random_.bernoulli(reordering_.probability))
        leave = std::min(leave, ahead - 1);
      departures_[count_ % kMaxReorderGap] = leave;
      count_++;
    }
    const bool twice = reordering_.duplicate > 0 && length <= kMaxPacket && random_.bernoulli(reordering_.duplicate);
    if (twice) std::copy_n(reserved_.data(), length, copy_.get());
    ring_.commit(leave, length, meta);  // the ring's time: when the packet leaves
    if (log_) {
      log_->push({now, 0, length, 1, '+'});
      arrivals_.push(now);
    }
    if (twice) {  // the copy arrived with it (the log has one arrival and two departures)
      std::copy_n(copy_.get(), length, ring_.reserve().data());
      ring_.commit(leave, length, meta);
      if (log_) arrivals_.push(now);
    }
    next_ = std::min(next_, leave);
  }
  Nanos next_departure() const {
    if (ring_.empty()) return kNever;
    return any_order_ ? next_ : ring_.front().arrival;
  }
  template <class Send>
  void release(Nanos now, Send&& send) {
    if (!any_order_) {
      while (!ring_.empty() && ring_.front().arrival <= now) {
        send(ring_.front_data(), ring_.front().meta);
        if (log_) log_departure(now, 0, ring_.front().length);
        ring_.pop();
        if (log_) arrivals_.pop();
      }
      next_ = ring_.empty() ? kNever : ring_.front().arrival;
      return;
    }
    // In any order: whatever is due leaves in the order of departure (ties in arrival order),
    // wherever it is in the ring; a packet that left is marked, and the ring's front is freed
    // once it has left. A pass over the queue per departure time.
    while (!ring_.empty() && next_ <= now) {
      const Nanos due = next_;
      Nanos following = kNever;
      size_t position = 0;
      ring_.for_each([&](PacketRing::Record& r, std::span<const uint8_t> data) {
        const size_t i = position++;
        if (r.arrival == kLeft) return;
        if (r.arrival == due) {
          send(data, r.meta);
          if (log_) log_departure(now, i, r.length);
          r.arrival = kLeft;
        } else {
          following = std::min(following, r.arrival);
        }
      });
      while (!ring_.empty() && ring_.front().arrival == kLeft) {
        ring_.pop();
        if (log_) arrivals_.pop();
      }
      next_ = following;
    }
    if (ring_.empty()) next_ = kNever;
  }
  bool finished() const { return false; }

 private:
  void log_departure(Nanos now, size_t position, uint32_t length) {
    log_->push({now, arrivals_.at(position), length, 1, '-'});
  }
  static constexpr Nanos kLeft = -1;
  static constexpr uint32_t kMaxPacket = 65536;
  Nanos constant_;
  DelayTrace trace_;
  Jitter jitter_;
  bool overtake_;
  Reordering reordering_;
  bool any_order_;  // packets may leave out of order: overtaking or reordering
  Random random_;
  Nanos start_;
  Nanos last_ = 0;                         // the latest departure so far
  Nanos next_ = kNever;                    // the earliest departure queued
  Nanos departures_[kMaxReorderGap] = {};  // reordering: the last packets' departures
  uint64_t count_ = 0;
  std::span<uint8_t> reserved_;
  std::unique_ptr<uint8_t[]> copy_;  // duplication: the packet, while the ring makes room for its copy
  LinkEventRing* log_;
  ArrivalFifo arrivals_;  // with a log: when each queued packet arrived
  PacketRing ring_{64 * 1024 * 4};
};
