// SPDX-License-Identifier: GPL-3.0-or-later
// mm-trace rattan: Rattan's netem-trace configurations (JSON and TOML, as its own assets write
// them) as the shells' files, and the configurations it refuses, with the reason.
#include <string>

#include "expect.hh"
#include "packet/delay_trace.hh"
#include "packet/rattan_trace.hh"
#include "packet/trace.hh"
#include "util/exception.hh"

namespace {
RattanTrace json(const std::string& text) { return convert_rattan_trace(text, false, "t.json"); }
RattanTrace toml(const std::string& text) { return convert_rattan_trace(text, true, "t.toml"); }
}  // namespace

TEST(RattanTrace, a_repeating_delay_pattern_is_a_delay_trace_mm_delay_reads) {
  const RattanTrace t = json(R"({"RepeatedDelayPatternConfig": {"pattern": [
      {"StaticDelayConfig": {"delay": "10ms", "duration": "1s"}},
      {"StaticDelayConfig": {"delay": "50ms", "duration": "1s"}}], "count": 0}})");
  EXPECT_EQ(t.kind, RattanTrace::Kind::kDelay);
  EXPECT_TRUE(t.repeats);
  EXPECT_EQ(t.period_ms, 2000);
  EXPECT_EQ(t.text, "# time-ms delay-ms (mm-trace rattan t.json)\n0 10\n1000 50\n2000 50\n");
  const DelayTrace trace = parse_delay_trace(t.text, "out", 0);  // what mm-delay reads
  EXPECT_EQ(trace.at(500 * kNanosPerMs), 10 * kNanosPerMs);
  EXPECT_EQ(trace.at(1500 * kNanosPerMs), 50 * kNanosPerMs);
  EXPECT_EQ(trace.at(2500 * kNanosPerMs), 10 * kNanosPerMs);  // it repeats, as Rattan's count 0
}

TEST(RattanTrace, durations_and_delays_in_every_form_and_counts_that_end) {
  // {secs, nanos} (netem-trace without its "human" feature), humantime sums, sub-millisecond.
  const RattanTrace t = json(R"({"RepeatedDelayPatternConfig": {"pattern": [
      {"StaticDelayConfig": {"delay": {"secs": 0, "nanos": 2500000}, "duration": {"secs": 1, "nanos": 500000000}}},
      {"StaticDelayConfig": {"delay": "250us", "duration": "1m 30s"}}], "count": 2}})");
  EXPECT_FALSE(t.repeats);  // played twice, then it ends (mm-delay --once holds the last value)
  EXPECT_EQ(t.steps, 4u);
  EXPECT_EQ(t.period_ms, 2 * (1500 + 90000));
  EXPECT_EQ(t.text,
            "# time-ms delay-ms (mm-trace rattan t.json)\n0 2.5\n1500 0.25\n91500 2.5\n93000 0.25\n183000 0.25\n");
}

TEST(RattanTrace, rattans_own_toml_loss_and_bandwidth_assets) {
  const RattanTrace loss = toml(R"([RepeatedLossPatternConfig]
count = 0

[[RepeatedLossPatternConfig.pattern]]
[RepeatedLossPatternConfig.pattern.StaticLossConfig]
loss = [0.0]
duration = "1s"

[[RepeatedLossPatternConfig.pattern]]
[RepeatedLossPatternConfig.pattern.StaticLossConfig]
loss = [0.5]
duration = "1s"
)");
  EXPECT_EQ(loss.kind, RattanTrace::Kind::kLoss);
  EXPECT_EQ(loss.text, "# time-ms loss-probability (mm-trace rattan t.toml)\n0 0\n1000 0.5\n2000 0.5\n");
  EXPECT_NO_THROW(parse_time_series(loss.text, "out", 0, loss_trace_kind()));
  // 32 Mbit/s for a second, 100 ms each of 16 and 48 Mbit/s 45 times, 32 for a second.
  const RattanTrace bw = toml(R"([RepeatedBwPatternConfig]
count = 0
[[RepeatedBwPatternConfig.pattern]]
[RepeatedBwPatternConfig.pattern.StaticBwConfig]
bw = "32Mbps"
duration = "1s"
[[RepeatedBwPatternConfig.pattern]]
[RepeatedBwPatternConfig.pattern.RepeatedBwPatternConfig]
count = 45
[[RepeatedBwPatternConfig.pattern.RepeatedBwPatternConfig.pattern]]
[RepeatedBwPatternConfig.pattern.RepeatedBwPatternConfig.pattern.TraceBwConfig]
pattern = [["100ms", ["16Mbps", "48Mbps"]]]
[[RepeatedBwPatternConfig.pattern]]
[RepeatedBwPatternConfig.pattern.StaticBwConfig]
bw = {gbps = 0, bps = 32000000}
duration = "1s"
)");
  EXPECT_EQ(bw.kind, RattanTrace::Kind::kBandwidth);
  EXPECT_EQ(bw.steps, 92u);
  const Trace trace = Trace::parse(bw.text, "out");
  EXPECT_EQ(trace.period(), 11000 * kNanosPerMs);
  // 32 Mbit/s on average: 11 s of it in 1500-byte opportunities.
  EXPECT_NEAR(static_cast<double>(trace.offsets().size()), 32e6 * 11 / 12000, 2);
  // The first second at 32 Mbit/s, the next 100 ms at 16 (within the opportunities of a
  // millisecond: an opportunity falls at the end of the millisecond that completes it).
  EXPECT_NEAR(static_cast<double>(trace.opportunities_until(1000 * kNanosPerMs - 1, true)), 32e6 / 12000, 3);
  EXPECT_NEAR(static_cast<double>(trace.opportunities_until(1100 * kNanosPerMs - 1, true) -
                                  trace.opportunities_until(1000 * kNanosPerMs - 1, true)),
              16e6 * 0.1 / 12000, 3);
}

