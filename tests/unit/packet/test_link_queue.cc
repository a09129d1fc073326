#include <sys/eventfd.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "expect.hh"
#include "packet/link_queue.hh"
#include "packet/queue_discipline.hh"
#include "packet/trace.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

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
    link.release(now, [&](std::span<const uint8_t> p) { sent.push_back({now, static_cast<uint32_t>(p.size())}); });
  }
};

std::unique_ptr<QueueDiscipline> queue(std::string_view name, std::string_view args = "") {
  return make_queue_discipline(name, QueueArgs::parse(args, "--uplink-queue"), "--uplink-queue", 1);
}
}  // namespace

TEST(LinkQueue, trace_parse_and_errors) {
  Trace t = Trace::parse("0\n5\n5\n10\n", "t");
  ASSERT_EQ(t.offsets().size(), 4u);
  ASSERT_EQ(t.period(), 10 * ms);
  ASSERT_EQ(t.offsets()[1], 5 * ms);  // two in the 5th millisecond: at 5 and 5.5 ms
  ASSERT_EQ(t.offsets()[2], 5 * ms + ms / 2);
  Trace spread = Trace::parse("1\n1\n1\n1\n3\n3\n3\n", "t");
  ASSERT_EQ(spread.offsets()[3], ms + 3 * ms / 4);
  ASSERT_EQ(spread.offsets()[6], 3 * ms + 2 * ms / 3);
  ASSERT_EQ(spread.period(), 3 * ms);
  ASSERT_TRUE(std::abs(t.mean_bits_per_second() - 4 * 12000 / 0.010) < 1);
  ASSERT_EQ(Trace::parse("1", "t").period(), ms);  // no final newline is fine
  EXPECT_THROW_WITH(UserError, Trace::parse("", "up.trace"), "up.trace: empty trace");
  EXPECT_THROW_WITH(UserError, Trace::parse("1\nabc\n", "up.trace"),
                    "up.trace:2: \"abc\" is not a non-negative integer");
  EXPECT_THROW_WITH(UserError, Trace::parse("1\n-3\n", "t"), "t:2:");
  EXPECT_THROW_WITH(UserError, Trace::parse("7\n5\n", "t"), "t:2: timestamps must not decrease (5 after 7)");
  EXPECT_THROW_WITH(UserError, Trace::parse("0\n0\n", "t"), "t:2: the last timestamp must be greater than 0");
  EXPECT_THROW_WITH(UserError, Trace::parse("1\n\n2\n", "t"), "t:2: empty line");
  EXPECT_THROW_WITH(UserError, Trace::parse("1\r\n", "t"), "t:1: DOS line ending");
  EXPECT_THROW_WITH(UserError, Trace::parse("1.5\n", "t"), "t:1:");
  EXPECT_THROW_WITH(UserError, Trace::load("/nonexistent/trace"), "cannot read trace /nonexistent/trace: No such file");
}

