// SPDX-License-Identifier: GPL-3.0-or-later
// The dualpi2 queue discipline (RFC 9332), in the spirit of WebRTC's DualPI2 tests: the PI2
// controller holding the classic queue near its target, the step marking L4S packets past 1 ms,
// the coupling, ECN-capable classic packets marked rather than dropped, and the round robin
// that never starves classic traffic.
#include <cmath>

#include "expect.hh"
#include "packet/dualpi2_queue.hh"
#include "packet/ecn.hh"
#include "queue_test_harness.hh"
#include "util/exception.hh"

namespace {
const Nanos ms = kNanosPerMs;

// Flows 0 and 1 alternately; flow 1 is L4S (ECT(1)), flow 0 classic (not ECN-capable).
int alternate(int i) { return i % 2; }
uint8_t l4s_if_one(int flow) { return flow == 1 ? ecn::kEct1 : ecn::kNotEct; }

uint32_t delivered_of(const AqmRun& run, int flow, Nanos from = 0) {
  uint32_t n = 0;
  for (size_t k = 0; k < run.sojourns.size(); k++) n += run.flows[k] == flow && run.sojourns[k].first >= from;
  return n;
}
}  // namespace

TEST(DualPi2Queue, defaults_and_parameters_are_linuxs) {
  EXPECT_EQ(queue("dualpi2")->description(),
            "dualpi2 [packets=10000, target=15, tupdate=16, alpha=0.16, beta=3.2, step_thresh=1, min_qlen_step=0, "
            "coupling_factor=2, c_protection=10, drop_overload=1]");
  EXPECT_EQ(queue("dualpi2", "target=5,step_thresh=2,c_protection=30,drop_overload=0,bytes=150000")->description(),
            "dualpi2 [bytes=150000, target=5, tupdate=16, alpha=0.16, beta=3.2, step_thresh=2, min_qlen_step=0, "
            "coupling_factor=2, c_protection=30, drop_overload=0]");
  EXPECT_THROW_WITH(UsageError, queue("dualpi2", "c_protection=101"), "c_protection is the classic queue's weight");
  EXPECT_THROW_WITH(UsageError, queue("dualpi2", "coupling_factor=0"), "coupling_factor must be more than 0");
  EXPECT_THROW_WITH(UsageError, queue("dualpi2", "alpha=1e7"), "alpha must be at most 1000000 Hz");
  EXPECT_THROW_WITH(UsageError, queue("dualpi2", "interval=100"), "queue dualpi2 takes no parameter interval");
  EXPECT_THROW_WITH(UsageError, queue("codel", "step_thresh=1"), "queue codel takes no parameter step_thresh");
  EXPECT_THROW_WITH(
      UsageError,
      make_queue_discipline("infinite", QueueArgs::parse("alpha=0.3", "--uplink-queue"), "--uplink-queue", 0),
      "e.g. --uplink-queue=dualpi2");
}

TEST(DualPi2Queue, pi2_holds_the_classic_queue_near_its_target) {
  // An unresponsive classic sender at twice the link's rate: p' rises while the queue's delay is
  // above 15 ms and settles where p'^2 drops half the packets (p' near 0.71), the delay near
  // the target; a drop-tail FIFO would let it grow past a second.
  AqmRun run = feed(queue("dualpi2"), ms / 2, 8000 * ms);
  const double delay = mean_sojourn(run, 5000 * ms);
  EXPECT_TRUE(delay > 10 && delay < 25) << delay;
  EXPECT_TRUE(run.dropped > 6000 && run.dropped < 9000) << run.dropped;  // about half of 16000
  EXPECT_EQ(run.marked, 0u);
  // Below the link's rate the queue stays short: nothing dropped or marked.
  AqmRun light = feed(queue("dualpi2"), ms * 11 / 10, 3000 * ms);
  EXPECT_EQ(light.dropped + light.marked, 0u);
}

TEST(DualPi2Queue, marking_probability_rises_above_the_target_and_not_below) {
  // The base probability p' against a classic queue held at a fixed delay (packets enter at the
  // link's rate after a standing queue of D ms has built): it grows while D > 15 ms, stays at 0
  // while D < 15 ms.
  for (auto [standing_ms, rises] : {std::pair{17, true}, std::pair{30, true}, std::pair{10, false}}) {
    DualPi2Params params;
    DualPi2Queue q(params, 1);
    QueueEvents events;
    Nanos now = 0;
    auto arrive = [&] {
      std::memset(q.reserve().data(), 0, 20);
      q.reserve()[0] = 0x45;
      q.enqueue(now, 1500, events, 0);
    };
    for (int i = 0; i < standing_ms; i++) arrive();  // the standing queue: D packets of 1 ms
    for (; now < 2000 * ms; now += ms) {
      arrive();
      if (q.next(now, events)) q.pop();
    }
    if (rises)
      EXPECT_TRUE(q.base_probability() > 0.02) << standing_ms << " ms: " << q.base_probability();
    else
      EXPECT_EQ(q.base_probability(), 0.0) << standing_ms << " ms";
  }
}

