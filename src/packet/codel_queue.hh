// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The codel queue: drop-tail admission, CoDel at dequeue (see codel.hh).
#include "packet/codel.hh"
#include "packet/fifo_discipline.hh"

class CoDelQueue final : public FifoDiscipline {
 public:
  CoDelQueue(QueueLimits limits, const CoDelParams& params) : limits_(limits), params_(params), codel_(params) {}
  void enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) override {
    admit_within(limits_, now, length, events, meta);
  }
  bool next(Nanos now, QueueEvents& events) override {
    codel_.dequeue(ring_, now, events, [&] { drop_front(events); });
    return !ring_.empty();
  }
  bool drops_when_dequeuing() const override { return true; }
  std::string description() const override { return "codel [" + limits_.describe() + params_.describe() + "]"; }

 private:
  QueueLimits limits_;
  CoDelParams params_;
  CoDelState codel_;
};
