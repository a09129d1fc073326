// SPDX-License-Identifier: GPL-3.0-or-later
// One direction of mm-link: byte accounting over the trace's opportunities, --once, idle links,
// and rate: links that serialise each packet by its size.
#include <chrono>
#include <cstring>
#include <vector>

#include "expect.hh"
#include "packet/link_overhead.hh"
#include "packet/link_queue.hh"
#include "packet/queue_factory.hh"
#include "packet/trace.hh"
#include "util/exception.hh"

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
  LinkHarness(Trace t, std::unique_ptr<QueueDiscipline> q, bool once = false, const LinkOverhead& overhead = {},
              LinkTiming timing = LinkTiming::Opportunities)
      : trace(std::move(t)), link(trace, 0, once, std::move(q), nullptr, overhead, timing) {}
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
                 nullptr, {}, LinkTiming::Opportunities);
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

// Link-layer overhead: each packet costs its framing on the link's opportunities.
TEST(LinkQueue, overhead_charges_each_packet_its_framing) {
  // Ethernet: 1000 packets of 1500 IP bytes cost 1538 bytes each: 1,538,000 bytes of 1500-byte
  // opportunities, the last one leaving at the 1026th millisecond.
  {
    LinkHarness h(Trace::from_argument("rate:12Mbit/s"), queue("infinite"), false,
                  LinkOverhead::parse("ethernet", "--downlink-overhead"));
    for (int i = 0; i < 1000; i++) h.arrive(i, 1500);
    h.run_until(3000 * ms);
    ASSERT_EQ(h.sent.size(), 1000u);
    ASSERT_EQ(h.sent.back().time, 1026 * ms);  // ceil(1538000 / 1500)
  }
  // Small packets cost Ethernet's least frame: 100 packets of 40 bytes cost 84 each, 17 to an
  // opportunity (17 * 84 = 1428), where without overhead 37 fit.
  for (auto [spec, per_opportunity] : {std::pair{"ethernet", 17u}, std::pair{"none", 37u}}) {
    LinkHarness h(Trace::from_argument("rate:12Mbit/s"), queue("infinite"), false,
                  LinkOverhead::parse(spec, "--uplink-overhead"));
    for (int i = 0; i < 100; i++) h.arrive(0, 40);
    h.run_until(ms);
    ASSERT_EQ(h.sent.size(), per_opportunity) << spec;
  }
  // ATM: 1500 + 8 bytes in 32 cells of 53: 1696 bytes a packet.
  {
    LinkHarness h(Trace::from_argument("rate:12Mbit/s"), queue("infinite"), false,
                  LinkOverhead::parse("atm", "--downlink-overhead"));
    for (int i = 0; i < 1000; i++) h.arrive(0, 1500);
    h.run_until(3000 * ms);
    ASSERT_EQ(h.sent.size(), 1000u);
    ASSERT_EQ(h.sent.back().time, 1131 * ms);  // ceil(1696000 / 1500)
  }
}

