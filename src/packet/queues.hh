// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The queues of the simple shells. A queue is what a Ferry needs (see ferry.hh):
//   std::span<uint8_t> reserve();                  space for the next packet read
//   void commit(Nanos now, uint32_t length, uint32_t meta);   that packet arrived at `now`
//                                                  (meta: its offload state, packet/offload.hh)
//   Nanos next_departure() const;                  when release() next has work (kNever: idle)
//   template <class Send> void release(Nanos now, Send&& send);   hands every due packet to
//                                                  send(std::span<const uint8_t>, uint32_t meta)
//   bool finished() const;                         true once the shell should end (traces exhausted)
//   static constexpr bool kWholeSuperPackets;      true: the queue takes a TCP super-packet
//                                                  whole (mm-delay); false: as its wire packets
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>

#include "packet/link_log.hh"
#include "packet/loss_model.hh"
#include "packet/packet_ring.hh"
#include "util/clock.hh"
#include "util/random.hh"

// Packets in arrival order, each leaving `delay` after it arrived (with 0, as soon as the ferry
// releases them): the storage and departure rule of both queues below. With a log ring
// (--uplink-log, --meter-*), every arrival and departure goes to it too.
class DelayLine {
 public:
  DelayLine(Nanos delay, size_t capacity, LinkEventRing* log = nullptr) : delay_(delay), ring_(capacity), log_(log) {}

  std::span<uint8_t> reserve() { return ring_.reserve(); }
  void commit(Nanos now, uint32_t length, uint32_t meta) {
    if (log_) log_->push({now, 0, length, 1, '+'});
    ring_.commit(now, length, meta);
  }
  // A packet that arrived and was dropped at once (a loss shell's), for the log.
  void log_drop(Nanos now, uint32_t length) {
    if (log_) {
      log_->push({now, 0, length, 1, '+'});
      log_->push({now, 0, length, 1, 'd'});
    }
  }
  Nanos next_departure() const { return ring_.empty() ? kNever : ring_.front().arrival + delay_; }
  template <class Send>
  void release(Nanos now, Send&& send) {
    while (!ring_.empty() && ring_.front().arrival + delay_ <= now) {
      send(ring_.front_data(), ring_.front().meta);
      if (log_) log_->push({now, ring_.front().arrival, ring_.front().length, 1, '-'});
      ring_.pop();
    }
  }

 private:
  Nanos delay_;
  PacketRing ring_;
  LinkEventRing* log_;
};

// Every packet leaves exactly `delay` after it arrived; the segments of a super-packet arrived
// together, so they leave together.
class DelayQueue : public DelayLine {
 public:
  static constexpr bool kWholeSuperPackets = true;
  explicit DelayQueue(Nanos delay, LinkEventRing* log = nullptr) : DelayLine(delay, 64 * 1024 * 4, log) {}
  bool finished() const { return false; }
};

// A queue that takes a super-packet as its wire packets, though it could take it whole: what
// its log and meters count (a log line per packet on the wire, as mm-link's), at the cost of
// splitting super-packets, paid only by shells that log.
template <class Queue>
class PerWirePacket : public Queue {
 public:
  using Queue::Queue;
  static constexpr bool kWholeSuperPackets = false;
};

// Forwards packets at once, or drops them as they arrive when the gate says so.
template <class Gate>
class GateQueue {
 public:
  static constexpr bool kWholeSuperPackets = false;  // one decision per wire packet
  explicit GateQueue(Gate gate, LinkEventRing* log = nullptr) : gate_(std::move(gate)), line_(0, 64 * 1024 * 2, log) {}

  std::span<uint8_t> reserve() { return line_.reserve(); }
  void commit(Nanos now, uint32_t length, uint32_t meta) {
    if (gate_.admit(now)) {
      line_.commit(now, length, meta);
    } else {
      line_.log_drop(now, length);
    }
  }
  Nanos next_departure() const { return line_.next_departure(); }
  // Every packet is due at its arrival, which is never after the ferry's `now`.
  template <class Send>
  void release(Nanos now, Send&& send) {
    line_.release(now, send);
  }
  bool finished() const { return false; }

 private:
  Gate gate_;
  DelayLine line_;
};

// The link alternates between on (forward) and off (drop every arriving packet). Periods are
// drawn from exponential distributions with the given means (mm-onoff), or are fixed
// (mm-intermittent). The link is on from `start` (when the shell starts).
class OnOffGate {
 public:
  enum class Durations { Exponential, Fixed };
  OnOffGate(Durations kind, Nanos on, Nanos off, uint64_t seed, Nanos start)
      : kind_(kind), mean_on_(on), mean_off_(off), random_(seed), next_switch_(start + draw(on)) {}

  bool admit(Nanos now) {
    while (now >= next_switch_) {
      on_ = !on_;
      next_switch_ += draw(on_ ? mean_on_ : mean_off_);
    }
    return on_;
  }

 private:
  Nanos draw(Nanos mean) {
    if (kind_ == Durations::Fixed) return mean;
    // At least 1 ns so that admit() always progresses, even with a mean of 0.
    return std::max<Nanos>(1, static_cast<Nanos>(random_.exponential(static_cast<double>(mean))));
  }

  Durations kind_;
  Nanos mean_on_, mean_off_;
  Random random_;
  bool on_ = true;
  Nanos next_switch_;
};

// Lets everything through (the direction a shell does not touch).
struct OpenGate {
  bool admit(Nanos) { return true; }
};

// mm-meter's pass-through: every packet leaves as soon as it arrived, and both events go to
// the meter's ring (no capacity, no queue, no drop).
class MeterQueue : public DelayLine {
 public:
  static constexpr bool kWholeSuperPackets = false;  // the meters count wire packets
  explicit MeterQueue(LinkEventRing* ring) : DelayLine(0, 64 * 1024 * 2, ring) {}
  bool finished() const { return false; }
};
