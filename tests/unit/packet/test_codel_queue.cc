// SPDX-License-Identifier: GPL-3.0-or-later
// The codel queue discipline: CoDel's first drop and control law.
#include <cmath>

#include "expect.hh"
#include "packet/codel_queue.hh"
#include "queue_test_harness.hh"

namespace {
const Nanos ms = kNanosPerMs;
}  // namespace

TEST(CoDelQueue, codel_first_drop_after_interval_then_control_law) {
  // Twice the link's rate: the front packet's sojourn passes 5 ms at about 10 ms; CoDel waits
  // one interval (100 ms) above target before the first drop, then drops at 100/sqrt(n) ms.
  AqmRun run = feed(queue("codel", "packets=100000,target=5,interval=100"), ms / 2, 600 * ms);
  ASSERT_TRUE(run.drop_times.size() >= 4);
  const double first = nanos_to_ms(run.drop_times[0]);
  ASSERT_TRUE(first >= 105 && first <= 125);
  const double gap1 = nanos_to_ms(run.drop_times[1] - run.drop_times[0]);
  const double gap2 = nanos_to_ms(run.drop_times[2] - run.drop_times[1]);
  const double gap3 = nanos_to_ms(run.drop_times[3] - run.drop_times[2]);
  ASSERT_TRUE(std::abs(gap1 - 100.0) < 2);
  ASSERT_TRUE(std::abs(gap2 - 100.0 / std::sqrt(2.0)) < 2);
  ASSERT_TRUE(std::abs(gap3 - 100.0 / std::sqrt(3.0)) < 2);
  // Below the link's rate the queue stays short: no drops.
  AqmRun light = feed(queue("codel", "packets=100000,target=5,interval=100"), ms * 11 / 10, 2000 * ms);
  ASSERT_EQ(light.dropped, 0u);
}
