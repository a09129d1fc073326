// SPDX-License-Identifier: GPL-3.0-or-later
// PIE's enqueue decision and its periodic probability update (see pie_queue.hh).
#include "packet/pie_queue.hh"

#include <algorithm>

#include "packet/ecn.hh"

void PieQueue::enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) {
  update(now);
  if (should_drop()) {
    // RFC 8033 §5.1: an ECN-capable packet is marked rather than dropped while the probability
    // is at most 10 %; above that, the queue is overloaded and marking would not relieve it. A
    // packet the limit refuses is a drop, not a mark.
    const bool room = !limits_.exceeded(ring_.bytes() + length, ring_.packets() + 1);
    if (!room || !ecn_ || probability_ > kMaxMarkProbability || !ecn::mark_ce(ring_.reserved(length))) {
      events.dropped.add(length);
      return;
    }
    events.marked.add(length);
  }
  admit_within(limits_, now, length, events, meta);
}

// Catches up on every 15 ms update period that has passed.
void PieQueue::update(Nanos now) {
  if (next_update_ == 0) next_update_ = now + kUpdate;
  while (now >= next_update_) {
    const Nanos qdelay = queue_delay(next_update_);
    double scale = 1;
    if (probability_ < 0.000001)
      scale = 1.0 / 2048;
    else if (probability_ < 0.00001)
      scale = 1.0 / 512;
    else if (probability_ < 0.0001)
      scale = 1.0 / 128;
    else if (probability_ < 0.001)
      scale = 1.0 / 32;
    else if (probability_ < 0.01)
      scale = 1.0 / 8;
    else if (probability_ < 0.1)
      scale = 1.0 / 2;
    const double delta = scale * (kAlpha * static_cast<double>(qdelay - qdelay_ref_) / 1e9 +
                                  kBeta * static_cast<double>(qdelay - qdelay_old_) / 1e9);
    probability_ = std::clamp(probability_ + delta, 0.0, 1.0);
    if (qdelay == 0 && qdelay_old_ == 0) probability_ *= 0.98;
    if (qdelay < qdelay_ref_ / 2 && qdelay_old_ < qdelay_ref_ / 2 && probability_ == 0) {
      burst_allowance_ = max_burst_;
    } else {
      burst_allowance_ = std::max<Nanos>(0, burst_allowance_ - kUpdate);
    }
    qdelay_old_ = qdelay;
    next_update_ += kUpdate;
  }
}
