// SPDX-License-Identifier: GPL-3.0-or-later
// mm-loss's loss models against theory: loss rates from each chain's stationary distribution
// (computed here by iterating the chain's matrix, independently of LossModel::loss_rate), the
// mean time in Gilbert-Elliott's Bad state (1/r) and the mean burst length of the simple Gilbert
// model, isolated losses, netem's defaults, seeds, and the errors of bad parameters. Tolerances
// are at least five standard errors of the estimates (for correlated chains bounded from above
// through the number of bursts, each burst and gap counted as one independent sample twice
// over), so that a correct model fails less than once in a million runs; a wrong transition
// (netem's old inverted h, a chain starting in Bad) moves them by far more.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "expect.hh"
#include "packet/loss_model.hh"
#include "util/exception.hh"

namespace {
LossModel parse(const std::vector<std::string>& words) { return LossModel::parse(words); }

// The four-state chain's long-run loss rate by iterating its transition matrix from state 1.
double four_state_loss_by_iteration(const LossModel& m) {
  const double p13 = m.p[0], p31 = m.p[1], p32 = m.p[2], p23 = m.p[3], p14 = m.p[4];
  const double t[4][4] = {
      {1 - p13 - p14, 0, p13, p14}, {0, 1 - p23, p23, 0}, {p31, p32, 1 - p31 - p32, 0}, {1, 0, 0, 0}};
  double pi[4] = {1, 0, 0, 0};
  for (int step = 0; step < 200000; step++) {
    double next[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) next[j] += pi[i] * t[i][j];
    for (int j = 0; j < 4; j++) pi[j] = next[j];
  }
  return pi[2] + pi[3];
}

struct LossRun {
  double loss_rate = 0;
  double mean_burst = 0;     // consecutive losses
  double mean_bad_stay = 0;  // Gilbert-Elliott: packets per visit to Bad
  size_t bursts = 0, bad_visits = 0;
  bool adjacent_losses = false;
};

LossRun run(const LossModel& m, uint64_t seed, size_t packets) {
  LossGate gate(m, seed);
  LossRun r;
  size_t lost = 0, burst_packets = 0, bad_packets = 0;
  bool previous_lost = false;
  for (size_t i = 0; i < packets; i++) {
    const bool was_bad = m.kind == LossModel::Kind::kGilbertElliott && gate.state() == 2;
    if (was_bad) bad_packets++;
    const bool l = gate.lose();
    if (l) {
      lost++;
      burst_packets++;
      if (!previous_lost) r.bursts++;
      if (previous_lost) r.adjacent_losses = true;
    }
    previous_lost = l;
    if (was_bad && gate.state() != 2) r.bad_visits++;
  }
  r.loss_rate = static_cast<double>(lost) / static_cast<double>(packets);
  r.mean_burst = r.bursts ? static_cast<double>(burst_packets) / static_cast<double>(r.bursts) : 0;
  r.mean_bad_stay = r.bad_visits ? static_cast<double>(bad_packets) / static_cast<double>(r.bad_visits) : 0;
  return r;
}
}  // namespace

TEST(LossModel, netem_defaults_fill_the_parameters_left_out) {
  EXPECT_EQ(parse({"0.01"}).describe(), "0.01");
  EXPECT_EQ(parse({"1%"}).describe(), "0.01");
  EXPECT_EQ(parse({"gemodel", "1%"}).describe(), "gemodel 0.01 0.99 1 0");            // Bernoulli
  EXPECT_EQ(parse({"gemodel", "0.01", "0.25"}).describe(), "gemodel 0.01 0.25 1 0");  // simple Gilbert
  EXPECT_EQ(parse({"gemodel", "1%", "10%", "70%", "0.1%"}).describe(), "gemodel 0.01 0.1 0.7 0.001");
  EXPECT_EQ(parse({"state", "0.02"}).describe(), "state 0.02 0.98 0 1 0");
  EXPECT_EQ(parse({"state", "0.02", "0.3", "0.1", "0.2", "0.001"}).describe(), "state 0.02 0.3 0.1 0.2 0.001");
  // netem's one-parameter forms are Bernoulli: the same loss rate.
  EXPECT_NEAR(parse({"gemodel", "0.03"}).loss_rate(), 0.03, 1e-12);
  EXPECT_NEAR(parse({"state", "0.03"}).loss_rate(), 0.03, 1e-12);
}

