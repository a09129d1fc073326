// SPDX-License-Identifier: GPL-3.0-or-later
// The pie queue discipline.
#include "expect.hh"
#include "packet/pie_queue.hh"
#include "queue_test_harness.hh"

namespace {
const Nanos ms = kNanosPerMs;
}  // namespace

TEST(PieQueue, pie_holds_delay_near_reference_under_overload) {
  // An unresponsive sender at twice the link's rate: PIE raises its drop probability until the
  // queueing delay settles near qdelay_ref (15 ms); a drop-tail FIFO lets it grow past 1 s.
  AqmRun pie = feed(queue("pie", "packets=100000,qdelay_ref=15,max_burst=100"), ms / 2, 6000 * ms);
  AqmRun fifo = feed(queue("droptail", "packets=100000"), ms / 2, 6000 * ms);
  const double pie_delay = mean_sojourn(pie, 4000 * ms), fifo_delay = mean_sojourn(fifo, 4000 * ms);
  ASSERT_TRUE(pie.dropped > 4000);  // about half of 12000
  ASSERT_TRUE(pie_delay > 5 && pie_delay < 45);
  ASSERT_TRUE(fifo_delay > 1000);
  AqmRun light = feed(queue("pie", "packets=100000,qdelay_ref=15,max_burst=100"), 2 * ms, 3000 * ms);
  ASSERT_EQ(light.dropped, 0u);
}
