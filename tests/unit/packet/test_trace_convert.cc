// SPDX-License-Identifier: GPL-3.0-or-later
// mm-trace convert: rate series to traces, the fractions of an opportunity carried over, and
// silence at the end kept.
#include <algorithm>
#include <string>

#include "expect.hh"
#include "packet/delay_trace.hh"
#include "packet/trace.hh"
#include "packet/trace_convert.hh"
#include "packet/trace_stats.hh"
#include "util/exception.hh"

namespace {

Trace converted(const std::string& text, const std::string& format) {
  return Trace::parse(convert_rate_series(text, format, "rates"), "converted");
}

std::string repeated(const std::string& line, int count) {
  std::string text;
  for (int i = 0; i < count; i++) text += line;
  return text;
}

}  // namespace

TEST(TraceConvert, rates_become_opportunities_with_fractions_carried) {
  // 14.7 Mbit/s for 1 s: 14.7e6 / 12000 = 1225 opportunities.
  ASSERT_EQ(converted(repeated("14700\n", 1000), "kbps-per-ms").offsets().size(), 1225u);
  // (10 + 20 + 6) Mbit over 3 s = 3000 opportunities.
  const Trace csv = converted("seconds,mbps\n0,10\n1,20\n2,6\n", "csv");
  ASSERT_EQ(csv.offsets().size(), 3000u);
  ASSERT_EQ(csv.period(), 3000 * kNanosPerMs);
  ASSERT_EQ(convert_rate_series("0 12\n", "ms-kbps", "r"), "1000\n");  // 12 kbit/s for 1 s: one
  EXPECT_THROW_WITH(UsageError, convert_rate_series("1\n", "tsv", "r"), "unknown --format \"tsv\"");
  EXPECT_THROW_WITH(UserError, convert_rate_series("0 0\n", "ms-kbps", "r"),
                    "r: the rates are too low to give a single 1500-byte opportunity");
  EXPECT_THROW_WITH(UserError, convert_rate_series("0 1\n0 2\n", "ms-kbps", "r"), "r:2: times must increase");
  // The bound on the trace's lines (10 million unless the caller sets fewer): 12 Mbit/s for a
  // second is 1000 opportunities.
  const std::string thousand = convert_rate_series("0 12000\n1000 0\n", "ms-kbps", "r", 1000);
  EXPECT_EQ(std::count(thousand.begin(), thousand.end(), '\n'), 1000);
  EXPECT_THROW_WITH(UserError, convert_rate_series("0 12000\n1000 0\n", "ms-kbps", "r", 999),
                    "r: the trace would hold more than 999 opportunities (lines)");
}

// "0 10000 / 1000 0" is 1 s at 10 Mbit/s, then 1 s of nothing: the trace lasts 2 s (its last
// time), with the 833 opportunities of 10 Mbit: the first moves to 2000 ms (the end of a period
// is the start of the next), 2 ms earlier in the repeating trace.
TEST(TraceConvert, silence_at_the_end_is_kept) {
  for (const auto& [text, format] : {std::pair<std::string, std::string>{"0 10000\n1000 0\n", "ms-kbps"},
                                     {"seconds,mbit/s\n0,10\n1,0\n", "csv"},
                                     {repeated("10000\n", 1000) + repeated("0\n", 1000), "kbps-per-ms"}}) {
    const Trace trace = converted(text, format);
    SCOPED_TRACE(format);
    ASSERT_EQ(trace.period(), 2000 * kNanosPerMs);
    ASSERT_EQ(trace.offsets().size(), 833u);  // 10 Mbit / 12000 bit, as without the silence
    ASSERT_NEAR(trace.mean_bits_per_second(), 5e6, 12000 / 2.0);
    ASSERT_EQ(trace.written_ms(0), 3u);  // the second of the rates' opportunities (2.4 ms)
    ASSERT_EQ(trace.written_ms(831), 1000u);
    ASSERT_EQ(trace_statistics(trace).longest_gap, 1000 * kNanosPerMs);
  }
}

// When the first opportunity is further from the start than the last from the end, the last
// one moves: "0 0 / 1000 10000 / 2000 0" is silence, 10 Mbit/s, silence.
TEST(TraceConvert, silence_on_both_sides_moves_the_nearer_opportunity) {
  const Trace trace = converted("0 0\n1000 10000\n2000 0\n", "ms-kbps");
  ASSERT_EQ(trace.period(), 3000 * kNanosPerMs);
  ASSERT_EQ(trace.offsets().size(), 833u);
  ASSERT_EQ(trace.written_ms(0), 1002u);
  ASSERT_EQ(trace.written_ms(831), 1999u);
  ASSERT_EQ(trace.written_ms(832), 3000u);
  // A single opportunity simply moves to the end.
  ASSERT_EQ(convert_rate_series("0 12\n1000 0\n", "ms-kbps", "r"), "2000\n");
}

// mm-trace split: one series of a path as the three shells' files, on one time line.
TEST(TraceConvert, split_makes_a_link_trace_a_delay_trace_and_a_loss_trace_of_one_period) {
  const SplitSeries s =
      split_time_series("seconds,mbps,delay_ms,loss\n10,12,20,0\n10.5,6,40,0.01\n11,24,10,0\n", "p.csv");
  const Trace link = Trace::parse(s.link_trace, "p.trace");
  EXPECT_EQ(link.period(), 1500 * kNanosPerMs);  // the last value lasts as long as the interval before it
  EXPECT_EQ(link.offsets().size(), 1750u);       // 12, 6 and 24 Mbit/s for 500 ms each
  const TimeSeries delay = parse_time_series(s.delay_trace, "p.delay", 0, delay_trace_kind());
  EXPECT_EQ(delay.period, 1500 * kNanosPerMs);
  EXPECT_EQ(delay.at(0), 20 * kNanosPerMs);  // times from the first line's
  EXPECT_EQ(delay.at(600 * kNanosPerMs), 40 * kNanosPerMs);
  EXPECT_EQ(delay.at(1400 * kNanosPerMs), 10 * kNanosPerMs);
  const TimeSeries loss = parse_time_series(s.loss_trace, "p.loss", 0, loss_trace_kind());
  EXPECT_EQ(loss.at(700 * kNanosPerMs), 10'000'000);  // 0.01 in parts per 10^9
  EXPECT_TRUE(split_time_series("0,12\n1,6\n", "r.csv").delay_trace.empty());
  EXPECT_THROW_WITH(UserError, split_time_series("0,12,5\n1,6\n", "p.csv"),
                    "p.csv:2: every line must have as many fields");
  EXPECT_THROW_WITH(UserError, split_time_series("0,12,5,2\n", "p.csv"), "p.csv:1: loss 2 is not a probability");
  EXPECT_THROW_WITH(UserError, split_time_series("1,12\n0,6\n", "p.csv"), "p.csv:2: times must increase");
}
