// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The base of the single-queue disciplines (infinite, droptail, drophead, codel, pie): one
// packet ring, served in arrival order.
#include "packet/queue_discipline.hh"
#include "packet/queue_limits.hh"

class FifoDiscipline : public QueueDiscipline {
 public:
  std::span<uint8_t> reserve() override { return ring_.reserve(); }
  bool next(Nanos, QueueEvents&) override { return !ring_.empty(); }
  const PacketRing::Record& front() const override { return ring_.front(); }
  std::span<const uint8_t> front_data() const override { return ring_.front_data(); }
  void pop() override { ring_.pop(); }
  bool empty() const override { return ring_.empty(); }

 protected:
  // Admits the reserved packet unless that would exceed the limits (drop-tail).
  void admit_within(const QueueLimits& limits, Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) {
    if (limits.exceeded(ring_.bytes() + length, ring_.packets() + 1)) {
      events.dropped.add(length);
    } else {
      ring_.commit(now, length, meta);
    }
  }
  void drop_front(QueueEvents& events) {
    events.dropped.add(ring_.front().length);
    ring_.pop();
  }
  PacketRing ring_;
};
