// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The codel queue: drop-tail admission, CoDel at dequeue (see codel.hh).
#include "packet/codel.hh"
#include "packet/fifo_discipline.hh"

class CoDelQueue final : public FifoDiscipline {
 public:
  CoDelQueue(QueueLimits limits, double target_ms, double interval_ms)
      : limits_(limits),
        target_ms_(target_ms),
        interval_ms_(interval_ms),
        codel_(ms_to_nanos(target_ms), ms_to_nanos(interval_ms)) {}
  void enqueue(Nanos now, uint32_t length, DropCount& drops, uint32_t meta) override {
    admit_within(limits_, now, length, drops, meta);
  }
  bool next(Nanos now, DropCount& drops) override {
    codel_.dequeue(ring_, now, [&] { drop_front(drops); });
    return !ring_.empty();
  }
  bool drops_when_dequeuing() const override { return true; }
  std::string description() const override {
    return "codel [" + limits_.describe() + ", target=" + format_ms(target_ms_) +
           ", interval=" + format_ms(interval_ms_) + "]";
  }

 private:
  QueueLimits limits_;
  double target_ms_, interval_ms_;
  CoDelState codel_;
};
