// SPDX-License-Identifier: GPL-3.0-or-later
// The packet ring: FIFO order across wraps and growth, reservations, steady state.
#include <cstring>
#include <deque>
#include <vector>

#include "expect.hh"
#include "packet/packet_ring.hh"
#include "util/random.hh"

TEST(PacketRing, ring_keeps_fifo_order_across_wraps_and_growth) {
  PacketRing ring(4096, 1500);
  std::deque<std::pair<uint32_t, uint8_t>> model;
  Random random(1);
  uint8_t fill = 0;
  for (int step = 0; step < 20000; step++) {
    if (random.uniform() < 0.55) {
      const uint32_t length = 1 + static_cast<uint32_t>(random.next() % 1500);
      auto space = ring.reserve();
      std::memset(space.data(), ++fill, length);
      ring.commit(step, length);
      model.emplace_back(length, fill);
    } else if (!model.empty()) {
      ASSERT_EQ(ring.front().length, model.front().first);
      ASSERT_EQ(static_cast<int>(ring.front_data()[0]), static_cast<int>(model.front().second));
      ASSERT_EQ(static_cast<int>(ring.front_data()[ring.front().length - 1]), static_cast<int>(model.front().second));
      ring.pop();
      model.pop_front();
    }
    ASSERT_EQ(ring.packets(), model.size());
  }
}

TEST(PacketRing, ring_pops_between_reserve_and_commit_match_a_model) {
  PacketRing ring(4096, 1500);
  std::deque<std::pair<uint32_t, uint8_t>> model;
  Random random(7);
  uint8_t fill = 0;
  for (int step = 0; step < 50000; step++) {
    const uint32_t length = 1 + static_cast<uint32_t>(random.next() % 1500);
    auto space = ring.reserve();
    std::memset(space.data(), ++fill, length);
    const uint64_t pops = random.next() % 4;
    for (uint64_t i = 0; i < pops && !model.empty(); i++) {
      ASSERT_EQ(ring.front().length, model.front().first);
      ASSERT_EQ(static_cast<int>(ring.front_data()[0]), static_cast<int>(model.front().second));
      ring.pop();
      model.pop_front();
    }
    if (random.uniform() < 0.9) {
      ring.commit(step, length);
      model.emplace_back(length, fill);
    }
    ASSERT_EQ(ring.packets(), model.size());
    if (!model.empty()) {
      ASSERT_EQ(ring.front().length, model.front().first);
      ASSERT_EQ(static_cast<int>(ring.front_data()[ring.front().length - 1]), static_cast<int>(model.front().second));
    }
  }
}

TEST(PacketRing, ring_does_not_grow_in_steady_state) {
  PacketRing ring(64 * 1024, 1500);
  const size_t capacity = ring.capacity();
  for (int i = 0; i < 100000; i++) {
    auto space = ring.reserve();
    space[0] = 0x45;
    ring.commit(i, 1500);
    if (ring.packets() > 10) ring.pop();
  }
  ASSERT_EQ(ring.capacity(), capacity);
}

TEST(PacketRing, ring_abandoned_reservation_is_harmless) {
  PacketRing ring(8192, 1500);
  for (int i = 0; i < 1000; i++) {
    ring.reserve();  // a read that returned EAGAIN
    auto space = ring.reserve();
    space[0] = static_cast<uint8_t>(i);
    ring.commit(i, 100 + i % 1400);
    if (i % 3 != 0) {
      ring.reserve();
      ring.pop();
    }
  }
  ASSERT_TRUE(ring.packets() > 0);
}

TEST(PacketRing, ring_reservation_survives_pop_of_last_packet) {
  PacketRing ring(8192, 1500);
  auto first = ring.reserve();
  first[0] = 1;
  ring.commit(0, 100);
  auto space = ring.reserve();
  std::memset(space.data(), 7, 200);
  ring.pop();  // the ring is now empty, with a packet being read into `space`
  ring.commit(1, 200);
  ASSERT_EQ(ring.front().length, 200u);
  ASSERT_EQ(static_cast<int>(ring.front_data()[199]), 7);
}
