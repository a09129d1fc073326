// SPDX-License-Identifier: GPL-3.0-or-later
// The drophead queue discipline.
#include "expect.hh"
#include "packet/drophead_queue.hh"
#include "queue_test_harness.hh"

TEST(DropHeadQueue, drophead_keeps_the_newest_within_the_limit) {
  QueueEvents head_events;
  auto head = queue("drophead", "bytes=250");
  for (int i = 0; i < 4; i++) {
    auto s = head->reserve();
    s[0] = static_cast<uint8_t>(i);
    head->enqueue(i, 100, head_events);
  }
  ASSERT_EQ(head_events.dropped.packets, 2u);
  ASSERT_TRUE(head->next(10, head_events));
  ASSERT_EQ(static_cast<int>(head->front_data()[0]), 2);  // drop-head kept the newest
}
