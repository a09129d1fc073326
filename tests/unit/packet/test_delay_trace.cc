// SPDX-License-Identifier: GPL-3.0-or-later
// mm-delay's varying delay: traces (both formats, step and linear, repeating and once), their
// errors, the jitter distributions against their distribution functions (Kolmogorov-Smirnov),
// and the queue: a trace followed exactly, order kept when the delay drops (or overtaking when
// asked), jitter's draws seeded.
#include <gtest/gtest.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "expect.hh"
#include "packet/delay_trace.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {
constexpr Nanos kMs = 1'000'000;

DelayTrace parse(const std::string& text, double interval_ms = 0) {
  return parse_delay_trace(text, "trace.txt", interval_ms);
}

// Feeds the queue one packet (its index in the first 4 bytes) at each of `arrivals`, releasing
// at every departure; returns (index, departure) in the order they left.
std::vector<std::pair<int, Nanos>> run(VaryingDelayQueue& q, const std::vector<Nanos>& arrivals) {
  std::vector<std::pair<int, Nanos>> out;
  auto release_until = [&](Nanos t) {
    for (Nanos due = q.next_departure(); due <= t; due = q.next_departure()) {
      q.release(due, [&](std::span<const uint8_t> p, uint32_t) {
        int index;
        std::memcpy(&index, p.data(), sizeof index);
        out.emplace_back(index, due);
      });
    }
  };
  for (size_t i = 0; i < arrivals.size(); i++) {
    release_until(arrivals[i]);
    auto space = q.reserve();
    const int index = static_cast<int>(i);
    std::memcpy(space.data(), &index, sizeof index);
    q.commit(arrivals[i], 100, 0);
  }
  release_until(kNever - 1);
  return out;
}

// The largest distance between the draws' empirical distribution function and `cdf`.
template <class Cdf>
double ks_statistic(std::vector<double> v, Cdf cdf) {
  std::sort(v.begin(), v.end());
  double d = 0;
  const double n = static_cast<double>(v.size());
  for (size_t i = 0; i < v.size(); i++) {
    const double f = cdf(v[i]);
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  return d;
}
}  // namespace

TEST(DelayTrace, timestamped_steps_repeat_with_the_last_time_as_period) {
  const DelayTrace t = parse("# a comment\n0 10\n1000 60.5\n\n2000 10\n");
  EXPECT_EQ(t.period, 2000 * kMs);
  EXPECT_EQ(t.at(0), 10 * kMs);
  EXPECT_EQ(t.at(999 * kMs), 10 * kMs);
  EXPECT_EQ(t.at(1000 * kMs), 60'500'000);
  EXPECT_EQ(t.at(1999 * kMs), 60'500'000);
  EXPECT_EQ(t.at(2000 * kMs), 10 * kMs);  // the next round
  EXPECT_EQ(t.at(3500 * kMs), 60'500'000);
  EXPECT_EQ(t.at(-5), 10 * kMs);  // before the start: its first value
}

TEST(DelayTrace, linear_moves_between_points_and_once_holds_the_last) {
  DelayTrace t = parse("0 10\n1000 20\n2000 0\n");
  t.linear = true;
  EXPECT_EQ(t.at(500 * kMs), 15 * kMs);
  EXPECT_EQ(t.at(1500 * kMs), 10 * kMs);
  EXPECT_EQ(t.at(2500 * kMs), 15 * kMs);  // repeating
  t.once = true;
  EXPECT_EQ(t.at(2500 * kMs), 0);  // held at the last line's delay
  EXPECT_EQ(t.at(1750 * kMs), 5 * kMs);
}

TEST(DelayTrace, one_value_per_line_at_an_interval_as_pr_135_and_leoreplayer) {
  DelayTrace t = parse("20\n30\n40\n", 10);
  EXPECT_EQ(t.period, 30 * kMs);
  EXPECT_EQ(t.at(0), 20 * kMs);
  EXPECT_EQ(t.at(19'999'999), 30 * kMs);  // index floor(t / interval)
  EXPECT_EQ(t.at(25 * kMs), 40 * kMs);
  EXPECT_EQ(t.at(31 * kMs), 20 * kMs);  // mod the number of lines
  t.linear = true;
  EXPECT_EQ(t.at(5 * kMs), 25 * kMs);
  EXPECT_EQ(t.at(25 * kMs), 30 * kMs);  // from the last value back toward the first
  t.once = true;
  EXPECT_EQ(t.at(25 * kMs), 40 * kMs);
  EXPECT_EQ(t.at(100 * kMs), 40 * kMs);
}

