// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One direction of mm-link: a queue discipline in front of a link whose delivery opportunities
// come from a trace. Accounting is by bytes: each opportunity carries 1500 bytes; a packet may
// span several, small packets share one, bytes an opportunity cannot use are lost, and a
// packet cannot use an opportunity that passed before it arrived. A packet costs its IP bytes,
// or with a link-layer overhead (link_overhead.hh) its bytes on that link's wire. The packet being sent is
// copied out of the queue, so that the discipline only ever holds waiting packets.
//
// A constant rate (rate:RATE) is a promise of a rate, not of opportunities: by default such a
// link serialises each packet by its own cost, as netem's rate and tbf do. A packet starts when
// the link is free (leaving the discipline then, as a qdisc's packet leaves it for the device)
// and leaves the link cost x 8 / RATE later, so an 84-byte ping waits 0.45 ms at 1.5 Mbit/s,
// not up to a whole 1500-byte opportunity (8 ms). LinkTiming::Opportunities keeps the
// original's accounting (a constant trace of 1500-byte opportunities) for rate: links too.
#include <algorithm>
#include <cmath>
#include <memory>
#include <span>

#include "packet/link_log.hh"
#include "packet/link_overhead.hh"
#include "packet/queue_discipline.hh"
#include "packet/trace.hh"
#include "util/clock.hh"

// How a rate:RATE link times its packets (a trace file always has opportunities).
enum class LinkTiming { Serialised, Opportunities };

