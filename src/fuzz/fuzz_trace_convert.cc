// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: mm-trace convert's rate series (packet/trace_convert.hh) in its three
// formats. Whatever it accepts must come out as a trace the trace reader accepts, with no more
// lines than the series allows.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "packet/delay_trace.hh"
#include "packet/trace.hh"
#include "packet/trace_convert.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 4 == 3) {  // mm-trace split: its three files, each accepted by its reader
    const std::string_view series(reinterpret_cast<const char*>(data + 1), size - 1);
    SplitSeries split;
    try {
      split = split_time_series(series.substr(0, 4096), "fuzz.csv", 20'000);
    } catch (const UserError&) {
      return 0;
    }
    try {
      (void)Trace::parse(split.link_trace, "split.trace");
      if (!split.delay_trace.empty()) (void)parse_time_series(split.delay_trace, "split.delay", 0, delay_trace_kind());
      if (!split.loss_trace.empty()) (void)parse_time_series(split.loss_trace, "split.loss", 0, loss_trace_kind());
    } catch (const UserError& e) {
      std::fprintf(stderr, "split made a file its reader refuses: %s\n", e.what());
      FUZZ_CHECK(false);
    }
    return 0;
  }
  static const char* const kFormats[] = {"kbps-per-ms", "ms-kbps", "csv"};
  const char* format = kFormats[data[0] % 3];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string trace_text;
  try {
    // 20,000 lines, not 10 million: the bound is checked the same way, and an input asking for
    // hours of a fast link costs milliseconds instead of a second.
    trace_text = convert_rate_series(text, format, "fuzz.series", 20'000);
  } catch (const UserError&) {
    return 0;
  }
  try {
    (void)Trace::parse(trace_text, "converted");
  } catch (const UserError& e) {
    std::fprintf(stderr, "convert made a trace the reader refuses: %s\n", e.what());
    FUZZ_CHECK(false);
  }
  return 0;
}