TEST(LinkQueue, overhead_profiles_and_their_parameters) {
  const LinkOverhead none = LinkOverhead::parse("none", "--uplink-overhead");
  ASSERT_TRUE(none.none());
  for (uint32_t length : {1u, 40u, 1500u, 65535u}) ASSERT_EQ(none.charged(length), length);
  const LinkOverhead ethernet = LinkOverhead::parse("ethernet", "--uplink-overhead");
  ASSERT_EQ(ethernet.charged(1500), 1538u);
  ASSERT_EQ(ethernet.charged(20), 84u);
  ASSERT_EQ(ethernet.charged(46), 84u);  // a 64-byte frame exactly: 46 + 18, then preamble and gap
  ASSERT_EQ(ethernet.charged(47), 85u);
  ASSERT_EQ(ethernet.describe(), "ethernet [bytes=38, min=84]");
  const LinkOverhead atm = LinkOverhead::parse("atm", "--uplink-overhead");
  ASSERT_EQ(atm.charged(40), 53u);   // 48 bytes: one cell
  ASSERT_EQ(atm.charged(41), 106u);  // 49: two
  ASSERT_EQ(atm.describe(), "atm [bytes=8, cell=48, cellovh=5]");
  // A profile with its bytes changed, and parameters alone (netem's "rate R 20 100 4").
  ASSERT_EQ(LinkOverhead::parse("atm,bytes=40", "--uplink-overhead").charged(1500), 33u * 53);  // 1540 bytes
  const LinkOverhead custom = LinkOverhead::parse("bytes=20,cell=100,cellovh=4", "--uplink-overhead");
  ASSERT_EQ(custom.charged(1500), 16u * 104);
  ASSERT_EQ(custom.describe(), "custom [bytes=20, cell=100, cellovh=4]");
  EXPECT_THROW_WITH(UsageError, LinkOverhead::parse("wifi", "--uplink-overhead"),
                    "--uplink-overhead: unknown profile \"wifi\" (known: none, ethernet, atm");
  EXPECT_THROW_WITH(UsageError, LinkOverhead::parse("bytes=-1", "--uplink-overhead"),
                    "bytes must be a whole number of bytes from 0 to 65535");
  EXPECT_THROW_WITH(UsageError, LinkOverhead::parse("cellovh=5", "--uplink-overhead"), "cellovh needs cell");
  EXPECT_THROW_WITH(UsageError, LinkOverhead::parse("bytes=1,ethernet", "--uplink-overhead"),
                    "a profile's name comes first");
  EXPECT_THROW_WITH(UsageError, LinkOverhead::parse("", "--uplink-overhead"), "unknown profile");
}

