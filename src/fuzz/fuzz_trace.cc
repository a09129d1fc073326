// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: trace files as the ferry and mm-trace read them (packet/trace.hh), the
// statistics mm-trace info prints (packet/trace_stats.hh), and the rate words of rate:RATE
// arguments and their suggestions.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "packet/trace.hh"
#include "packet/trace_stats.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const Trace trace = Trace::parse(text, "fuzz.trace");
    FUZZ_CHECK(!trace.offsets().empty() && trace.period() > 0);
    const TraceStatistics statistics = trace_statistics(trace);
    (void)statistics;
    // The opportunities repeat with the period, in order, and the meter's count agrees.
    OpportunityCursor cursor(trace, 0, false);
    Nanos previous = 0;
    for (int i = 0; i < 64; i++) {
      const Nanos next = cursor.next();
      FUZZ_CHECK(next >= previous);
      FUZZ_CHECK(trace.opportunities_until(next, false) >= static_cast<uint64_t>(i) + 1);
      previous = next;
      cursor.advance();
    }
  } catch (const UserError&) {
  }
  // The same bytes as a rate word (bounded as a command-line word is).
  const std::string_view word = text.substr(0, 64);
  try {
    const double rate = Trace::parse_rate(word);
    FUZZ_CHECK(rate > 0);
    FUZZ_CHECK(Trace::parse_rate(Trace::format_rate(rate)) > 0);
  } catch (const UsageError&) {
  }
  (void)Trace::guess_rate(word);
  (void)Trace::label(word);
  return 0;
}
