// SPDX-License-Identifier: GPL-3.0-or-later
// mm-trace info's figures (see trace_stats.hh).
#include "packet/trace_stats.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/text.hh"

namespace {

constexpr uint64_t kWindowMs = 100;

// Rates of the 100 ms windows of a file's trace, walking its sorted times (up to
// Trace::kMaxMs / 100, 21 million windows: no per-window array). The line of time T belongs to
// the millisecond that ends at T, (T - 1, T]; a time 0 to the first.
void add_window_figures(const Trace& trace, TraceStatistics& figures) {
  const uint64_t period_ms = static_cast<uint64_t>(trace.period() / kNanosPerMs);
  const uint64_t windows = (period_ms + kWindowMs - 1) / kWindowMs;
  auto window_of = [&](uint64_t ms) { return std::min((std::max<uint64_t>(ms, 1) - 1) / kWindowMs, windows - 1); };
  const size_t lines = trace.offsets().size();
  double low = 1e300, high = 0, sum = 0, sum_of_squares = 0;
  size_t next = 0;
  for (uint64_t w = 0; w < windows; w++) {
    uint64_t count = 0;
    while (next < lines && window_of(trace.written_ms(next)) == w) {
      count++;
      next++;
    }
    const uint64_t span_ms = std::min(kWindowMs, period_ms - w * kWindowMs);
    const double rate =
        static_cast<double>(count) * Trace::kOpportunityBytes * 8 / (static_cast<double>(span_ms) / 1e3);
    low = std::min(low, rate);
    high = std::max(high, rate);
    sum += rate;
    sum_of_squares += rate * rate;
  }
  const double mean = sum / static_cast<double>(windows);
  const double deviation = std::sqrt(std::max(0.0, sum_of_squares / static_cast<double>(windows) - mean * mean));
  figures.window_min_bits_per_second = low;
  figures.window_max_bits_per_second = high;
  figures.window_variation = mean > 0 ? deviation / mean : 0;
}

// Runs of equal times and the gaps between successive times, as the file has them.
void add_millisecond_figures(const Trace& trace, TraceStatistics& figures) {
  const size_t lines = trace.offsets().size();
  uint64_t busiest = 0, run = 0;
  uint64_t longest_gap_ms = trace.written_ms(0);  // from one period's end (its start) to the first line
  for (size_t i = 0; i < lines; i++) {
    const uint64_t ms = trace.written_ms(i);
    const uint64_t previous = i > 0 ? trace.written_ms(i - 1) : ms;
    run = (i > 0 && ms == previous) ? run + 1 : 1;
    busiest = std::max(busiest, run);
    longest_gap_ms = std::max(longest_gap_ms, ms - previous);
  }
  figures.busiest_millisecond = busiest;
  figures.longest_gap = static_cast<Nanos>(longest_gap_ms) * kNanosPerMs;
}

}  // namespace

TraceStatistics trace_statistics(const Trace& trace) {
  TraceStatistics figures;
  figures.period = trace.period();
  figures.opportunities = trace.offsets().size();
  figures.mean_bits_per_second = trace.mean_bits_per_second();
  if (trace.whole_milliseconds()) {
    add_window_figures(trace, figures);
    add_millisecond_figures(trace, figures);
    return figures;
  }
  // A constant rate (rate:RATE): opportunities evenly spaced by the period, every window alike.
  figures.window_min_bits_per_second = figures.window_max_bits_per_second = figures.mean_bits_per_second;
  figures.window_variation = 0;
  figures.busiest_millisecond =
      static_cast<uint64_t>((kNanosPerMs + trace.period() - 1) / trace.period());  // in any [t, t + 1 ms)
  figures.longest_gap = trace.period();
  return figures;
}

std::string trace_check_summary(const Trace& trace) {
  char figures[96];
  std::snprintf(figures, sizeof figures, ", period %.3f ms, %.3f Mbit/s", nanos_to_ms(trace.period()),
                trace.mean_bits_per_second() / 1e6);
  return count_of(trace.offsets().size(), "opportunity", "opportunities") + figures;
}