class LinkQueue {
 public:
  LinkQueue(const Trace& trace, Nanos start, bool once, std::unique_ptr<QueueDiscipline> queue, LinkEventRing* log,
            const LinkOverhead& overhead = {}, LinkTiming timing = LinkTiming::Serialised)
      : cursor_(trace, start, once),
        queue_(std::move(queue)),
        log_(log),
        overhead_(overhead),
        once_(once),
        rate_(timing == LinkTiming::Serialised && trace.constant_bits_per_second() > 0
                  ? std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(trace.constant_bits_per_second())))
                  : 0),
        free_at_(start) {}

  // Whether packets are serialised by their size (a rate: link), not sent in opportunities.
  bool serialised() const { return rate_ != 0; }

  static constexpr bool kWholeSuperPackets = false;  // bytes, queue limits and AQM per wire packet
  // A packet the ferry reads late may be given the time it should have been read (ferry.hh):
  // it then uses opportunities the ferry's lateness let pass; it still leaves when it is sent.
  static constexpr bool kCreditsLateReads = true;

  std::span<uint8_t> reserve() { return queue_->reserve(); }

  // The ferry has called release(now) first: every opportunity up to `now` is used.
  void commit(Nanos now, uint32_t length, uint32_t meta = 0) {
    if (log_) log_->push({now, 0, length, 1, '+'});
    if (rate_ && !sending_ && queue_->empty() && now > free_at_) {  // an idle link starts at the arrival
      free_at_ = now;
      carry_ = 0;
    }
    QueueEvents events;
    queue_->enqueue(now, length, events, meta);
    log_events(now, events);
  }

  Nanos next_departure() const {
    const Nanos end = cursor_.end();  // a --once link wakes at its end, even when idle
    if (!sending_ && queue_->empty()) return cursor_.exhausted() ? kNever : end;
    if (rate_) return std::min(sending_ ? departure_ : free_at_, end);
    if (!sending_ && queue_->drops_when_dequeuing()) return std::min(cursor_.next(), end);
    const uint64_t needed = sending_ ? remaining_ : overhead_.charged(queue_->front().length);
    const uint64_t opportunities = (needed + Trace::kOpportunityBytes - 1) / Trace::kOpportunityBytes;
    return std::min(cursor_.nth(std::max<uint64_t>(opportunities, 1)), end);
  }

  template <class Send>
  void release(Nanos now, Send&& send) {
    if (rate_) {
      release_serialised(now, send);
      return;
    }
    if (!sending_ && queue_->empty()) {
      skip_idle_opportunities(now);
      return;
    }
    while (cursor_.next() <= now) {
      const Nanos t = cursor_.next();
      uint32_t budget = Trace::kOpportunityBytes;
      while (budget > 0) {
        if (!sending_) {
          QueueEvents events;
          const bool ready = queue_->next(t, events);
          log_events(t, events);
          if (!ready) break;
          const PacketRing::Record& front = queue_->front();
          const uint32_t cost = overhead_.charged(front.length);
          if (cost <= budget) {  // wholly within this opportunity: sent from the queue itself
            depart(send, t, queue_->front_data(), front.meta, front.arrival);
            budget -= cost;
            queue_->pop();
            continue;
          }
          take_front();
        }
        const uint32_t used = std::min(budget, remaining_);
        budget -= used;
        remaining_ -= used;
        if (remaining_ == 0) {
          depart(send, t, {sending_buffer_.get(), sending_length_}, sending_meta_, sending_arrival_);
          sending_ = false;
        }
      }
      cursor_.advance();
      if (!sending_ && queue_->empty()) {
        skip_idle_opportunities(now);
        return;
      }
    }
  }

  bool finished() const { return cursor_.exhausted(); }

 private:
  // A packet leaves the link at opportunity `t`.
  template <class Send>
  void depart(Send& send, Nanos t, std::span<const uint8_t> packet, uint32_t meta, Nanos arrival) {
    send(packet, meta);
    if (log_) log_->push({t, arrival, static_cast<uint32_t>(packet.size()), 1, '-'});
  }

  // A rate: link: each packet leaves when its last bit has been serialised at the rate, one
  // after another; the packet in flight past `now` waits out of the discipline.
  template <class Send>
  void release_serialised(Nanos now, Send& send) {
    if (once_) skip_idle_opportunities(now);  // a --once link still ends with its trace
    for (;;) {
      if (sending_) {
        if (departure_ > now) return;
        depart(send, departure_, {sending_buffer_.get(), sending_length_}, sending_meta_, sending_arrival_);
        sending_ = false;
        free_at_ = departure_;
      }
      if (queue_->empty()) return;
      QueueEvents events;
      const bool ready = queue_->next(free_at_, events);
      log_events(free_at_, events);
      if (!ready) return;
      const PacketRing::Record& front = queue_->front();
      const Nanos departure = free_at_ + serialisation(overhead_.charged(front.length));
      if (departure <= now) {  // already through: sent from the queue itself
        depart(send, departure, queue_->front_data(), front.meta, front.arrival);
        queue_->pop();
        free_at_ = departure;
        continue;
      }
      take_front();
      departure_ = departure;
      return;
    }
  }

  // Nanoseconds `bytes` take at the rate; the fractions of a nanosecond carry over to the next
  // packet, so that back-to-back packets hold the rate exactly.
  Nanos serialisation(uint64_t bytes) {
    const uint64_t scaled = bytes * 8 * 1'000'000'000ULL + carry_;
    carry_ = scaled % rate_;
    return static_cast<Nanos>(scaled / rate_);
  }

  // The front packet spans opportunities (or is serialised past `now`): it leaves the discipline now (which then holds
  // only waiting packets), and the link when its last byte has an opportunity.
  void take_front() {
    sending_length_ = queue_->front().length;
    sending_arrival_ = queue_->front().arrival;
    sending_meta_ = queue_->front().meta;
    std::copy_n(queue_->front_data().data(), sending_length_, sending_buffer_.get());
    queue_->pop();
    remaining_ = overhead_.charged(sending_length_);
    sending_ = true;
  }

  // Nothing to send: opportunities up to `now` pass unused (the log writer still lists them).
  void skip_idle_opportunities(Nanos now) {
    cursor_.skip_periods_until(now);  // then less than a period is left
    while (cursor_.next() <= now) {
      if (cursor_.nth(1024) <= now) {
        for (int i = 0; i < 1024; i++) cursor_.advance();  // a fast link idle for long
      } else {
        cursor_.advance();
      }
    }
  }

  void log_events(Nanos t, const QueueEvents& events) {
    if (!log_) return;
    if (events.dropped.packets) log_->push({t, 0, events.dropped.bytes, events.dropped.packets, 'd'});
    if (events.marked.packets) log_->push({t, 0, events.marked.bytes, events.marked.packets, 'm'});
  }

  OpportunityCursor cursor_;
  std::unique_ptr<QueueDiscipline> queue_;
  LinkEventRing* log_;
  LinkOverhead overhead_;
  std::unique_ptr<uint8_t[]> sending_buffer_{new uint8_t[65536]};
  bool sending_ = false;
  uint32_t sending_length_ = 0;
  uint32_t sending_meta_ = 0;
  uint32_t remaining_ = 0;
  Nanos sending_arrival_ = 0;
  bool once_;
  uint64_t rate_;        // bits per second of a serialised rate: link; 0: opportunities
  Nanos free_at_;        // serialised: when the link finished its last packet (or went idle)
  Nanos departure_ = 0;  // serialised: when the packet being sent leaves
  uint64_t carry_ = 0;   // serialised: fractions of a nanosecond owed, in units of 1/rate_ ns
};
