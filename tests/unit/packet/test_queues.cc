// SPDX-License-Identifier: GPL-3.0-or-later
// The simple shells' queues: DelayQueue, GateQueue and their gates.
#include <sys/eventfd.h>

#include <cstring>
#include <deque>
#include <vector>

#include "expect.hh"
#include "packet/queues.hh"
#include "util/file_descriptor.hh"

namespace {
// Writes a packet of `length` bytes whose bytes all equal `fill` into the queue.
template <class Q>
void push(Q& q, Nanos now, uint32_t length, uint8_t fill) {
  auto space = q.reserve();
  ASSERT_TRUE(space.size() >= length);
  std::memset(space.data(), fill, length);
  q.commit(now, length, 0);
}

template <class Q>
std::vector<std::pair<uint32_t, uint8_t>> drain(Q& q, Nanos now) {
  std::vector<std::pair<uint32_t, uint8_t>> out;
  q.release(now, [&](std::span<const uint8_t> p, uint32_t) {
    for (auto b : p) ASSERT_TRUE(b == p[0]);  // contents intact
    out.emplace_back(static_cast<uint32_t>(p.size()), p[0]);
  });
  return out;
}
}  // namespace

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

TEST(Queues, logged_delay_and_gate_queues_report_arrivals_departures_and_drops) {
  FileDescriptor wake(::eventfd(0, EFD_NONBLOCK));
  LinkEventRing ring(wake.get());
  PerWirePacket<DelayQueue> delay(50 * kNanosPerMs, &ring);
  static_assert(!PerWirePacket<DelayQueue>::kWholeSuperPackets && DelayQueue::kWholeSuperPackets);
  push(delay, 10 * kNanosPerMs, 1000, 1);
  push(delay, 20 * kNanosPerMs, 500, 2);
  EXPECT_EQ(drain(delay, 70 * kNanosPerMs).size(), 2u);
  std::vector<LinkEvent> events;
  ring.drain([&](const LinkEvent& e) { events.push_back(e); });
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, '+');
  EXPECT_EQ(events[1].kind, '+');
  EXPECT_EQ(events[2].kind, '-');
  EXPECT_EQ(events[2].arrival, 10 * kNanosPerMs);
  EXPECT_EQ(events[2].bytes, 1000u);
  EXPECT_EQ(events[3].arrival, 20 * kNanosPerMs);
  EXPECT_EQ(events[3].time, 70 * kNanosPerMs);

  // A gate that drops every other packet: each arrives, then is dropped or leaves.
  struct Alternate {
    bool open = false;
    bool admit(Nanos) { return open = !open; }
  };
  GateQueue<Alternate> gate(Alternate{}, &ring);
  for (int i = 0; i < 4; i++) push(gate, i * kNanosPerMs, 100, static_cast<uint8_t>(i));
  EXPECT_EQ(drain(gate, 4 * kNanosPerMs).size(), 2u);
  events.clear();
  ring.drain([&](const LinkEvent& e) { events.push_back(e); });
  std::string kinds;
  for (const LinkEvent& e : events) kinds += e.kind;
  EXPECT_EQ(kinds, "++d++d--");
}
