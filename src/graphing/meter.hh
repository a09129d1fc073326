// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The live meters of mm-link and mm-meter (--meter-*): what one direction of a shell's link
// carried, kept in slots of a few milliseconds, and the charts drawn from it with the code
// and the look of mm-throughput-graph and mm-delay-graph.
//
// The ferry threads hand their events over through the lock-free LinkEventRing that the link
// logs use (a few bytes per packet: no lock, no system call, no allocation). The ferry's main
// thread drains the ring into a LinkMeter every 20 ms; the drawing thread builds its charts
// from the meter under the meter's lock, which is held for a drain or a chart, never per packet.
#include <array>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graphing/chart.hh"
#include "packet/link_log.hh"
#include "packet/trace.hh"
#include "util/clock.hh"

// Packets' delays in classes: one per millisecond below 64 ms, then 192 classes growing by 5 %
// up to 1000 s (a class is about 2 pixels high on the delay chart's logarithmic axis), so that
// a slot keeps every delay its packets had, to the chart's resolution, in 32 bytes.
inline constexpr size_t kDelayClasses = 256;
size_t delay_class(double ms);
double delay_class_value(size_t delay_class);  // the delay a class is drawn at

// One slot of time: what the link offered and carried in it.
struct MeterSlot {
  double capacity_bytes = 0, arrived_bytes = 0, departed_bytes = 0, dropped_packets = 0;
  double marked_bytes = 0, marked_packets = 0;  // CE marks (ECN)
  double earliest_departure_ms = INFINITY;      // of the packets that arrived in this slot
  std::bitset<kDelayClasses> delays;            // the classes of the delays of the packets that left in it
  std::bitset<kDelayClasses> mark_delays;       // the delays at which the queue marked CE in it (DelaySource::marks)
  void merge(const MeterSlot& other);
};

// Slots of one direction over time, in bounded memory: a Window keeps the latest `capacity`
// slots (the live window's), a WholeRun doubles its slots' width when full (the files').
class MeterSeries {
 public:
  enum class Mode { Window, WholeRun };
  MeterSeries(Mode mode, double slot_ms, size_t capacity);

  // Events, in time order, ms since the shell started. Those before the first slot kept are
  // ignored (a departure from the window's past, in a Window).
  void arrival(double ms, double bytes);
  void departure(double ms, double bytes, double arrival_ms, double delay_ms);
  void drop(double ms, double packets);
  void mark(double ms, double packets, double bytes);
  // A mark's dot at the delay of the first packet to leave at or after it (DelaySource::marks).
  void mark_delay(double ms, double delay_ms);
  // The link's capacity from covered_ms() up to `ms`: bytes_until(t) is the bytes offered
  // from the start up to t. Also moves covered_ms() to `ms`.
  template <class BytesUntil>
  void advance(double ms, BytesUntil&& bytes_until) {
    if (ms <= covered_ms_) return;
    double from = std::max(covered_ms_, first_ms_);
    double offered = bytes_until(from);
    while (from < ms) {
      const double boundary = std::min(ms, slot_start(from) + slot_ms_);
      const double next = bytes_until(boundary);
      if (MeterSlot* s = at(from)) s->capacity_bytes += next - offered;
      offered = next;
      from = boundary;
    }
    covered_ms_ = ms;
    at(ms);  // the slots up to now exist, even empty
  }

  // Where the first slot starts (the first event's millisecond, as a log's bins start at its
  // first line); only before any slot exists.
  void begin(double ms) {
    if (count_ == 0) first_ms_ = covered_ms_ = ms;
  }
  size_t size() const { return count_; }
  bool full() const { return count_ == slots_.size(); }
  const MeterSlot& slot(size_t i) const { return slots_[(head_ + i) % slots_.size()]; }
  double slot_ms() const { return slot_ms_; }
  double start_ms(size_t i) const { return first_ms_ + static_cast<double>(i) * slot_ms_; }
  double covered_ms() const { return covered_ms_; }

 private:
  MeterSlot* at(double ms);  // the slot holding ms, made if need be; nullptr before the first
  double slot_start(double ms) const { return first_ms_ + std::floor((ms - first_ms_) / slot_ms_) * slot_ms_; }
  void compact();  // WholeRun: pairs of slots become one of twice the width