TEST(DelayTrace, bad_traces_are_errors_naming_the_file_and_line) {
  EXPECT_THROW_WITH(UserError, parse("0 10\n5 20\n3 30\n"), "trace.txt line 3: times must increase");
  EXPECT_THROW_WITH(UserError, parse("1 10\n5 20\n"), "trace.txt line 1: the first time must be 0");
  EXPECT_THROW_WITH(UserError, parse("0 -1\n5 20\n"), "line 1: \"-1\" is not a number of milliseconds");
  EXPECT_THROW_WITH(UserError, parse("0 10\n5 4000000\n"), "line 2: \"4000000\" is not a number");
  EXPECT_THROW_WITH(UserError, parse("0 10\n5 nan\n"), "\"nan\" is not a number");
  EXPECT_THROW_WITH(UserError, parse("0 10\n20\n"), "line 2: every line must have the same number of fields");
  EXPECT_THROW_WITH(UserError, parse("0 10 3\n"), "line 1: expected \"TIME-MS VALUE\" or \"VALUE\", got 3 fields");
  EXPECT_THROW_WITH(UserError, parse("# nothing\n\n"), "trace.txt: no values in it");
  EXPECT_THROW_WITH(UserError, parse("0 10\n"), "needs two lines at least");
  EXPECT_THROW_WITH(UserError, parse("10\n20\n"), "give its interval with --delay-interval=MS");
  EXPECT_THROW_WITH(UserError, parse("0 10\n5 20\n", 10), "--delay-interval is for files of one value per line");
}

// The delays packets get follow the trace exactly while they are spaced beyond its changes.
TEST(VaryingDelayQueue, packets_get_the_traces_delay_at_their_arrival) {
  VaryingDelayQueue q(0, parse("0 10\n100 50\n200 5\n300 5\n"), Jitter(), false, 0);
  std::vector<Nanos> arrivals;
  for (Nanos t = 0; t < 600 * kMs; t += 60 * kMs) arrivals.push_back(t);
  const auto out = run(q, arrivals);
  ASSERT_EQ(out.size(), arrivals.size());
  const DelayTrace t = parse("0 10\n100 50\n200 5\n300 5\n");
  for (const auto& [index, leave] : out) {
    const Nanos arrival = arrivals[static_cast<size_t>(index)];
    EXPECT_EQ(leave - arrival, t.at(arrival)) << index;  // to the nanosecond
  }
}

// When the delay drops by more than the packets' spacing: in order by default (a packet waits
// for its predecessor), each at its own time with overtaking.
TEST(VaryingDelayQueue, a_drop_in_delay_keeps_order_unless_overtaking_is_asked) {
  const std::string text = "0 100\n50 10\n1000 10\n";
  const std::vector<Nanos> arrivals = {40 * kMs, 45 * kMs, 55 * kMs, 60 * kMs};
  VaryingDelayQueue fifo(0, parse(text), Jitter(), false, 0);
  const auto in_order = run(fifo, arrivals);
  ASSERT_EQ(in_order.size(), 4u);
  for (int i = 0; i < 4; i++) EXPECT_EQ(in_order[static_cast<size_t>(i)].first, i);
  EXPECT_EQ(in_order[2].second, 145 * kMs);  // behind packet 1 (45 + 100), not at 65
  VaryingDelayQueue overtake(0, parse(text), Jitter(), true, 0);
  const auto reordered = run(overtake, arrivals);
  ASSERT_EQ(reordered.size(), 4u);
  EXPECT_EQ(reordered[0], std::make_pair(2, 65 * kMs));
  EXPECT_EQ(reordered[1], std::make_pair(3, 70 * kMs));
  EXPECT_EQ(reordered[2], std::make_pair(0, 140 * kMs));
  EXPECT_EQ(reordered[3], std::make_pair(1, 145 * kMs));
}

TEST(VaryingDelayQueue, the_trace_counts_from_the_shells_start) {
  VaryingDelayQueue q(0, parse("0 10\n100 50\n200 50\n"), Jitter(), false, 1000 * kMs);
  const auto out = run(q, {1050 * kMs, 1150 * kMs});
  EXPECT_EQ(out[0].second - 1050 * kMs, 10 * kMs);
  EXPECT_EQ(out[1].second - 1150 * kMs, 50 * kMs);
}