TEST(LinkQueue, trace_rates) {
  ASSERT_EQ(Trace::parse_rate("12Mbit/s"), 12e6);
  ASSERT_EQ(Trace::parse_rate("500kbit/s"), 5e5);
  ASSERT_EQ(Trace::parse_rate("1Gbps"), 1e9);
  ASSERT_EQ(Trace::parse_rate("2.5Mbps"), 2.5e6);
  EXPECT_THROW_WITH(UsageError, Trace::parse_rate("12"), "is not a rate");
  EXPECT_THROW_WITH(UsageError, Trace::parse_rate("12MB/s"), "is not a rate");
  EXPECT_THROW_WITH(UsageError, Trace::parse_rate("-1Mbit/s"), "is not a rate");
  Trace t = Trace::from_argument("rate:12Mbit/s");
  ASSERT_EQ(t.period(), ms);  // one 1500-byte opportunity per ms
  ASSERT_EQ(Trace::from_argument("rate:500kbit/s").period(), 24 * ms);
  ASSERT_EQ(Trace::from_argument("rate:1Gbit/s").period(), 12'000);
}

TEST(LinkQueue, cursor_repeats_with_period_and_stops_once) {
  Trace t = Trace::parse("2\n5\n", "t");
  OpportunityCursor c(t, 100, false);
  std::vector<Nanos> times;
  for (int i = 0; i < 5; i++) {
    times.push_back(c.next());
    c.advance();
  }
  ASSERT_EQ(times[0], 100 + 2 * ms);
  ASSERT_EQ(times[1], 100 + 5 * ms);
  ASSERT_EQ(times[2], 100 + 7 * ms);
  ASSERT_EQ(times[4], 100 + 12 * ms);
  ASSERT_EQ(c.next(), 100 + 15 * ms);
  ASSERT_EQ(c.nth(2), 100 + 17 * ms);
  OpportunityCursor once(t, 0, true);
  once.advance();
  once.advance();
  ASSERT_TRUE(once.exhausted());
  ASSERT_EQ(once.next(), kNever);
}

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

TEST(LinkQueue, droptail_and_drophead_limits) {
  DropCount drops;
  auto tail = queue("droptail", "packets=2");
  for (int i = 0; i < 4; i++) {
    auto s = tail->reserve();
    s[0] = static_cast<uint8_t>(i);
    tail->enqueue(i, 100, drops);
  }
  ASSERT_EQ(drops.packets, 2u);
  ASSERT_EQ(drops.bytes, 200u);
  ASSERT_TRUE(tail->next(10, drops));
  ASSERT_EQ(static_cast<int>(tail->front_data()[0]), 0);  // drop-tail kept the oldest
  DropCount head_drops;
  auto head = queue("drophead", "bytes=250");
  for (int i = 0; i < 4; i++) {
    auto s = head->reserve();
    s[0] = static_cast<uint8_t>(i);
    head->enqueue(i, 100, head_drops);
  }
  ASSERT_EQ(head_drops.packets, 2u);
  ASSERT_TRUE(head->next(10, head_drops));
  ASSERT_EQ(static_cast<int>(head->front_data()[0]), 2);  // drop-head kept the newest
}

TEST(LinkQueue, queue_arguments_are_checked) {
  EXPECT_THROW_WITH(UsageError, queue("droptail"), "droptail needs a queue limit");
  EXPECT_THROW_WITH(UsageError, queue("codel", "packets=10"), "codel needs target=MS");
  EXPECT_THROW_WITH(UsageError, queue("codel", "packets=10,target=5"), "codel needs interval=MS");
  EXPECT_THROW_WITH(UsageError, queue("pie", "packets=10,qdelay_ref=5"), "pie needs max_burst=MS");
  EXPECT_THROW_WITH(UsageError, queue("infinite", "packets=10"), "queue infinite takes no parameters");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "packets=ten"), "packets must be a non-negative number");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "pakets=10"), "unknown parameter \"pakets\"");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "packets=10,target=5"), "queue droptail takes no parameter target");
  EXPECT_THROW_WITH(UsageError, queue("red"), "unknown queue \"red\"");
  ASSERT_EQ(queue("codel", "bytes=30000, target=5, interval=100")->description(),
            "codel [bytes=30000, target=5, interval=100]");
  ASSERT_EQ(queue("fq_codel")->description(), "fq_codel [packets=10240, target=5, interval=100, flows=1024]");
}

namespace {
// Feeds a 12 Mbit/s link (one 1500-byte packet per ms) with 1500-byte UDP packets of flow
// `flow_of(i)` every `gap` ns until `end`; records each delivered packet's sojourn and every drop.
struct AqmRun {
  std::vector<std::pair<Nanos, double>> sojourns;  // (departure, ms) with the packet's flow in flows
  std::vector<int> flows;
  std::vector<Nanos> drop_times;
  uint32_t dropped = 0;
};

AqmRun feed(std::unique_ptr<QueueDiscipline> q, Nanos gap, Nanos end, int (*flow_of)(int) = nullptr) {
  Trace trace = Trace::from_argument("rate:12Mbit/s");
  FileDescriptor wake(::eventfd(0, EFD_NONBLOCK));
  LinkEventRing events(wake.get());
  LinkQueue link(trace, 0, false, std::move(q), &events);
  AqmRun run;
  auto collect = [&] {
    events.drain([&](const LinkEvent& e) {
      if (e.kind == 'd') {
        run.dropped += e.packets;
        for (uint32_t k = 0; k < e.packets; k++) run.drop_times.push_back(e.time);
      }
    });
  };
  auto send = [&](Nanos now) {
    return [&run, now](std::span<const uint8_t> p) {
      Nanos arrival;
      std::memcpy(&arrival, p.data() + 24, sizeof arrival);
      run.sojourns.emplace_back(now, nanos_to_ms(now - arrival));
      run.flows.push_back(p[21]);
    };
  };
  int i = 0;
  for (Nanos now = 0; now < end; now += gap, i++) {
    for (Nanos due = link.next_departure(); due <= now; due = link.next_departure()) link.release(due, send(due));
    link.release(now, send(now));
    auto space = link.reserve();
    std::memset(space.data(), 0, 32);
    space[0] = 0x45;
    space[9] = 17;
    space[21] = static_cast<uint8_t>(flow_of ? flow_of(i) : 0);  // UDP source port: the flow
    std::memcpy(space.data() + 24, &now, sizeof now);
    link.commit(now, 1500);
    collect();
  }
  collect();
  return run;
}

double mean_sojourn(const AqmRun& run, Nanos from, int flow = -1) {
  double sum = 0;
  int n = 0;
  for (size_t k = 0; k < run.sojourns.size(); k++) {
    if (run.sojourns[k].first >= from && (flow < 0 || run.flows[k] == flow)) {
      sum += run.sojourns[k].second;
      n++;
    }
  }
  return n ? sum / n : -1;
}
}  // namespace

