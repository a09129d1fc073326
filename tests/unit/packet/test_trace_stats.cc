// SPDX-License-Identifier: GPL-3.0-or-later
// mm-trace info's figures, from the trace as written.
#include <cstdio>
#include <string>

#include "expect.hh"
#include "packet/trace.hh"
#include "packet/trace_stats.hh"

namespace {

// The bundled constant-1000Mbps, as mm-trace constant 1Gbit/s makes it: 250 opportunities in
// 3 ms, 84, 83 and 83 of them on the lines 1, 2 and 3.
std::string gigabit_trace() {
  std::string text;
  for (int k = 1; k <= 250; k++) text += std::to_string((k * 3 + 249) / 250) + "\n";
  return text;
}

}  // namespace

// The busiest millisecond counts the lines of one time, not the (spread) times the link uses.
TEST(TraceStatistics, busiest_millisecond_counts_a_lines_time) {
  const TraceStatistics gigabit = trace_statistics(Trace::parse(gigabit_trace(), "constant-1000Mbps"));
  ASSERT_EQ(gigabit.busiest_millisecond, 84u);
  ASSERT_EQ(gigabit.opportunities, 250u);
  ASSERT_EQ(gigabit.longest_gap, kNanosPerMs);
  // A cellular-like burst: 16 opportunities at 7 ms, among single ones.
  std::string bursty = "3\n5\n";
  for (int i = 0; i < 16; i++) bursty += "7\n";
  bursty += "9\n12\n";
  const TraceStatistics burst = trace_statistics(Trace::parse(bursty, "bursty"));
  ASSERT_EQ(burst.busiest_millisecond, 16u);
}

// Gaps between the lines' times, in whole milliseconds (the spreading of a millisecond's
// opportunities made "1 1 3" a 1.5 ms gap), and from the period's start to the first line.
TEST(TraceStatistics, longest_gap_is_in_whole_milliseconds) {
  ASSERT_EQ(trace_statistics(Trace::parse("1\n1\n3\n", "t")).longest_gap, 2 * kNanosPerMs);
  ASSERT_EQ(trace_statistics(Trace::parse("1\n1\n1\n1\n4\n", "t")).longest_gap, 3 * kNanosPerMs);
  ASSERT_EQ(trace_statistics(Trace::parse("40\n41\n42\n", "t")).longest_gap, 40 * kNanosPerMs);
  ASSERT_EQ(trace_statistics(Trace::parse("1\n1000\n2000\n", "t")).longest_gap, 1000 * kNanosPerMs);
}

// A line's time T is the millisecond (T - 1, T]: the two lines at 100 ms are in the first
// 100 ms window, though the link sends the second at 100.5 ms.
TEST(TraceStatistics, windows_hold_the_lines_of_their_times) {
  const TraceStatistics figures = trace_statistics(Trace::parse("100\n100\n200\n", "t"));
  ASSERT_DOUBLE_EQ(figures.window_max_bits_per_second, 2 * 12000 / 0.1);
  ASSERT_DOUBLE_EQ(figures.window_min_bits_per_second, 12000 / 0.1);
  ASSERT_NEAR(figures.window_variation, 1.0 / 3, 1e-9);
  // A short last window counts at its own length.
  const TraceStatistics short_last = trace_statistics(Trace::parse("50\n150\n", "t"));
  ASSERT_DOUBLE_EQ(short_last.window_max_bits_per_second, 12000 / 0.05);
  ASSERT_DOUBLE_EQ(short_last.window_min_bits_per_second, 12000 / 0.1);
}

// rate:RATE has one opportunity per period: its figures are the rate's.
TEST(TraceStatistics, a_rate_has_its_own_figures) {
  const TraceStatistics gigabit = trace_statistics(Trace::from_argument("rate:1Gbit/s"));
  ASSERT_EQ(gigabit.busiest_millisecond, 84u);  // one every 12 us: 83 or 84 in any millisecond
  ASSERT_EQ(gigabit.longest_gap, 12'000);
  ASSERT_DOUBLE_EQ(gigabit.window_min_bits_per_second, 1e9);
  ASSERT_DOUBLE_EQ(gigabit.window_max_bits_per_second, 1e9);
  const TraceStatistics slow = trace_statistics(Trace::from_argument("rate:500kbit/s"));
  ASSERT_EQ(slow.busiest_millisecond, 1u);
  ASSERT_EQ(slow.longest_gap, 24 * kNanosPerMs);
  ASSERT_EQ(trace_statistics(Trace::from_argument("rate:12Mbit/s")).busiest_millisecond, 1u);
}

// mm-trace check's summary of a good trace: its count in agreement with its noun.
TEST(TraceStatistics, check_summary_counts_opportunities_in_agreement) {
  EXPECT_EQ(trace_check_summary(Trace::parse("1\n", "constant-12Mbps")),
            "1 opportunity, period 1.000 ms, 12.000 Mbit/s");
  EXPECT_EQ(trace_check_summary(Trace::parse(gigabit_trace(), "constant-1000Mbps")),
            "250 opportunities, period 3.000 ms, 1000.000 Mbit/s");
}
