// SPDX-License-Identifier: GPL-3.0-or-later
// The droptail queue discipline.
#include "expect.hh"
#include "packet/droptail_queue.hh"
#include "queue_test_harness.hh"

TEST(DropTailQueue, droptail_keeps_the_oldest_within_the_limit) {
  QueueEvents events;
  auto tail = queue("droptail", "packets=2");
  for (int i = 0; i < 4; i++) {
    auto s = tail->reserve();
    s[0] = static_cast<uint8_t>(i);
    tail->enqueue(i, 100, events);
  }
  ASSERT_EQ(events.dropped.packets, 2u);
  ASSERT_EQ(events.dropped.bytes, 200u);
  ASSERT_TRUE(tail->next(10, events));
  ASSERT_EQ(static_cast<int>(tail->front_data()[0]), 0);  // drop-tail kept the oldest
}
