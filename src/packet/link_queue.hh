// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One direction of mm-link: a queue discipline in front of a link whose delivery opportunities
// come from a trace. Accounting is by bytes: each opportunity carries 1500 bytes; a packet may
// span several, small packets share one, bytes an opportunity cannot use are lost, and a
// packet cannot use an opportunity that passed before it arrived. A packet costs its IP bytes,
// or with a link-layer overhead (link_overhead.hh) its bytes on that link's wire. The packet being sent is
// copied out of the queue, so that the discipline only ever holds waiting packets.
#include <algorithm>
#include <memory>
#include <span>

#include "packet/link_log.hh"
#include "packet/link_overhead.hh"
#include "packet/queue_discipline.hh"
#include "packet/trace.hh"
#include "util/clock.hh"

class LinkQueue {
 public:
  LinkQueue(const Trace& trace, Nanos start, bool once, std::unique_ptr<QueueDiscipline> queue, LinkEventRing* log,
            const LinkOverhead& overhead = {})
      : cursor_(trace, start, once), queue_(std::move(queue)), log_(log), overhead_(overhead) {}

  static constexpr bool kWholeSuperPackets = false;  // bytes, queue limits and AQM per wire packet

  std::span<uint8_t> reserve() { return queue_->reserve(); }

  // The ferry has called release(now) first: every opportunity up to `now` is used.
  void commit(Nanos now, uint32_t length, uint32_t meta = 0) {
    if (log_) log_->push({now, 0, length, 1, '+'});
    QueueEvents events;
    queue_->enqueue(now, length, events, meta);
    log_events(now, events);
  }

  Nanos next_departure() const {
    const Nanos end = cursor_.end();  // a --once link wakes at its end, even when idle
    if (!sending_ && queue_->empty()) return cursor_.exhausted() ? kNever : end;
    if (!sending_ && queue_->drops_when_dequeuing()) return std::min(cursor_.next(), end);
    const uint64_t needed = sending_ ? remaining_ : overhead_.charged(queue_->front().length);
    const uint64_t opportunities = (needed + Trace::kOpportunityBytes - 1) / Trace::kOpportunityBytes;
    return std::min(cursor_.nth(std::max<uint64_t>(opportunities, 1)), end);
  }

  template <class Send>
  void release(Nanos now, Send&& send) {
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

  // The front packet spans opportunities: it leaves the discipline now (which then holds only
  // waiting packets), and the link when its last byte has an opportunity.
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
};
