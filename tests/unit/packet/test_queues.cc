#include <cstring>
#include <deque>
#include <vector>

#include "expect.hh"
#include "packet/packet_ring.hh"
#include "packet/queues.hh"

namespace {
// Writes a packet of `length` bytes whose bytes all equal `fill` into the queue.
template <class Q>
void push(Q& q, Nanos now, uint32_t length, uint8_t fill) {
  auto space = q.reserve();
  ASSERT_TRUE(space.size() >= length);
  std::memset(space.data(), fill, length);
  q.commit(now, length);
}

template <class Q>
std::vector<std::pair<uint32_t, uint8_t>> drain(Q& q, Nanos now) {
  std::vector<std::pair<uint32_t, uint8_t>> out;
  q.release(now, [&](std::span<const uint8_t> p) {
    for (auto b : p) ASSERT_TRUE(b == p[0]);  // contents intact
    out.emplace_back(static_cast<uint32_t>(p.size()), p[0]);
  });
  return out;
}
}  // namespace

TEST(Queues, ring_keeps_fifo_order_across_wraps_and_growth) {
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

// The ferry's order: reserve, read, then pop what is due (possibly everything, possibly after
// the reservation wrapped to the start of the buffer), then commit.
TEST(Queues, ring_pops_between_reserve_and_commit_match_a_model) {
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

TEST(Queues, ring_does_not_grow_in_steady_state) {
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

TEST(Queues, ring_abandoned_reservation_is_harmless) {
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

TEST(Queues, delay_queue_releases_each_packet_exactly_after_delay) {
  DelayQueue q(ms_to_nanos(20));
  ASSERT_EQ(q.next_departure(), kNever);
  push(q, 1'000, 100, 1);
  push(q, 5'000, 1500, 2);
  ASSERT_EQ(q.next_departure(), 1'000 + 20'000'000);
  ASSERT_TRUE(drain(q, 20'000'999).empty());  // 1 ns early: nothing
  auto first = drain(q, 20'001'000);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].first, 100u);
  ASSERT_EQ(q.next_departure(), 5'000 + 20'000'000);
  auto second = drain(q, 30'000'000);
  ASSERT_EQ(second.size(), 1u);
  ASSERT_EQ(static_cast<int>(second[0].second), 2);
  ASSERT_EQ(q.next_departure(), kNever);
}

TEST(Queues, zero_delay_releases_at_once) {
  DelayQueue q(0);
  push(q, 777, 64, 9);
  ASSERT_EQ(q.next_departure(), 777);
  ASSERT_EQ(drain(q, 777).size(), 1u);
}

TEST(Queues, loss_gate_rate_and_reproducibility) {
  const int n = 200000;
  LossGate a(0.1, 42), b(0.1, 42), c(0.1, 43);
  int dropped = 0, same_ab = 0, same_ac = 0;
  for (int i = 0; i < n; i++) {
    const bool x = a.admit(0), y = b.admit(0), z = c.admit(0);
    dropped += !x;
    same_ab += x == y;
    same_ac += x == z;
  }
  // Binomial: sd = sqrt(n p (1-p)) = 134; 5 sd either way.
  ASSERT_TRUE(std::abs(dropped - n / 10) < 5 * 134);
  ASSERT_EQ(same_ab, n);
  ASSERT_TRUE(same_ac < n);
  LossGate never(0, 1), always(1, 1);
  for (int i = 0; i < 1000; i++) ASSERT_TRUE(never.admit(0) && !always.admit(0));
}

TEST(Queues, gate_queue_drops_on_arrival_only) {
  GateQueue q(LossGate(1.0, 3));
  push(q, 0, 100, 1);
  ASSERT_EQ(q.next_departure(), kNever);
  GateQueue open{OpenGate{}};
  push(open, 5, 100, 1);
  push(open, 6, 200, 2);
  auto out = drain(open, 6);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[1].first, 200u);
}

TEST(Queues, intermittent_gate_is_periodic) {
  const Nanos s = kNanosPerSec;
  OnOffGate gate(OnOffGate::Durations::Fixed, s, 2 * s, 0, 0);
  ASSERT_TRUE(gate.admit(0));
  ASSERT_TRUE(gate.admit(s - 1));
  ASSERT_TRUE(!gate.admit(s));
  ASSERT_TRUE(!gate.admit(3 * s - 1));
  ASSERT_TRUE(gate.admit(3 * s));
  ASSERT_TRUE(!gate.admit(100 * s + s));  // 100 s = 33 periods + 1 s: off
}

TEST(Queues, onoff_gate_mean_durations) {
  const Nanos ms = kNanosPerMs;
  OnOffGate gate(OnOffGate::Durations::Exponential, 30 * ms, 10 * ms, 7, 0);
  int on = 0;
  const int samples = 400000;  // one sample per 0.1 ms over 40 s: about 1000 periods
  for (int i = 0; i < samples; i++) on += gate.admit(i * ms / 10);
  const double fraction = static_cast<double>(on) / samples;
  ASSERT_TRUE(fraction > 0.70 && fraction < 0.80);  // expected 0.75
}

TEST(Queues, ring_reservation_survives_pop_of_last_packet) {
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
