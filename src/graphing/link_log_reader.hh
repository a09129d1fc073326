// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reads an mm-link log (ours or the original's): header lines "# ...", then "T # BYTES",
// "T + SIZE", "T - SIZE DELAY", "T d COUNT BYTES" and (ours, ECN) "T m COUNT BYTES" lines. Times are ms (fractions
// accepted); they are made relative to the "# base timestamp" when there is one.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct LinkLog {
  struct Opportunity {
    double time;
    double bytes;
  };
  struct Arrival {
    double time;
    double bytes;
  };
  struct Departure {
    double time;
    double bytes;
    double delay;
  };
  struct Drop {
    double time;
    double packets;
    double bytes;
  };
  std::vector<Opportunity> opportunities;
  std::vector<Arrival> arrivals;
  std::vector<Departure> departures;
  std::vector<Drop> drops;
  std::vector<Drop> marks;     // packets marked CE instead of dropped (ECN)
  double first = 0, last = 0;  // time span of all events (ms); 0 and 0 for a log without events

  // True for a log with header lines only (a link that neither offered nor carried anything).
  bool empty() const {
    return opportunities.empty() && arrivals.empty() && departures.empty() && drops.empty() && marks.empty();
  }

  // Bounds, so that reading a log and what is computed from it (a value per ms of its span for
  // the signal delay) stay within memory: a file of at most kMaxFileBytes, event lines of at
  // most kMaxLineLength bytes, numbers of magnitude at most kMaxValue, and events spanning at
  // most kMaxSpanMs (24 hours).
  static constexpr uint64_t kMaxFileBytes = 1ULL << 30;
  static constexpr size_t kMaxLineLength = 256;
  static constexpr double kMaxValue = 1e15;
  static constexpr double kMaxSpanMs = 24.0 * 3600 * 1000;

  // Throws UserError naming the file and line of anything it cannot read ("-": standard input),
  // and for a file with neither header lines nor events.
  static LinkLog read(const std::string& path);
  static LinkLog parse(std::string_view text, const std::string& name);
};

// A log and the name the graphs give it (its file name or the user's --label).
struct LabeledLog {
  std::string label;
  LinkLog log;
};

// What a chart of these logs says across its plot when there is nothing to draw: "no events in
// this log" (or "these logs"), "no packets delivered"; empty when some log delivered packets.
std::string empty_logs_note(const std::vector<LabeledLog>& logs);

// Summary figures, as the original's mm-throughput-graph prints them; the percentiles are NaN
// when no packet was delivered.
struct LinkSummary {
  double duration_s;
  double capacity_mbps;
  double throughput_mbps;
  double utilization_percent;
  double queueing_delay_p95_ms;  // per packet
  double signal_delay_p95_ms;    // per millisecond: how long until something sent then arrives
  uint64_t dropped_packets;
  uint64_t marked_packets;  // CE marks (ECN)
};
LinkSummary summarize(const LinkLog& log);

// Signal delay for every ms from log.first to log.last (NaN before the first delivery).
std::vector<double> signal_delays(const LinkLog& log);

// A summary's delay for people: "12 ms", or "- (no packets delivered)" for NaN, the reason
// being that the log has no departures or that none of its departures was sent within it.
std::string delay_text(double ms, const LinkLog& log);