// Jitter's draws follow the distribution asked for: the Kolmogorov-Smirnov statistic of 20,000
// draws against the normal and uniform distribution functions stays under its 0.1 % critical
// value (1.95 / sqrt(n) = 0.0138), and the mixes have mean 0 and standard deviation sigma.
TEST(Jitter, draws_follow_the_distribution) {
  const size_t n = 20000;
  const Nanos sigma = 5 * kMs;
  auto draws = [&](Jitter::Distribution d, uint64_t seed) {
    Jitter j(d, sigma, seed);
    std::vector<double> v;
    for (size_t i = 0; i < n; i++) v.push_back(static_cast<double>(j.draw()) / static_cast<double>(sigma));
    return v;
  };
  const double critical = 1.95 / std::sqrt(static_cast<double>(n));
  EXPECT_LT(ks_statistic(draws(Jitter::Distribution::kNormal, 1),
                         [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }),
            critical);
  const double half = std::sqrt(3.0);
  EXPECT_LT(ks_statistic(draws(Jitter::Distribution::kUniform, 2),
                         [&](double x) { return std::clamp((x + half) / (2 * half), 0.0, 1.0); }),
            critical);
  // A wrong distribution is seen: uniform draws against the normal function.
  EXPECT_GT(ks_statistic(draws(Jitter::Distribution::kUniform, 2),
                         [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }),
            critical);
  for (auto d : {Jitter::Distribution::kNormal, Jitter::Distribution::kUniform, Jitter::Distribution::kParetoNormal}) {
    const std::vector<double> v = draws(d, 3);
    double mean = 0, square = 0, cube = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(n);
    for (double x : v) square += (x - mean) * (x - mean), cube += (x - mean) * (x - mean) * (x - mean);
    const double sd = std::sqrt(square / static_cast<double>(n));
    EXPECT_NEAR(mean, 0, 5 / std::sqrt(static_cast<double>(n))) << Jitter::name(d);
    EXPECT_NEAR(sd, 1, 0.03) << Jitter::name(d);
    if (d == Jitter::Distribution::kParetoNormal) {
      EXPECT_GT(cube / static_cast<double>(n), 0.3);  // Pareto's long right tail
    }
  }
}

TEST(VaryingDelayQueue, jitter_is_seeded_and_keeps_order_by_default) {
  std::vector<Nanos> arrivals;
  for (int i = 0; i < 200; i++) arrivals.push_back(i * kMs);  // 1 ms apart, jitter of 5 ms
  VaryingDelayQueue a(20 * kMs, {}, Jitter(Jitter::Distribution::kNormal, 5 * kMs, 9), false, 0);
  VaryingDelayQueue b(20 * kMs, {}, Jitter(Jitter::Distribution::kNormal, 5 * kMs, 9), false, 0);
  const auto x = run(a, arrivals), y = run(b, arrivals);
  EXPECT_EQ(x, y);
  for (size_t i = 0; i < x.size(); i++) EXPECT_EQ(x[i].first, static_cast<int>(i));
  VaryingDelayQueue c(20 * kMs, {}, Jitter(Jitter::Distribution::kNormal, 5 * kMs, 9), true, 0);
  const auto z = run(c, arrivals);
  ASSERT_EQ(z.size(), arrivals.size());
  size_t out_of_order = 0;
  for (size_t i = 0; i < z.size(); i++) out_of_order += z[i].first != static_cast<int>(i);
  EXPECT_GT(out_of_order, 50u);  // jitter of 5 ms over packets 1 ms apart reorders most
  for (size_t i = 1; i < z.size(); i++) EXPECT_GE(z[i].second, z[i - 1].second);  // leaving in time order
}

