// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the delay and loss traces of mm-delay --delay-trace and mm-loss's trace FILE
// (packet/delay_trace.hh's time series), timestamped or one value per line, and their values
// over time: every value lies between the trace's smallest and largest (steps and linear), and
// with --once the last holds after the end.
#include <algorithm>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "packet/delay_trace.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const TimeSeriesKind& kind = data[0] & 1 ? loss_trace_kind() : delay_trace_kind();
  const double interval_ms = data[0] & 2 ? 0.5 + data[1] : 0;  // one value per line, or timestamped
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  TimeSeries series;
  try {
    series = parse_time_series(text, "fuzz.trace", interval_ms, kind);
  } catch (const UserError&) {
    return 0;
  }
  FUZZ_CHECK(!series.points.empty() && series.period > 0);
  FUZZ_CHECK(series.points.front().time == 0);
  int64_t low = series.points.front().value, high = low;
  for (size_t i = 0; i < series.points.size(); i++) {
    low = std::min(low, series.points[i].value);
    high = std::max(high, series.points[i].value);
    FUZZ_CHECK(series.points[i].value >= 0 && static_cast<double>(series.points[i].value) <= kind.max * kind.scale + 1);
    if (i) FUZZ_CHECK(series.points[i].time > series.points[i - 1].time);
  }
  for (bool linear : {false, true}) {
    for (bool once : {false, true}) {
      series.linear = linear;
      series.once = once;
      for (Nanos t :
           {Nanos{-1}, Nanos{0}, series.period / 3, series.period - 1, series.period, 5 * series.period + 7}) {
        const int64_t v = series.at(t);
        FUZZ_CHECK(v >= low && v <= high);
      }
      if (once) FUZZ_CHECK(series.at(series.period * 2 + 1) == series.points.back().value);
    }
  }
  return 0;
}
