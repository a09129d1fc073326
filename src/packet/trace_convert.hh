// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-trace convert: a trace from a rate series. Opportunities fall on whole milliseconds, the
// fractions of an opportunity carrying over from one millisecond to the next.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "packet/trace.hh"

// Bounds on a rate series: its size and lines (the trace made from it has Trace's bounds).
inline constexpr uint64_t kMaxRateSeriesBytes = 128ULL << 20;
inline constexpr uint64_t kMaxRateSeriesLines = 10'000'000;

// The formats of a rate series:
//   kbps-per-ms  one number per line, the rate in kbit/s during each successive millisecond
//   ms-kbps      lines "MS KBIT/S": from time MS the rate is KBIT/S
//   csv          lines "SECONDS,MBIT/S" (a header line is skipped)
// In the last two each rate holds until the next line's time, the last for as long as the
// interval before it (1 s if it is the only line).
bool is_rate_series_format(std::string_view format);

// The trace (its text, one time per line) of the rate series `text`; `source` names it in
// messages ("rates.csv:3: ..."). A series that ends in silence (rates of 0) keeps it: a trace's
// period is its last time, so one opportunity is moved to the end of the silence, the first
// (a trace repeats: the end of a period is the start of the next) or the last, whichever moves
// less; the number of opportunities, and with it the mean rate, stays as the rates give it.
// Throws UserError naming the source and line, and for a trace of more than `max_opportunities`
// lines (at most Trace::kMaxOpportunities; the fuzz target sets fewer, to spend its time on
// the formats rather than on building 10 million lines); UsageError for an unknown format.
std::string convert_rate_series(std::string_view text, std::string_view format, const std::string& source,
                                uint64_t max_opportunities = Trace::kMaxOpportunities);

// mm-trace split: one time series of a path, "SECONDS,MBIT/S[,DELAY-MS[,LOSS]]" per line (a
// header line is skipped; times from the first line's, each value holding until the next line's
// time and the last as long as the interval before it), as the files of the three shells: the
// rate as an mm-link trace, the delay as an mm-delay --delay-trace and the loss probability as an
// mm-loss trace (empty where the series has no such column). The delay and loss traces' last
// line closes their period with the last value. Throws UserError naming the source and line.
struct SplitSeries {
  std::string link_trace, delay_trace, loss_trace;
};
SplitSeries split_time_series(std::string_view text, const std::string& source,
                              uint64_t max_opportunities = Trace::kMaxOpportunities);

// The trace of rates given as steps (start in ms from 0, bit/s), the last lasting until end_ms
// (mm-trace rattan). Throws UserError naming `source`.
std::string trace_of_rate_steps(const std::vector<std::pair<double, double>>& steps, double end_ms,
                                const std::string& source, uint64_t max_opportunities = Trace::kMaxOpportunities);