  Mode mode_;
  double slot_ms_;
  std::vector<MeterSlot> slots_;  // a ring of capacity slots
  size_t head_ = 0, count_ = 0;
  double first_ms_ = 0;  // start of slot(0)
  double covered_ms_ = 0;
};

// The signal delay (as mm-delay-graph defines it: at time t, how long until something sent at
// t or later arrives) at the start of each slot; NaN where no later packet has arrived yet.
std::vector<double> slot_signal_delays(const MeterSeries& series);

// What a meter's charts show: the live window's last seconds, or the whole run (the files).
enum class MeterScope { Live, WholeRun };

// One direction of a shell, metered: fed by the ferry's main thread, drawn by another.
class LinkMeter {
 public:
  static constexpr double kLiveWindowMs = 20'000;  // the live charts' time axis
  static constexpr double kLiveSlotMs = 20;
  static constexpr double kLiveBinMs = 200;  // the live throughput chart's bins
  static constexpr size_t kWholeRunSlots = 4096;
  static constexpr double kWholeRunFirstSlotMs = 10;

  // trace: the link's opportunities (nullptr for a shell without a link: no capacity).
  // title: the charts' title, e.g. "[delay 50 ms] [link 12Mbit/s up 12Mbit/s down] uplink".
  // pass_through: mm-meter's, where what arrives leaves at once (one line, "Traffic").
  LinkMeter(const Trace* trace, bool once, Nanos origin, std::string title, bool pass_through = false);

  // The ferry's main thread, once per drain: source(take) hands every event to take (the ring
  // draining, shared with a log writer), under one lock; then the capacity up to now.
  template <class Source>
  void feed(Source&& source, Nanos now) {
    std::lock_guard lock(mutex_);
    source([this](const LinkEvent& e) { add_locked(e); });
    advance_locked(now);
  }
  // One event (tests).
  void add(const LinkEvent& event);
  void advance(Nanos now);

  Chart throughput_chart(MeterScope scope) const;
  Chart delay_chart(MeterScope scope) const;
  const std::string& title() const { return title_; }

 private:
  void add_locked(const LinkEvent& event);
  void advance_locked(Nanos now);
  // Whole milliseconds since the start, as the log writes times: a meter's slots and the log's
  // bins of the same run hold the same events.
  double ms(Nanos t) const { return static_cast<double>((t - origin_) / kNanosPerMs); }
  double bytes_until(double ms) const;
  void begin_at(double ms);

  const Trace* trace_;
  bool once_;
  bool pass_through_;
  Nanos origin_;
  std::string title_;
  mutable std::mutex mutex_;
  MeterSeries live_{MeterSeries::Mode::Window, kLiveSlotMs,
                    static_cast<size_t>(kLiveWindowMs / kLiveSlotMs) + static_cast<size_t>(kLiveBinMs / kLiveSlotMs)};
  MeterSeries whole_{MeterSeries::Mode::WholeRun, kWholeRunFirstSlotMs, kWholeRunSlots};
  // Running totals, for the legend's means and 95th percentile.
  double arrived_bytes_ = 0, departed_bytes_ = 0, now_ms_ = 0;
  bool any_event_ = false;
  bool begun_ = false;  // the series start at the first event or opportunity
  double first_opportunity_ms_ = INFINITY;
  uint64_t departures_ = 0;
  double marked_bytes_ = 0;
  std::optional<double> pending_mark_ms_;  // a mark whose dot waits for the next departure
  std::array<uint64_t, kDelayClasses> delay_counts_{};
};

// A chart's y range eased towards the data's from frame to frame, so that the axis of a live
// chart grows and shrinks smoothly instead of jumping: quickly up (no point is clipped for
// long), slowly down.
class SmoothScale {
 public:
  // target_hi: the highest value to show (linear: from 0; log_y: with target_lo, both > 0).
  std::pair<double, double> next(double target_lo, double target_hi, bool log_y);

 private:
  bool started_ = false;
  double lo_ = 0, hi_ = 0;  // linear values, or log10 of them for a logarithmic axis
};
