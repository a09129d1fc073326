// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Drop-head: an arriving packet is admitted, and the oldest ones are dropped until the
// queue is within its limits again.
#include "packet/fifo_discipline.hh"

class DropHeadQueue final : public FifoDiscipline {
 public:
  explicit DropHeadQueue(QueueLimits limits) : limits_(limits) {}
  void enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) override {
    ring_.commit(now, length, meta);
    while (!ring_.empty() && limits_.exceeded(ring_.bytes(), ring_.packets())) drop_front(events);
  }
  std::string description() const override { return "drophead [" + limits_.describe() + "]"; }

 private:
  QueueLimits limits_;
};
