// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// CoDel's control law (RFC 8289), run over the front of a packet ring: by the codel queue and by
// each flow of fq_codel.
#include <cmath>
#include <cstdint>
#include <string>

#include "packet/ecn.hh"
#include "packet/packet_ring.hh"
#include "packet/queue_discipline.hh"
#include "packet/queue_limits.hh"
#include "util/clock.hh"

// CoDel's parameters as the user gives them (milliseconds), shared by codel and fq_codel.
struct CoDelParams {
  double target_ms, interval_ms;
  bool ecn = true;             // mark ECN-capable packets instead of dropping them
  double ce_threshold_ms = 0;  // 0: none
  // For a log header: ", target=5, interval=100, ecn=1[, ce_threshold=1]".
  std::string describe() const {
    return ", target=" + format_ms(target_ms) + ", interval=" + format_ms(interval_ms) + ", ecn=" + (ecn ? "1" : "0") +
           (ce_threshold_ms > 0 ? ", ce_threshold=" + format_ms(ce_threshold_ms) : "");
  }
};

// CoDel (RFC 8289): drops at dequeue while packets have waited longer than `target` for at
// least `interval`, ever more often (interval / sqrt(count)). Admission is drop-tail.
// With ECN (RFC 8289 §5, as Linux's codel_dequeue), a packet the law would drop is marked CE
// instead if its sender understands ECN, and sent: the law counts it as a drop and waits for
// the next drop time. With a CE threshold (fq_codel's ce_threshold; 0: none), every ECN-capable
// packet that waited longer than it is marked as it leaves, whatever the law's state.
class CoDelState {
 public:
  CoDelState(Nanos target, Nanos interval, bool ecn = false, Nanos ce_threshold = 0)
      : target_(target), interval_(interval), ce_threshold_(ce_threshold), ecn_(ecn) {}
  explicit CoDelState(const CoDelParams& p)
      : CoDelState(ms_to_nanos(p.target_ms), ms_to_nanos(p.interval_ms), p.ecn, ms_to_nanos(p.ce_threshold_ms)) {}

  // Runs the control law over the front of `ring` at `now`, dropping (calling drop_front()) or
  // marking as it says; marks are counted in events.marked, drops by drop_front.
  template <class DropFront>
  void dequeue(PacketRing& ring, Nanos now, QueueEvents& events, DropFront&& drop_front) {
    if (ring.empty()) {
      first_above_time_ = 0;
      dropping_ = false;
      return;
    }
    bool marked = false;
    const bool ok_to_drop = should_drop(ring, now);
    if (dropping_) {
      if (!ok_to_drop) {
        dropping_ = false;
      } else {
        while (dropping_ && now >= drop_next_) {
          count_++;
          drop_next_ = control_law(drop_next_);
          if (ecn_ && mark(ring, events)) {
            marked = true;
            break;
          }
          drop_front();
          if (ring.empty() || !should_drop(ring, now)) dropping_ = false;
        }
      }
    } else if (ok_to_drop) {
      marked = ecn_ && mark(ring, events);
      if (!marked) {
        drop_front();
        if (!ring.empty()) should_drop(ring, now);  // keep first_above_time_ current for the new front
      }
      dropping_ = true;
      const uint32_t delta = count_ - last_count_;
      count_ = (delta > 1 && now - drop_next_ < 16 * interval_) ? delta : 1;
      drop_next_ = control_law(now);
      last_count_ = count_;
    }
    if (ce_threshold_ && !marked && !ring.empty() && now - ring.front().arrival > ce_threshold_) mark(ring, events);
  }

 private:
  static bool mark(PacketRing& ring, QueueEvents& events) {
    if (!ecn::mark_ce(ring.front_data())) return false;
    events.marked.add(ring.front().length);
    return true;
  }
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

  Nanos target_, interval_, ce_threshold_;
  Nanos first_above_time_ = 0;
  Nanos drop_next_ = 0;
  uint32_t count_ = 0;
  uint32_t last_count_ = 0;
  bool dropping_ = false;
  bool ecn_;
};
