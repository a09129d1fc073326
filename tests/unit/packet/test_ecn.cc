// SPDX-License-Identifier: GPL-3.0-or-later
// ECN: CE marking with a valid header checksum, and the AQMs marking instead of dropping.
#include <array>
#include <cmath>
#include <cstring>

#include "expect.hh"
#include "packet/ecn.hh"
#include "packet/offload.hh"
#include "packet/pie_queue.hh"
#include "queue_test_harness.hh"

namespace {
const Nanos ms = kNanosPerMs;

// A 20-byte IPv4 header with TOS `tos` and a valid checksum.
std::array<uint8_t, 20> header(uint8_t tos) {
  std::array<uint8_t, 20> h{0x45, tos, 0, 60, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0, 198, 51, 100, 1, 100, 64, 0, 2};
  set_ip_checksum(h.data(), 20);
  return h;
}
bool checksum_valid(std::span<const uint8_t> h) { return checksum_fold(checksum_add(h.first(20))) == 0xffff; }
}  // namespace

TEST(Ecn, marks_capable_packets_and_keeps_the_checksum_valid) {
  // Every TOS byte: DSCP bits kept, ECT(0)/ECT(1)/CE become CE, Not-ECT is left alone.
  for (int tos = 0; tos < 256; tos++) {
    auto h = header(static_cast<uint8_t>(tos));
    const auto before = h;
    const bool capable = (tos & 3) != 0;
    ASSERT_EQ(ecn::capable(h), capable);
    ASSERT_EQ(ecn::l4s(h), (tos & 3) == ecn::kEct1 || (tos & 3) == ecn::kCe);
    ASSERT_EQ(ecn::mark_ce(h), capable);
    if (capable) {
      ASSERT_EQ(h[1], static_cast<uint8_t>(tos | 3));
      ASSERT_EQ(ecn::codepoint(h), ecn::kCe);
    } else {
      ASSERT_TRUE(h == before);
    }
    ASSERT_TRUE(checksum_valid(h));
  }
  // Not IPv4, or too short: never ECN-capable.
  auto v6 = header(2);
  v6[0] = 0x60;
  ASSERT_TRUE(!ecn::mark_ce(v6));
  std::array<uint8_t, 10> short_packet{0x45, 2};
  ASSERT_TRUE(!ecn::capable(short_packet));
}

TEST(Ecn, codel_marks_where_it_would_drop) {
  // The stream of codel_first_drop_after_interval_then_control_law, ECT(0): the control law's
  // times are the same, but each is a mark, and the packet is sent with CE and a valid checksum.
  AqmRun run = feed(queue("codel", "packets=100000,target=5,interval=100"), ms / 2, 600 * ms, nullptr, ecn::kEct0);
  ASSERT_EQ(run.dropped, 0u);
  ASSERT_TRUE(run.mark_times.size() >= 4);
  ASSERT_EQ(run.delivered_ce, run.marked);
  ASSERT_EQ(run.bad_checksums, 0u);
  const double first = nanos_to_ms(run.mark_times[0]);
  ASSERT_TRUE(first >= 105 && first <= 125);
  ASSERT_TRUE(std::abs(nanos_to_ms(run.mark_times[1] - run.mark_times[0]) - 100.0) < 2);
  ASSERT_TRUE(std::abs(nanos_to_ms(run.mark_times[2] - run.mark_times[1]) - 100.0 / std::sqrt(2.0)) < 2);
  ASSERT_TRUE(std::abs(nanos_to_ms(run.mark_times[3] - run.mark_times[2]) - 100.0 / std::sqrt(3.0)) < 2);
  // Not ECN-capable, or ecn=0: drops at those times, no marks.
  for (auto [args, tos] : {std::pair{"packets=100000", ecn::kNotEct}, std::pair{"packets=100000,ecn=0", ecn::kEct1}}) {
    AqmRun dropped = feed(queue("codel", args), ms / 2, 600 * ms, nullptr, tos);
    ASSERT_EQ(dropped.marked, 0u);
    ASSERT_EQ(dropped.delivered_ce, 0u);
    ASSERT_TRUE(dropped.drop_times.size() >= 4);
    ASSERT_EQ(dropped.drop_times[0], run.mark_times[0]);
  }
}

TEST(Ecn, codel_ce_threshold_marks_every_late_packet) {
  // A sender at 1.25 times the link's rate: the queue grows by a packet every 5 ms. With a CE
  // threshold of 1 ms every ECN-capable packet that waited longer is marked as it leaves, long
  // before the control law (target 5 ms for 100 ms) would act; none that waited less is.
  AqmRun run = feed(queue("fq_codel", "ce_threshold=1,target=50"), ms * 4 / 5, 300 * ms, nullptr, ecn::kEct1);
  ASSERT_EQ(run.dropped, 0u);
  uint32_t late = 0;
  for (const auto& [departure, sojourn] : run.sojourns) late += sojourn > 1.0;
  ASSERT_TRUE(late > 100);
  ASSERT_EQ(run.marked, late);
  ASSERT_EQ(run.delivered_ce, late);
  ASSERT_EQ(run.bad_checksums, 0u);
}