// rate: links serialise each packet by its own size (as netem's rate and tbf), by default.
TEST(LinkQueue, serialised_small_packet_waits_only_its_own_size) {
  // 84 bytes at 1.5 Mbit/s: 448 us, where an opportunity (8 ms) would hold it up to 8 ms.
  LinkHarness h(Trace::from_argument("rate:1.5Mbit/s"), queue("infinite"), false, {}, LinkTiming::Serialised);
  ASSERT_TRUE(h.link.serialised());
  h.arrive(5 * ms, 84);
  ASSERT_EQ(h.link.next_departure(), 5 * ms);  // due at once: to start on the link
  h.release(5 * ms);                           // as the ferry does after each packet it queues
  ASSERT_EQ(h.link.next_departure(), 5 * ms + 448'000);
  h.run_until(20 * ms);
  ASSERT_EQ(h.sent.size(), 1u);
  ASSERT_EQ(h.sent[0].time, 5 * ms + 448'000);
  // The original's accounting (--rate-opportunities): the next 1500-byte opportunity, at 8 ms.
  LinkHarness o(Trace::from_argument("rate:1.5Mbit/s"), queue("infinite"), false, {}, LinkTiming::Opportunities);
  ASSERT_FALSE(o.link.serialised());
  o.arrive(5 * ms, 84);
  o.run_until(20 * ms);
  ASSERT_EQ(o.sent.size(), 1u);
  ASSERT_EQ(o.sent[0].time, 8 * ms);
  // A trace file is never serialised: its opportunities are what was recorded.
  LinkHarness t(Trace::parse("1", "t"), queue("infinite"), false, {}, LinkTiming::Serialised);
  ASSERT_FALSE(t.link.serialised());
}

TEST(LinkQueue, serialised_packets_follow_one_another_and_an_idle_link_starts_at_arrival) {
  LinkHarness h(Trace::from_argument("rate:12Mbit/s"), queue("infinite"), false, {}, LinkTiming::Serialised);
  // 100 bytes (66,666.67 ns) then 1500 (1 ms) arriving together, a third while the second is
  // on the link: each starts when the one before has left.
  h.arrive(0, 100);
  h.arrive(0, 1500);
  h.arrive(500'000, 1500);
  h.run_until(10 * ms);
  ASSERT_EQ(h.sent.size(), 3u);
  ASSERT_EQ(h.sent[0].time, 66'666);
  ASSERT_EQ(h.sent[1].time, 1'066'666);
  ASSERT_EQ(h.sent[2].time, 2'066'666);
  // Idle since: the next packet starts when it arrives, not at the end of the last one.
  h.arrive(50 * ms + 7, 1500);
  h.run_until(60 * ms);
  ASSERT_EQ(h.sent.size(), 4u);
  ASSERT_EQ(h.sent[3].time, 51 * ms + 7);
}

TEST(LinkQueue, serialised_link_holds_its_rate_exactly) {
  // 1000 packets of 1500 bytes at 12 Mbit/s take exactly 1000 ms, as with opportunities.
  LinkHarness h(Trace::from_argument("rate:12Mbit/s"), queue("infinite"), false, {}, LinkTiming::Serialised);
  for (int i = 0; i < 1000; i++) h.arrive(i, 1500);
  h.run_until(2000 * ms);
  ASSERT_EQ(h.sent.size(), 1000u);
  ASSERT_EQ(h.sent.back().time, 1000 * ms);
  // Fractions of a nanosecond are carried, not lost: one byte at 3 bit/s is 2.67 s, three
  // back to back 8 s exactly.
  LinkHarness slow(Trace::from_argument("rate:3bit/s"), queue("infinite"), false, {}, LinkTiming::Serialised);
  for (int i = 0; i < 3; i++) slow.arrive(0, 1);
  slow.run_until(10'000 * ms);
  ASSERT_EQ(slow.sent.size(), 3u);
  ASSERT_EQ(slow.sent[0].time, 2'666'666'666);
  ASSERT_EQ(slow.sent[2].time, 8'000'000'000);
  // Overhead is serialised too: 1000 packets of 1538 Ethernet bytes, 1025.33 ms.
  LinkHarness e(Trace::from_argument("rate:12Mbit/s"), queue("infinite"), false,
                LinkOverhead::parse("ethernet", "--downlink-overhead"), LinkTiming::Serialised);
  for (int i = 0; i < 1000; i++) e.arrive(0, 1500);
  e.run_until(2000 * ms);
  ASSERT_EQ(e.sent.size(), 1000u);
  ASSERT_EQ(e.sent.back().time, 1'025'333'333);
}

TEST(LinkQueue, serialised_link_releases_late_wakeups_in_order_and_aqm_sees_the_start) {
  // A ferry that wakes late releases every packet whose serialisation ended, at its own time.
  LinkHarness h(Trace::from_argument("rate:12Mbit/s"), queue("infinite"), false, {}, LinkTiming::Serialised);
  for (int i = 0; i < 5; i++) {
    auto space = h.link.reserve();
    std::memset(space.data(), 0x45, 1500);
    h.link.commit(0, 1500);
  }
  std::vector<Nanos> times;
  h.link.release(3 * ms + 500'000, [&](std::span<const uint8_t>, uint32_t) { times.push_back(0); });
  ASSERT_EQ(times.size(), 3u);  // 1, 2 and 3 ms
  ASSERT_EQ(h.link.next_departure(), 4 * ms);
  // A droptail queue of 2 packets holds 2 waiting besides the one on the link.
  LinkHarness d(Trace::from_argument("rate:12Mbit/s"), queue("droptail", "packets=2"), false, {},
                LinkTiming::Serialised);
  for (int i = 0; i < 5; i++) d.arrive(0, 1500);
  d.run_until(10 * ms);
  ASSERT_EQ(d.sent.size(), 3u);
}

TEST(LinkQueue, serialised_idle_fast_link_and_once) {
  // rate:1Tbit/s idle for an hour: a packet arriving then leaves after its own 0.8 ns, at once.
  LinkHarness h(Trace::constant_rate(1e12, "rate:1Tbit/s"), queue("infinite"), false, {}, LinkTiming::Serialised);
  const Nanos hour = 3600LL * 1'000'000'000;
  const auto start = std::chrono::steady_clock::now();
  h.run_until(hour);
  h.arrive(hour, 100);
  ASSERT_TRUE(h.link.next_departure() <= hour + 1);
  h.run_until(hour + 1);
  ASSERT_EQ(h.sent.size(), 1u);
  ASSERT_TRUE(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  // --once still ends with the trace (one period of rate:12Mbit/s: 1 ms).
  LinkHarness once(Trace::from_argument("rate:12Mbit/s"), queue("infinite"), true, {}, LinkTiming::Serialised);
  once.arrive(0, 100);
  once.release(0);
  ASSERT_EQ(once.link.next_departure(), 66'666);
  once.run_until(ms);
  ASSERT_TRUE(once.link.finished());
  ASSERT_EQ(once.sent.size(), 1u);
}
