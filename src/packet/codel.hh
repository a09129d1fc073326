// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// CoDel's control law (RFC 8289), run over the front of a packet ring: by the codel queue and by
// each flow of fq_codel.
#include <cmath>
#include <cstdint>

#include "packet/packet_ring.hh"
#include "packet/queue_limits.hh"
#include "util/clock.hh"

// CoDel (RFC 8289): drops at dequeue while packets have waited longer than `target` for at
// least `interval`, ever more often (interval / sqrt(count)). Admission is drop-tail.
class CoDelState {
 public:
  CoDelState(Nanos target, Nanos interval) : target_(target), interval_(interval) {}

  // Runs the control law over the front of `ring` at `now`, dropping as it says.
  template <class DropFront>
  void dequeue(PacketRing& ring, Nanos now, DropFront&& drop_front) {
    if (ring.empty()) {
      first_above_time_ = 0;
      dropping_ = false;
      return;
    }
    bool ok_to_drop = should_drop(ring, now);
    if (dropping_) {
      if (!ok_to_drop) {
        dropping_ = false;
      } else {
        while (dropping_ && now >= drop_next_) {
          drop_front();
          count_++;
          if (ring.empty() || !should_drop(ring, now)) {
            dropping_ = false;
          } else {
            drop_next_ = control_law(drop_next_);
          }
        }
      }
    } else if (ok_to_drop) {
      drop_front();
      dropping_ = true;
      const uint32_t delta = count_ - last_count_;
      count_ = (delta > 1 && now - drop_next_ < 16 * interval_) ? delta : 1;
      drop_next_ = control_law(now);
      last_count_ = count_;
      if (!ring.empty()) should_drop(ring, now);  // keep first_above_time_ current for the new front
    }
  }

 private:
  bool should_drop(const PacketRing& ring, Nanos now) {
    const Nanos sojourn = now - ring.front().arrival;
    if (sojourn < target_ || ring.bytes() <= kMtu) {
      first_above_time_ = 0;
      return false;
    }
    if (first_above_time_ == 0) {
      first_above_time_ = now + interval_;
      return false;
    }
    return now >= first_above_time_;
  }
  Nanos control_law(Nanos t) const {
    return t + static_cast<Nanos>(static_cast<double>(interval_) / std::sqrt(static_cast<double>(count_)));
  }

  Nanos target_, interval_;
  Nanos first_above_time_ = 0;
  Nanos drop_next_ = 0;
  uint32_t count_ = 0;
  uint32_t last_count_ = 0;
  bool dropping_ = false;
};
