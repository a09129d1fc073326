#pragma once
// Reads an mm-link log (ours or the original's): header lines "# ...", then "T # BYTES",
// "T + SIZE", "T - SIZE DELAY" and "T d COUNT BYTES" lines. Times are ms (fractions accepted);
// they are made relative to the "# base timestamp" when there is one.
#include <string>
#include <vector>

struct LinkLog {
  struct Opportunity { double time; double bytes; };
  struct Arrival { double time; double bytes; };
  struct Departure { double time; double bytes; double delay; };
  struct Drop { double time; double packets; double bytes; };
  std::vector<Opportunity> opportunities;
  std::vector<Arrival> arrivals;
  std::vector<Departure> departures;
  std::vector<Drop> drops;
  double first = 0, last = 0;  // time span of all events (ms)

  // Throws UserError naming the file and line of anything it cannot read.
  static LinkLog read(const std::string& path);
};

// Summary figures, as the original's mm-throughput-graph prints them.
struct LinkSummary {
  double duration_s;
  double capacity_mbps;
  double throughput_mbps;
  double utilization_percent;
  double queueing_delay_p95_ms;  // per packet
  double signal_delay_p95_ms;    // per millisecond: how long until something sent then arrives
  uint64_t dropped_packets;
};
LinkSummary summarize(const LinkLog& log);

// Signal delay for every ms from log.first to log.last (NaN before the first delivery).
std::vector<double> signal_delays(const LinkLog& log);
double percentile(std::vector<double> values, double p);