TEST(Ecn, fq_codel_marks_where_it_would_drop) {
  AqmRun marked = feed(queue("fq_codel", "packets=100000"), ms / 2, 600 * ms, nullptr, ecn::kEct0);
  AqmRun dropped = feed(queue("fq_codel", "packets=100000"), ms / 2, 600 * ms, nullptr, ecn::kNotEct);
  ASSERT_EQ(marked.dropped, 0u);
  ASSERT_TRUE(marked.marked >= 4);
  ASSERT_EQ(marked.delivered_ce, marked.marked);
  ASSERT_EQ(marked.mark_times[0], dropped.drop_times[0]);
}

TEST(Ecn, pie_marks_up_to_ten_percent_then_drops) {
  // An unresponsive ECT(0) sender at twice the link's rate: marks do not slow it, so PIE's
  // probability keeps rising; it marks while the probability is at most 10 % (RFC 8033 §5.1),
  // then drops. The first signals are marks; drops only come later, once past 10 %.
  AqmRun run = feed(queue("pie", "packets=100000,qdelay_ref=15,max_burst=100"), ms / 2, 6000 * ms, nullptr, ecn::kEct0);
  ASSERT_TRUE(run.marked > 10);
  ASSERT_TRUE(run.dropped > 1000);
  ASSERT_TRUE(run.mark_times.front() < run.drop_times.front());
  ASSERT_EQ(run.delivered_ce, run.marked);
  ASSERT_EQ(run.bad_checksums, 0u);
  // Once dropping, the probability is above 10 %, where the queue is overloaded: marks stop
  // while it stays there (the sender never slows, so it does).
  uint32_t marks_after_drops = 0;
  for (Nanos t : run.mark_times) marks_after_drops += t > run.drop_times.front() + 500 * ms;
  ASSERT_EQ(marks_after_drops, 0u);
  // ecn=0: no marks.
  AqmRun off = feed(queue("pie", "packets=100000,ecn=0"), ms / 2, 3000 * ms, nullptr, ecn::kEct0);
  ASSERT_EQ(off.marked, 0u);
  ASSERT_TRUE(off.dropped > 0);
}

namespace {
// A queue held at a standing delay: `standing_ms` packets of 1500 bytes (a ms each at 12 Mbit/s)
// queued at once, then one arriving and one leaving every ms for 3 s, all with ECN field `tos`.
// Returns the marks; `after` sees the queue at the end.
template <class After = void (*)(QueueDiscipline&)>
uint32_t marks_at_standing_delay(
    QueueDiscipline& q, int standing_ms, uint8_t tos, After after = [](QueueDiscipline&) {}) {
  QueueEvents events;
  Nanos now = 0;
  auto arrive = [&] {
    auto space = q.reserve();
    std::memset(space.data(), 0, 20);
    space[0] = 0x45;
    space[1] = tos;
    set_ip_checksum(space.data(), 20);
    q.enqueue(now, 1500, events, 0);
  };
  for (int i = 0; i < standing_ms; i++) arrive();
  for (; now < 3000 * ms; now += ms) {
    arrive();
    if (q.next(now, events)) q.pop();
  }
  after(q);
  return events.marked.packets;
}
}  // namespace

// Marking against queueing delay, for each AQM that marks (as WebRTC's DualPI2 tests do for
// theirs): none below the target, marks above it.
TEST(Ecn, marking_follows_the_queueing_delay) {
  for (const char* name : {"codel", "fq_codel"}) {
    // CoDel's target is 5 ms: a standing queue of 3 ms is never marked, one of 10 ms is, ever
    // more often (the control law).
    EXPECT_EQ(marks_at_standing_delay(*queue(name), 3, ecn::kEct0), 0u) << name;
    EXPECT_TRUE(marks_at_standing_delay(*queue(name), 10, ecn::kEct0) > 20) << name;
  }
  // PIE's reference is 15 ms: its probability stays 0 with a standing queue of 5 ms and rises
  // with one of 30 ms (marking, while at most 10 %).
  for (auto [standing, rises] : {std::pair{5, false}, std::pair{30, true}}) {
    PieQueue pie(QueueLimits{0, 100000}, 15, 150, true, 1);
    double probability = -1;
    marks_at_standing_delay(pie, standing, ecn::kEct0,
                            [&](QueueDiscipline& q) { probability = static_cast<PieQueue&>(q).drop_probability(); });
    if (rises)
      EXPECT_TRUE(probability > 0.01) << probability;
    else
      EXPECT_EQ(probability, 0.0);
  }
}
