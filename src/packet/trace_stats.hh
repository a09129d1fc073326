// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What mm-trace info and check print about a trace, computed from the trace as written: a file's
// whole milliseconds (not the times the link spreads a millisecond's opportunities to), or a
// rate's exact period.
#include <cstdint>
#include <string>

#include "packet/trace.hh"

struct TraceStatistics {
  Nanos period = 0;
  uint64_t opportunities = 0;  // per period
  double mean_bits_per_second = 0;
  // Over the 100 ms windows of a period (the last may be shorter): the lowest and highest rate,
  // and the coefficient of variation (standard deviation / mean) of the windows' rates.
  double window_min_bits_per_second = 0, window_max_bits_per_second = 0, window_variation = 0;
  // The most opportunities in one millisecond: on one line's time in a file; in any 1 ms for a
  // rate (84 for rate:1Gbit/s, one every 12 us).
  uint64_t busiest_millisecond = 0;
  // The longest time without an opportunity, the wrap from one period to the next included.
  Nanos longest_gap = 0;
};

TraceStatistics trace_statistics(const Trace& trace);

// What mm-trace check says of a valid trace: "1 opportunity, period 1.000 ms, 12.000 Mbit/s".
std::string trace_check_summary(const Trace& trace);