TEST(LinkQueue, codel_first_drop_after_interval_then_control_law) {
  // Twice the link's rate: the front packet's sojourn passes 5 ms at about 10 ms; CoDel waits
  // one interval (100 ms) above target before the first drop, then drops at 100/sqrt(n) ms.
  AqmRun run = feed(queue("codel", "packets=100000,target=5,interval=100"), ms / 2, 600 * ms);
  ASSERT_TRUE(run.drop_times.size() >= 4);
  const double first = nanos_to_ms(run.drop_times[0]);
  ASSERT_TRUE(first >= 105 && first <= 125);
  const double gap1 = nanos_to_ms(run.drop_times[1] - run.drop_times[0]);
  const double gap2 = nanos_to_ms(run.drop_times[2] - run.drop_times[1]);
  const double gap3 = nanos_to_ms(run.drop_times[3] - run.drop_times[2]);
  ASSERT_TRUE(std::abs(gap1 - 100.0) < 2);
  ASSERT_TRUE(std::abs(gap2 - 100.0 / std::sqrt(2.0)) < 2);
  ASSERT_TRUE(std::abs(gap3 - 100.0 / std::sqrt(3.0)) < 2);
  // Below the link's rate the queue stays short: no drops.
  AqmRun light = feed(queue("codel", "packets=100000,target=5,interval=100"), ms * 11 / 10, 2000 * ms);
  ASSERT_EQ(light.dropped, 0u);
}

TEST(LinkQueue, pie_holds_delay_near_reference_under_overload) {
  // An unresponsive sender at twice the link's rate: PIE raises its drop probability until the
  // queueing delay settles near qdelay_ref (15 ms); a drop-tail FIFO lets it grow past 1 s.
  AqmRun pie = feed(queue("pie", "packets=100000,qdelay_ref=15,max_burst=100"), ms / 2, 6000 * ms);
  AqmRun fifo = feed(queue("droptail", "packets=100000"), ms / 2, 6000 * ms);
  const double pie_delay = mean_sojourn(pie, 4000 * ms), fifo_delay = mean_sojourn(fifo, 4000 * ms);
  ASSERT_TRUE(pie.dropped > 4000);  // about half of 12000
  ASSERT_TRUE(pie_delay > 5 && pie_delay < 45);
  ASSERT_TRUE(fifo_delay > 1000);
  AqmRun light = feed(queue("pie", "packets=100000,qdelay_ref=15,max_burst=100"), 2 * ms, 3000 * ms);
  ASSERT_EQ(light.dropped, 0u);
}

TEST(LinkQueue, fq_codel_isolates_a_light_flow_from_a_heavy_one) {
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

#include <unistd.h>

#include "graphing/link_log_reader.hh"

TEST(LinkQueue, log_reader_summary_and_signal_delay) {
  char path[] = "/tmp/mm-unit-log.XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  const std::string text =
      "# mahimahi mm-link (Downlink) [x] > y\n# base timestamp: 10\n"
      "11 # 1500\n11 + 1000\n12 # 1500\n12 - 1000 1\n13 # 1500\n13 d 2 3000\n14 # 1500\n14 + 500\n20 # 1500\n"
      "20 - 500 6\n";
  ASSERT_TRUE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  const LinkLog log = LinkLog::read(path);
  ::unlink(path);
  ASSERT_EQ(log.opportunities.size(), 5u);
  ASSERT_EQ(log.first, 1.0);  // base timestamp subtracted
  ASSERT_EQ(log.last, 10.0);
  const LinkSummary s = summarize(log);
  ASSERT_TRUE(std::abs(s.capacity_mbps - 5 * 1500 * 8 / 0.009 / 1e6) < 1e-9);
  ASSERT_TRUE(std::abs(s.throughput_mbps - 1500 * 8 / 0.009 / 1e6) < 1e-9);
  ASSERT_EQ(s.dropped_packets, 2u);
  // Signal delay: packet sent at 1 arrived at 2; packet sent at 4 arrived at 10.
  const auto sd = signal_delays(log);  // ms 1..10
  ASSERT_EQ(sd.size(), 10u);
  ASSERT_EQ(sd[0], 1.0);           // at 1: 2 - 1
  ASSERT_EQ(sd[1], 8.0);           // at 2: nothing sent at 2 or 3 arrives before the one sent at 4 (10 - 2)
  ASSERT_EQ(sd[3], 6.0);           // at 4: 10 - 4
  ASSERT_TRUE(std::isnan(sd[9]));  // after the last send nothing arrives
  EXPECT_THROW_WITH(UserError, LinkLog::read("/nonexistent.log"), "cannot read log /nonexistent.log");
}
