// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The infinite queue: every packet is admitted.
#include "packet/fifo_discipline.hh"

class InfiniteQueue final : public FifoDiscipline {
 public:
  void enqueue(Nanos now, uint32_t length, QueueEvents&, uint32_t meta) override { ring_.commit(now, length, meta); }
  std::string description() const override { return "infinite"; }
};