TEST(LossModel, bad_parameters_are_errors_naming_them) {
  EXPECT_THROW_WITH(UsageError, parse({"1.5"}), "loss rate must be a probability between 0 and 1");
  EXPECT_THROW_WITH(UsageError, parse({"-0.1"}), "loss rate must be a probability");
  EXPECT_THROW_WITH(UsageError, parse({"101%"}), "\"101%\"");
  EXPECT_THROW_WITH(UsageError, parse({"lots"}), "not \"lots\"");
  EXPECT_THROW_WITH(UsageError, parse({"gemodel"}), "gemodel needs its probabilities (p [r [1-h [1-k]]])");
  EXPECT_THROW_WITH(UsageError, parse({"gemodel", "0.1", "2"}), "gemodel r must be a probability");
  EXPECT_THROW_WITH(UsageError, parse({"gemodel", "0.1", "0.1", "0.1", "0.1", "0.1"}), "gemodel takes at most 4");
  EXPECT_THROW_WITH(UsageError, parse({"state", "0.6", "0.5", "0", "1", "0.5"}), "state p13 + p14 must be at most 1");
  EXPECT_THROW_WITH(UsageError, parse({"state", "0.1", "0.6", "0.5"}), "state p31 + p32 must be at most 1");
  EXPECT_THROW_WITH(UsageError, parse({"state", "nan"}), "state p13 must be a probability");
}

TEST(LossModel, bernoulli_loses_at_its_rate) {
  const size_t n = 1'000'000;
  const double p = 0.1, se = std::sqrt(p * (1 - p) / n);
  EXPECT_NEAR(run(LossModel::bernoulli(p), 1, n).loss_rate, p, 5 * se);
  EXPECT_EQ(run(LossModel::bernoulli(0), 1, 1000).loss_rate, 0);
  EXPECT_EQ(run(LossModel::bernoulli(1), 1, 1000).loss_rate, 1);
}

// Simple Gilbert (1-h = 1, 1-k = 0): every packet in Bad is lost, so bursts are the visits to
// Bad, geometric with mean 1/r; the loss rate is p / (p + r).
TEST(LossModel, simple_gilbert_bursts_last_one_over_r) {
  const LossModel m = parse({"gemodel", "0.01", "0.25"});
  const size_t n = 2'000'000;
  const LossRun r = run(m, 7, n);
  const double p = 0.01, q = 0.25, rate = p / (p + q);
  EXPECT_NEAR(m.loss_rate(), rate, 1e-12);
  // About n rate q bursts (19,000); the loss count's standard error is that of the sum of
  // their lengths and of the gaps: sqrt(bursts) times the lengths' spread, generously.
  const double bursts = static_cast<double>(r.bursts);
  const double length_sd = std::sqrt(1 - q) / q;
  EXPECT_NEAR(r.mean_burst, 1 / q, 5 * length_sd / std::sqrt(bursts));
  EXPECT_NEAR(r.loss_rate, rate, 5 * rate * std::sqrt(2.0 / bursts) * 2);
  EXPECT_NEAR(r.mean_bad_stay, 1 / q, 5 * length_sd / std::sqrt(static_cast<double>(r.bad_visits)));
}

// Full Gilbert-Elliott: losses in both states; Bad still lasts 1/r packets on average.
TEST(LossModel, gilbert_elliott_loss_rate_and_time_in_bad) {
  const LossModel m = parse({"gemodel", "2%", "20%", "70%", "0.5%"});
  const double p = 0.02, q = 0.2, bad = p / (p + q), rate = (1 - bad) * 0.005 + bad * 0.7;
  EXPECT_NEAR(m.loss_rate(), rate, 1e-12);
  const LossRun r = run(m, 11, 2'000'000);
  const double visits = static_cast<double>(r.bad_visits);
  EXPECT_NEAR(r.mean_bad_stay, 1 / q, 5 * (std::sqrt(1 - q) / q) / std::sqrt(visits));
  EXPECT_NEAR(r.loss_rate, rate, 5 * rate * std::sqrt(2.0 / visits) * 2);
}