// Reordering: a jumper leaves just before the GAP-th packet before it, so it is exactly GAP places
// early where no packet near it jumped too; about P of the packets jump (here with plenty
// queued: 1 ms apart through 20 ms). Duplication: about P of them leave twice, the copy next.
TEST(VaryingDelayQueue, reordering_jumps_a_packet_gap_places_ahead_and_duplication_repeats_it) {
  std::vector<Nanos> arrivals;
  for (int i = 0; i < 4000; i++) arrivals.push_back(i * kMs);
  Reordering r;
  r.probability = 0.1;
  r.gap = 3;
  r.seed = 5;
  VaryingDelayQueue q(20 * kMs, {}, Jitter(), false, 0, r);
  const auto out = run(q, arrivals);
  ASSERT_EQ(out.size(), arrivals.size());
  std::vector<int> position(arrivals.size());
  for (size_t i = 0; i < out.size(); i++) position[static_cast<size_t>(out[i].first)] = static_cast<int>(i);
  std::vector<bool> jumped(arrivals.size());
  size_t jumps = 0;
  for (size_t i = 0; i < out.size(); i++) {
    jumped[i] = position[i] < static_cast<int>(i);
    jumps += jumped[i];
  }
  const double n = static_cast<double>(arrivals.size());
  EXPECT_NEAR(static_cast<double>(jumps) / n, 0.1, 5 * std::sqrt(0.1 * 0.9 / n));
  size_t exact = 0;
  for (size_t i = 3; i < out.size(); i++) {
    // Alone: none of the 3 it passes jumped, nor any of the 3 after it (which would pass it too).
    bool alone = jumped[i];
    for (size_t k = 1; k <= 3; k++) alone = alone && !jumped[i - k] && !(i + k < out.size() && jumped[i + k]);
    if (alone) {
      EXPECT_EQ(position[i], static_cast<int>(i) - 3) << i;
      exact++;
    }
  }
  EXPECT_GT(exact, 200u);
  for (size_t i = 1; i < out.size(); i++) EXPECT_GE(out[i].second, out[i - 1].second);  // in time order

  Reordering d;
  d.duplicate = 0.05;
  d.seed = 6;
  VaryingDelayQueue dup(20 * kMs, {}, Jitter(), false, 0, d);
  const auto twice = run(dup, arrivals);
  const size_t copies = twice.size() - arrivals.size();
  EXPECT_NEAR(static_cast<double>(copies) / n, 0.05, 5 * std::sqrt(0.05 * 0.95 / n));
  for (size_t i = 1; i < twice.size(); i++) {
    EXPECT_GE(twice[i].first, twice[i - 1].first);  // in order, each copy next to its packet
  }
  // Nothing queued to jump over (packets 50 ms apart through 20 ms): no reordering.
  std::vector<Nanos> sparse;
  for (int i = 0; i < 100; i++) sparse.push_back(i * 50 * kMs);
  Reordering always;
  always.probability = 1;
  VaryingDelayQueue lone(20 * kMs, {}, Jitter(), false, 0, always);
  const auto in_order = run(lone, sparse);
  for (size_t i = 0; i < in_order.size(); i++) EXPECT_EQ(in_order[i].first, static_cast<int>(i));
}

TEST(VaryingDelayQueue, its_log_gives_each_departure_its_own_arrival_in_any_order) {
  // Overtaking with a drop in delay, and duplication: every departure's arrival is the one of
  // the packet that left (the ring's own time is the departure), in the order they left.
  FileDescriptor wake(::eventfd(0, EFD_NONBLOCK));
  LinkEventRing ring(wake.get());
  Reordering d;
  d.duplicate = 0.3;
  d.seed = 9;
  VaryingDelayQueue q(0, parse("0 100\n50 10\n1000 10\n"), Jitter(), true, 0, d, &ring);
  const std::vector<Nanos> arrivals = {40 * kMs, 45 * kMs, 55 * kMs, 60 * kMs, 70 * kMs};
  const auto out = run(q, arrivals);
  std::vector<LinkEvent> events;
  ring.drain([&](const LinkEvent& e) { events.push_back(e); });
  size_t departures = 0, next_arrival = 0;
  for (const LinkEvent& e : events) {
    if (e.kind == '+') {
      EXPECT_EQ(e.time, arrivals[next_arrival++]);
      continue;
    }
    ASSERT_EQ(e.kind, '-');
    ASSERT_LT(departures, out.size());
    const auto [index, when] = out[departures++];
    EXPECT_EQ(e.time, when);
    EXPECT_EQ(e.arrival, arrivals[static_cast<size_t>(index)]) << "departure " << departures;
    EXPECT_EQ(e.bytes, 100u);
  }
  EXPECT_EQ(next_arrival, arrivals.size());  // one arrival each, copies or not
  EXPECT_EQ(departures, out.size());
  EXPECT_GT(out.size(), arrivals.size());  // this seed duplicates some
  EXPECT_EQ(out[0].first, 2);              // and packet 2 overtook 0 and 1

  // In order (fifo), with a backlog that outgrows the arrival FIFO's first size.
  LinkEventRing ring2(wake.get());
  VaryingDelayQueue fifo(500 * kMs, {}, Jitter(), false, 0, {}, &ring2);
  std::vector<Nanos> many;
  for (int i = 0; i < 20000; i++) many.push_back(i * 10'000);  // 100 per ms: 50,000 would queue
  size_t checked = 0;
  auto check = [&] {
    ring2.drain([&](const LinkEvent& e) {
      if (e.kind == '-') {
        EXPECT_EQ(e.arrival, many[checked]);
        EXPECT_GE(e.time - e.arrival, 500 * kMs);
        checked++;
      }
    });
  };
  for (size_t i = 0; i < many.size(); i++) {
    if (i % 1000 == 0) check();  // the ring holds 32,768 events
    fifo.reserve();
    fifo.commit(many[i], 100, 0);
  }
  check();
  fifo.release(1000 * kMs, [](std::span<const uint8_t>, uint32_t) {});
  check();
  EXPECT_EQ(checked, many.size());
}