TEST(RattanTrace, refuses_what_has_no_shell_with_the_reason) {
  EXPECT_THROW_WITH(UserError, json(R"({"StaticLossConfig": {"loss": [0.1, 0.6], "duration": "10s"}})"),
                    "it is a Gilbert model, mm-loss uplink gemodel 0.1 0.4");
  EXPECT_THROW_WITH(UserError, json(R"({"StaticLossConfig": {"loss": [0.1, 0.6, 0.9], "duration": "10s"}})"),
                    "one probability at a time");
  EXPECT_THROW_WITH(UserError, json(R"({"NormalizedBwConfig": {"mean": "12Mbps"}})"), "random model");
  EXPECT_THROW_WITH(UserError, json(R"({"StaticDelayPerPacketConfig": {"delay": "10ms", "count": 1}})"), "--jitter");
  EXPECT_THROW_WITH(UserError, json(R"({"StaticLossConfig": {"loss": [1.5], "duration": "1s"}})"),
                    "\"1.5\" is not a probability from 0 to 1");
  EXPECT_THROW_WITH(UserError, json(R"({"StaticDelayConfig": {"delay": "2h", "duration": "1s"}})"),
                    "more than an hour");
  EXPECT_THROW_WITH(UserError, json(R"({"StaticDelayConfig": {"delay": "10 parsecs", "duration": "1s"}})"),
                    "StaticDelayConfig.delay: \"10 parsecs\" is not a duration");
  EXPECT_THROW_WITH(UserError, json(R"({"StaticBwConfig": {"bw": "2Tbps", "duration": "1s"}})"), "more than 1 Tbit/s");
  // A pattern that repeats forever after other steps: the shells' traces loop from their start.
  EXPECT_THROW_WITH(UserError, json(R"({"RepeatedDelayPatternConfig": {"count": 1, "pattern": [
      {"StaticDelayConfig": {"delay": "1ms", "duration": "1s"}},
      {"RepeatedDelayPatternConfig": {"count": 0, "pattern": [{"StaticDelayConfig": {"delay": "2ms", "duration": "1s"}}]}}]}})"),
                    "repeats forever (count 0) after 1 steps");
  // Counts multiply: bounded before anything is built.
  EXPECT_THROW_WITH(UserError, json(R"({"RepeatedDelayPatternConfig": {"count": 100000, "pattern": [
      {"RepeatedDelayPatternConfig": {"count": 100000, "pattern": [{"StaticDelayConfig": {"delay": "1ms", "duration": "1ms"}}]}}]}})"),
                    "more than 10000000 steps");
  EXPECT_THROW_WITH(UserError, json(R"({"RepeatedDelayPatternConfig": {"pattern": []}})"), "expected a list of models");
  EXPECT_THROW_WITH(UserError, json(R"({"a": 1, "b": 2})"), "expected one model");
  EXPECT_THROW_WITH(UserError, json("{"), "t.json: not JSON");
  // A number beyond a double is the parser's out_of_range, not a parse_error (found by the fuzzer).
  EXPECT_THROW_WITH(UserError, json(R"({"StaticDelayConfig": {"delay": 88e888888888880}})"), "t.json: not JSON");
  EXPECT_THROW_WITH(UserError, toml("a = \n"), "t.toml:1: not TOML");
  EXPECT_THROW_WITH(UserError, json(R"({"StaticBwConfig": {"bw": "1bps", "duration": "1s"}})"), "too low");
}