TEST(LossModel, four_state_loss_rate_follows_its_chain) {
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"state", "0.01", "0.3", "0.2", "0.4", "0.002"},
                                             {"state", "0.05", "0.5"},
                                             {"state", "0.02", "0.1", "0.6", "0.05", "0.01"}}) {
    const LossModel m = parse(words);
    const double theory = four_state_loss_by_iteration(m);
    EXPECT_NEAR(m.loss_rate(), theory, 1e-9) << m.describe();
    const LossRun r = run(m, 3, 2'000'000);
    // Losses come in bursts (at least one per visit to 3 or 4): bound the spread by them.
    EXPECT_NEAR(r.loss_rate, theory, 5 * theory * 2 / std::sqrt(static_cast<double>(r.bursts))) << m.describe();
  }
}

// p14 alone: isolated losses only (state 4 always returns to 1), never two in a row.
TEST(LossModel, four_state_isolated_losses_are_never_adjacent) {
  const LossModel m = parse({"state", "0", "1", "0", "1", "0.2"});
  const LossRun r = run(m, 5, 1'000'000);
  EXPECT_FALSE(r.adjacent_losses);
  const double rate = 0.2 / 1.2;
  EXPECT_NEAR(m.loss_rate(), rate, 1e-12);
  EXPECT_NEAR(r.loss_rate, rate, 5 * std::sqrt(rate * (1 - rate) / 1e6) * 2);
}

TEST(LossModel, a_seed_repeats_the_decisions_and_another_does_not) {
  const LossModel m = parse({"gemodel", "0.05", "0.3", "0.8", "0.01"});
  LossGate a(m, 42), b(m, 42), c(m, 43);
  size_t same = 0, differ = 0;
  for (int i = 0; i < 10000; i++) {
    const bool x = a.lose(), y = b.lose(), z = c.lose();
    same += x == y;
    differ += x != z;
  }
  EXPECT_EQ(same, 10000u);
  EXPECT_GT(differ, 0u);
}

// A loss trace: each packet is lost with the probability of the moment it arrives.
TEST(LossModel, a_loss_trace_gives_each_moment_its_probability) {
  const LossModel m = parse({"trace", "loss.txt"});
  EXPECT_EQ(m.describe(), "trace loss.txt");
  constexpr Nanos kMs = 1'000'000;
  TimeSeries trace = parse_time_series("0 0\n100 1\n200 0.25\n300 0.25\n", "loss.txt", 0, loss_trace_kind());
  LossGate gate(m, 3, trace, 1000 * kMs);
  size_t kept_first = 0, lost_second = 0, lost_third = 0;
  const int n = 20000;
  for (int i = 0; i < n; i++) kept_first += gate.admit(1000 * kMs + (i % 100) * kMs);  // the first 100 ms
  for (int i = 0; i < n; i++) lost_second += !gate.admit(1100 * kMs + (i % 100) * kMs);
  for (int i = 0; i < n; i++) lost_third += !gate.admit(1200 * kMs + (i % 100) * kMs);
  EXPECT_EQ(kept_first, static_cast<size_t>(n));
  EXPECT_EQ(lost_second, static_cast<size_t>(n));
  EXPECT_NEAR(static_cast<double>(lost_third) / n, 0.25, 5 * std::sqrt(0.25 * 0.75 / n));
  EXPECT_TRUE(gate.admit(1300 * kMs));  // the next round: 0 again
  EXPECT_THROW_WITH(UserError, parse_time_series("0 0\n5 1.5\n", "loss.txt", 0, loss_trace_kind()),
                    "loss.txt line 2: \"1.5\" is not a probability from 0 to 1");
  EXPECT_THROW_WITH(UserError, parse_time_series("0.1\n0.2\n", "loss.txt", 0, loss_trace_kind()),
                    "give its interval with --loss-interval=MS");
  EXPECT_THROW_WITH(UsageError, parse({"trace"}), "trace takes one FILE");
}
