// SPDX-License-Identifier: GPL-3.0-or-later
// DualPI2's classification, PI2 controller, marking and round robin (see dualpi2_queue.hh).
#include "packet/dualpi2_queue.hh"

#include <algorithm>
#include <cstring>

#include "packet/ecn.hh"

std::string DualPi2Params::describe() const {
  return limits.describe() + ", target=" + format_ms(target_ms) + ", tupdate=" + format_ms(tupdate_ms) +
         ", alpha=" + format_ms(alpha) + ", beta=" + format_ms(beta) + ", step_thresh=" + format_ms(step_thresh_ms) +
         ", min_qlen_step=" + std::to_string(min_qlen_step) + ", coupling_factor=" + format_ms(coupling_factor) +
         ", c_protection=" + std::to_string(c_protection) + ", drop_overload=" + (drop_overload ? "1" : "0");
}

DualPi2Queue::DualPi2Queue(const DualPi2Params& params, uint64_t seed)
    : params_(params),
      target_(ms_to_nanos(params.target_ms)),
      tupdate_(ms_to_nanos(params.tupdate_ms)),
      step_thresh_(ms_to_nanos(params.step_thresh_ms)),
      random_(seed),
      // As Linux's: an MTU's worth of (wc - wl), negative while L has the larger weight, so
      // that L is served first.
      credit_init_(static_cast<int64_t>(kMtu) *
                   (static_cast<int64_t>(params.c_protection) - (100 - static_cast<int64_t>(params.c_protection)))),
      credit_(credit_init_) {}

void DualPi2Queue::enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) {
  update(now);
  if (params_.limits.exceeded(l_.bytes() + c_.bytes() + length, l_.packets() + c_.packets() + 1)) {
    events.dropped.add(length);
    return;
  }
  const std::span<const uint8_t> packet(scratch_.get(), length);
  PacketRing& ring = ecn::l4s(packet) ? l_ : c_;
  std::memcpy(ring.reserve(length).data(), scratch_.get(), length);
  ring.commit(now, length, meta);
}

DualPi2Queue::Verdict DualPi2Queue::verdict(bool l4s, bool ect, size_t backlog_besides) {
  // Never with less than two full packets queued besides this one (as RED's min_th).
  if (backlog_besides < 2 * kMtu) return Verdict::Pass;
  const double coupled = params_.coupling_factor * probability_;
  const bool overloaded = coupled > 1;
  auto squared = [&] { return random_.bernoulli(probability_) && random_.bernoulli(probability_); };
  if (l4s) {
    if (overloaded) return params_.drop_overload && squared() ? Verdict::Drop : Verdict::Mark;
    return random_.bernoulli(coupled) ? Verdict::Mark : Verdict::Pass;
  }
  if (!squared()) return Verdict::Pass;
  return ect && !overloaded ? Verdict::Mark : Verdict::Drop;
}

bool DualPi2Queue::next(Nanos now, QueueEvents& events) {
  if (current_) return true;
  update(now);
  for (;;) {
    const bool l4s = !l_.empty() && (c_.empty() || credit_ <= 0);
    if (!l4s && c_.empty()) {
      credit_ = credit_init_;
      return false;
    }
    PacketRing& ring = l4s ? l_ : c_;
    const PacketRing& other = l4s ? c_ : l_;
    const uint32_t length = ring.front().length;
    const size_t queued = ring.packets();
    const size_t backlog_besides = l_.bytes() + c_.bytes() - length;
    // Each queue's turn costs it its weight's share of the bytes it sends, but only while the
    // other one waits.
    const int64_t credit_change = other.empty() ? 0
                                  : l4s         ? static_cast<int64_t>(params_.c_protection) * length
                                                : -static_cast<int64_t>(100 - params_.c_protection) * length;
    const std::span<uint8_t> packet = ring.front_data();
    const Verdict v = verdict(l4s, ecn::capable(packet), backlog_besides);
    if (v == Verdict::Drop) {
      events.dropped.add(length);
      ring.pop();
      continue;
    }
    bool marked = v == Verdict::Mark && ecn::mark_ce(packet);
    // The step: L4S senders react to every mark, so a threshold on the L queue's own delay
    // keeps it short.
    if (l4s && !marked && queued > params_.min_qlen_step && now - ring.front().arrival > step_thresh_)
      marked = ecn::mark_ce(packet);
    if (marked) events.marked.add(length);
    credit_ += credit_change;
    current_ = &ring;
    return true;
  }
}

void DualPi2Queue::update(Nanos now) {
  if (next_update_ == 0) next_update_ = now + tupdate_;
  // Idle at rest (empty queues, p' at 0): nothing changes however many updates pass.
  if (now >= next_update_ && empty() && probability_ == 0 && previous_delay_ == 0)
    next_update_ += ((now - next_update_) / tupdate_ + 1) * tupdate_;
  while (now >= next_update_) {
    const Nanos delay = std::max(head_delay(l_, next_update_), head_delay(c_, next_update_));
    probability_ += params_.alpha * static_cast<double>(delay - target_) / 1e9 +
                    params_.beta * static_cast<double>(delay - previous_delay_) / 1e9;
    // Without drop_overload the L4S probability k * p' stays at most 1, for window fairness
    // when the queues overflow.
    const double most = params_.drop_overload ? 1.0 : std::min(1.0, 1.0 / params_.coupling_factor);
    probability_ = std::clamp(probability_, 0.0, most);
    previous_delay_ = delay;
    next_update_ += tupdate_;
  }
}
