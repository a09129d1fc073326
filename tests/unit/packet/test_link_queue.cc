// SPDX-License-Identifier: GPL-3.0-or-later
// One direction of mm-link: byte accounting over the trace's opportunities, --once, idle links.
#include <chrono>
#include <cstring>
#include <vector>

#include "expect.hh"
#include "packet/link_queue.hh"
#include "packet/queue_discipline.hh"
#include "packet/trace.hh"

namespace {
const Nanos ms = kNanosPerMs;

struct Sent {
  Nanos time;
  uint32_t length;
};

// Drives a LinkQueue like the ferry does: release, then commit, in time order.
struct LinkHarness {
  Trace trace;
  LinkQueue link;
  std::vector<Sent> sent;
  LinkHarness(Trace t, std::unique_ptr<QueueDiscipline> q, bool once = false)
      : trace(std::move(t)), link(trace, 0, once, std::move(q), nullptr) {}
  void arrive(Nanos now, uint32_t length) {
    run_until(now);
    auto space = link.reserve();
    std::memset(space.data(), 0x45, length);
    link.commit(now, length);
  }
  void run_until(Nanos now) {
    // Wake exactly when the link says, as the ferry's timer does.
    for (Nanos due = link.next_departure(); due <= now; due = link.next_departure()) release(due);
    release(now);
  }
  void release(Nanos now) {
    link.release(now, [&](std::span<const uint8_t> p, uint32_t) {
      sent.push_back({now, static_cast<uint32_t>(p.size())});
    });
  }
};

std::unique_ptr<QueueDiscipline> queue(std::string_view name, std::string_view args = "") {
  return make_queue_discipline(name, QueueArgs::parse(args, "--uplink-queue"), "--uplink-queue", 1);
}
}  // namespace

TEST(LinkQueue, link_byte_accounting_full_and_small_packets) {
  LinkHarness h(Trace::parse("1", "t"), queue("infinite"));
  h.arrive(0, 1500);  // one opportunity each: 1, 2, 3 ms
  h.arrive(100'000, 1500);
  h.arrive(200'000, 1500);
  h.run_until(10 * ms);
  ASSERT_EQ(h.sent.size(), 3u);
  ASSERT_EQ(h.sent[0].time, 1 * ms);
  ASSERT_EQ(h.sent[2].time, 3 * ms);
  // Small packets share an opportunity: 500 + 500 + 500 bytes all leave at 11 ms.
  h.sent.clear();
  h.arrive(10 * ms + 1, 500);
  h.arrive(10 * ms + 2, 500);
  h.arrive(10 * ms + 3, 500);
  h.run_until(20 * ms);
  ASSERT_EQ(h.sent.size(), 3u);
  for (auto& s : h.sent) ASSERT_EQ(s.time, 11 * ms);
}

TEST(LinkQueue, link_packet_spans_opportunities_and_unused_bytes_are_lost) {
  LinkHarness h(Trace::parse("1", "t"), queue("infinite"));
  h.arrive(0, 1000);
  h.arrive(1, 1000);  // 500 bytes at 1 ms, the rest at 2 ms
  h.arrive(2, 100);   // at 2 ms, in the same opportunity
  h.run_until(5 * ms);
  ASSERT_EQ(h.sent.size(), 3u);
  ASSERT_EQ(h.sent[0].time, 1 * ms);
  ASSERT_EQ(h.sent[1].time, 2 * ms);
  ASSERT_EQ(h.sent[2].time, 2 * ms);
  // The 2 ms opportunity had 400 unused bytes; they do not carry over to a later packet.
  h.sent.clear();
  h.arrive(5 * ms + 1, 1500);
  h.run_until(10 * ms);
  ASSERT_EQ(h.sent[0].time, 6 * ms);
}

TEST(LinkQueue, link_packet_cannot_use_an_opportunity_before_it_arrived) {
  LinkHarness h(Trace::parse("10\n20\n", "t"), queue("infinite"));
  h.arrive(15 * ms, 100);  // missed the 10 ms opportunity: leaves at 20 ms, not 15
  h.run_until(30 * ms);
  ASSERT_EQ(h.sent.size(), 1u);
  ASSERT_EQ(h.sent[0].time, 20 * ms);
}

TEST(LinkQueue, link_goodput_matches_trace_capacity) {
  // Saturated: 1000 packets of 1500 bytes through a 12 Mbit/s link take exactly 1000 ms.
  LinkHarness h(Trace::from_argument("rate:12Mbit/s"), queue("infinite"));
  for (int i = 0; i < 1000; i++) h.arrive(i, 1500);
  h.run_until(2000 * ms);
  ASSERT_EQ(h.sent.size(), 1000u);
  ASSERT_EQ(h.sent.back().time, 1000 * ms);
}

TEST(LinkQueue, link_once_finishes_at_trace_end) {
  LinkHarness h(Trace::parse("5\n10\n", "t"), queue("infinite"), true);
  ASSERT_EQ(h.link.next_departure(), 10 * ms);  // idle, but it must wake to end the shell
  h.run_until(10 * ms);
  ASSERT_TRUE(h.link.finished());
}

TEST(LinkQueue, idle_fast_link_skips_whole_periods) {
  // rate:1Tbit/s idle for an hour: 3e14 opportunities passed; the first packet after it leaves
  // at the next one, at once (not after a loop over every opportunity).
  const Trace trace = Trace::constant_rate(1e12, "rate:1Tbit/s");
  LinkQueue link(trace, 0, false,
                 make_queue_discipline("infinite", QueueArgs::parse("", "--uplink-queue"), "--uplink-queue", 1),
                 nullptr);
  const Nanos hour = 3600LL * 1'000'000'000;
  const auto start = std::chrono::steady_clock::now();
  link.release(hour, [](std::span<const uint8_t>, uint32_t) {});
  auto space = link.reserve();
  std::fill(space.begin(), space.begin() + 100, uint8_t{0x45});
  link.commit(hour, 100);
  const Nanos due = link.next_departure();
  ASSERT_TRUE(due > hour && due <= hour + trace.period());
  int sent = 0;
  link.release(due, [&](std::span<const uint8_t> p, uint32_t) { sent += static_cast<int>(p.size()); });
  ASSERT_EQ(sent, 100);
  ASSERT_TRUE(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  // A trace of several opportunities per period: the cursor lands on the same position.
  const Trace three = Trace::parse("1\n2\n4\n", "t");
  OpportunityCursor cursor(three, 0, false);
  cursor.skip_periods_until(4 * kNanosPerMs * 1000 + 1);  // 1000 periods and a bit
  ASSERT_EQ(cursor.next(), 3997 * kNanosPerMs);           // the last period whose first opportunity has passed
  ASSERT_EQ(cursor.nth(2), 3998 * kNanosPerMs);
  OpportunityCursor once(three, 0, true);
  once.skip_periods_until(1000 * kNanosPerMs);
  ASSERT_EQ(once.next(), kNanosPerMs);  // --once: nothing skipped here
}
