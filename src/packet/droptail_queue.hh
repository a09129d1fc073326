// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Drop-tail: a packet that would exceed the limits is dropped as it arrives.
#include "packet/fifo_discipline.hh"

class DropTailQueue final : public FifoDiscipline {
 public:
  explicit DropTailQueue(QueueLimits limits) : limits_(limits) {}
  void enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) override {
    admit_within(limits_, now, length, events, meta);
  }
  std::string description() const override { return "droptail [" + limits_.describe() + "]"; }

 private:
  QueueLimits limits_;
};