TEST(DualPi2Queue, the_step_marks_l4s_packets_that_waited_past_one_ms) {
  // An unresponsive L4S sender at 1.25 times the link's rate for 150 ms: its queue grows a
  // packet every 5 ms. Every packet that waited longer than 1 ms leaves with CE (the step);
  // until p' has risen (the coupling), none that waited less does.
  AqmRun run = feed(queue("dualpi2"), ms * 4 / 5, 150 * ms, nullptr, ecn::kEct1);
  uint32_t late = 0;
  for (const auto& [departure, sojourn] : run.sojourns) late += sojourn > 1.0;
  EXPECT_TRUE(late > 80) << late;
  EXPECT_EQ(run.dropped, 0u);
  EXPECT_TRUE(run.marked >= late);
  EXPECT_EQ(run.delivered_ce, run.marked);
  EXPECT_EQ(run.bad_checksums, 0u);
  // The first 20 ms: p' is still 0, so marks are the step's alone, and match the late packets.
  AqmRun early = feed(queue("dualpi2"), ms * 4 / 5, 20 * ms, nullptr, ecn::kEct1);
  uint32_t early_late = 0;
  for (const auto& [departure, sojourn] : early.sojourns) early_late += sojourn > 1.0;
  EXPECT_EQ(early.marked, early_late);
  // A higher threshold marks fewer; min_qlen_step above the queue's length switches it off.
  AqmRun higher = feed(queue("dualpi2", "step_thresh=5"), ms * 4 / 5, 150 * ms, nullptr, ecn::kEct1);
  EXPECT_TRUE(higher.marked < run.marked);
  AqmRun off = feed(queue("dualpi2", "min_qlen_step=1000"), ms * 4 / 5, 20 * ms, nullptr, ecn::kEct1);
  EXPECT_EQ(off.marked, 0u);
  // Classic packets that wait as long are not stepped.
  AqmRun classic = feed(queue("dualpi2"), ms * 4 / 5, 20 * ms, nullptr, ecn::kEct0);
  EXPECT_EQ(classic.marked, 0u);
}

TEST(DualPi2Queue, ecn_capable_classic_packets_are_marked_where_others_are_dropped) {
  // An unresponsive ECT(0) sender 10 % above the link's rate: marks do not slow it, so p' keeps
  // rising until k * p' passes 1 (overload), where ECN-capable classic packets are dropped too;
  // the drops then bring p' back under, and marking resumes.
  AqmRun marked = feed(queue("dualpi2"), ms * 10 / 11, 6000 * ms, nullptr, ecn::kEct0);
  ASSERT_TRUE(marked.marked > 100) << marked.marked;
  ASSERT_FALSE(marked.drop_times.empty());
  EXPECT_TRUE(marked.mark_times.front() < marked.drop_times.front());
  EXPECT_TRUE(marked.mark_times.back() > marked.drop_times.front());
  // The same sender, not ECN-capable: only drops.
  AqmRun dropped = feed(queue("dualpi2"), ms * 10 / 11, 6000 * ms, nullptr, ecn::kNotEct);
  EXPECT_EQ(dropped.marked, 0u);
  EXPECT_TRUE(dropped.dropped > 300) << dropped.dropped;
  EXPECT_EQ(marked.delivered_ce, marked.marked);
  EXPECT_EQ(marked.bad_checksums, 0u);
}

TEST(DualPi2Queue, l4s_is_served_first_and_classic_is_never_starved) {
  // Both flows unresponsive, each at the link's full rate. The L4S flow's packets wait far less;
  // the round robin still gives the classic flow its c_protection share of the link (10 %).
  AqmRun run = feed(queue("dualpi2"), ms / 2, 6000 * ms, alternate, 0, l4s_if_one);
  const double l4s_delay = mean_sojourn(run, 3000 * ms, 1), classic_delay = mean_sojourn(run, 3000 * ms, 0);
  EXPECT_TRUE(l4s_delay < classic_delay) << l4s_delay << " " << classic_delay;
  const double classic_share = static_cast<double>(delivered_of(run, 0, 3000 * ms)) /
                               (delivered_of(run, 0, 3000 * ms) + delivered_of(run, 1, 3000 * ms));
  EXPECT_TRUE(classic_share >= 0.09) << classic_share;
  // With c_protection=50 the classic flow gets about half.
  AqmRun even = feed(queue("dualpi2", "c_protection=50"), ms / 2, 6000 * ms, alternate, 0, l4s_if_one);
  const double even_share = static_cast<double>(delivered_of(even, 0, 3000 * ms)) /
                            (delivered_of(even, 0, 3000 * ms) + delivered_of(even, 1, 3000 * ms));
  EXPECT_TRUE(even_share > 0.4 && even_share < 0.6) << even_share;
  EXPECT_EQ(run.bad_checksums, 0u);
}
