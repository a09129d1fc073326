// SPDX-License-Identifier: GPL-3.0-or-later
// The fq_codel queue discipline.
#include "expect.hh"
#include "packet/fq_codel_queue.hh"
#include "queue_test_harness.hh"

namespace {
const Nanos ms = kNanosPerMs;
}  // namespace

TEST(FqCoDelQueue, fq_codel_isolates_a_light_flow_from_a_heavy_one) {
  // Flow 1 sends 9 packets in 10, flow 2 one: 1.8 times the link's rate in all. In a FIFO both
  // wait equally; fq_codel serves the light flow first, so its packets barely wait.
  auto flow_of = [](int i) { return i % 10 == 0 ? 2 : 1; };
  AqmRun fq = feed(queue("fq_codel", "packets=100000"), ms * 10 / 18, 3000 * ms, flow_of);
  AqmRun fifo = feed(queue("droptail", "packets=100000"), ms * 10 / 18, 3000 * ms, flow_of);
  const double light_fq = mean_sojourn(fq, 2000 * ms, 2), light_fifo = mean_sojourn(fifo, 2000 * ms, 2);
  ASSERT_TRUE(light_fq >= 0 && light_fq < 3);
  ASSERT_TRUE(light_fifo > 500);
  ASSERT_TRUE(fq.dropped > 0);  // CoDel works on the heavy flow
}
