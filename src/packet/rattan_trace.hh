// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-trace rattan: Rattan's trace files (configurations of the netem-trace crate, in JSON or
// TOML) of a delay, a loss or a bandwidth that changes over time, as the file of the shell that
// plays it: an mm-delay --delay-trace, an mm-loss trace or an mm-link trace.
//
// Read: StaticDelayConfig {delay, duration}, StaticLossConfig {loss: [p0, ...], duration},
// StaticBwConfig {bw, duration}, TraceBwConfig {pattern: [[duration, [bw, ...]], ...]} and the
// Repeated*PatternConfig {pattern: [...], count} around them (count 0: forever), nested as
// deep as Rattan allows. Durations and delays are humantime strings ("1s", "10ms", "1h 30m")
// or {secs, nanos}; bandwidths "12Mbps" or {gbps, bps}. Refused, with the reason: the random
// and per-packet models (Normalized*, Sawtooth*, *PerPacket*: their values are drawn by
// Rattan as it runs), and a loss pattern that depends on the losses before it ([p0, p1, ...],
// whose one case with a shell of its own, [p0, p1], is named: mm-loss gemodel p0 1-p1).
#include <cstdint>
#include <string>
#include <string_view>

#include "packet/trace.hh"

// Bounds: the file, and the steps a configuration expands to (counts multiply).
inline constexpr uint64_t kMaxRattanFileBytes = 64ULL << 20;
inline constexpr uint64_t kMaxRattanSteps = 10'000'000;

struct RattanTrace {
  enum class Kind { kDelay, kLoss, kBandwidth };
  Kind kind = Kind::kDelay;
  std::string text;      // the shell's file
  bool repeats = false;  // the configuration repeats forever (the shells' default); else it ends
  double period_ms = 0;  // one pass
  uint64_t steps = 0;    // values in one pass
};

// Converts a configuration's text; `toml` reads it as TOML (Rattan picks by the file's
// extension), else as JSON. `source` names it in messages. Throws UserError naming the source
// and what is wrong (for TOML and JSON syntax, the line). The fuzz target lowers the bounds on
// steps and opportunities, to spend its time on the formats.
RattanTrace convert_rattan_trace(std::string_view text, bool toml, const std::string& source,
                                 uint64_t max_opportunities = Trace::kMaxOpportunities,
                                 uint64_t max_steps = kMaxRattanSteps);
