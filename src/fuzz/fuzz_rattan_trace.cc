// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: mm-trace rattan (packet/rattan_trace.hh), Rattan's netem-trace
// configurations in JSON (first byte even) or TOML (odd). Whatever it accepts must come out as
// a file the shell it names reads: an mm-delay delay trace, an mm-loss loss trace or an mm-link
// trace.
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "packet/delay_trace.hh"
#include "packet/rattan_trace.hh"
#include "packet/trace.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool toml = data[0] % 2 == 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), std::min<size_t>(size - 1, 8192));
  RattanTrace trace;
  try {
    trace = convert_rattan_trace(text, toml, toml ? "fuzz.toml" : "fuzz.json", 20'000, 20'000);
  } catch (const UserError&) {
    return 0;
  }
  FUZZ_CHECK(trace.steps > 0 && trace.steps <= 20'000);
  try {
    switch (trace.kind) {
      case RattanTrace::Kind::kDelay:
        (void)parse_time_series(trace.text, "rattan.delay", 0, delay_trace_kind());
        break;
      case RattanTrace::Kind::kLoss:
        (void)parse_time_series(trace.text, "rattan.loss", 0, loss_trace_kind());
        break;
      case RattanTrace::Kind::kBandwidth:
        FUZZ_CHECK(Trace::parse(trace.text, "rattan.trace").offsets().size() <= 20'000);
        break;
    }
  } catch (const UserError& e) {
    std::fprintf(stderr, "mm-trace rattan made a file its shell refuses: %s\n", e.what());
    FUZZ_CHECK(false);
  }
  return 0;
}
