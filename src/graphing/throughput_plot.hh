// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What mm-throughput-graph computes from its logs: the traffic in bins, the chart, the CSV
// file (--csv) and the summary it prints.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "graphing/chart.hh"
#include "graphing/link_log_reader.hh"

// One log's bytes per bin of bin_ms milliseconds, the first bin starting at its first event:
// offered by the link (capacity), arriving at the queue (ingress), leaving the link (egress);
// and the packets dropped. The last bin ends with the log's last millisecond (an event at T
// stands for the millisecond from T to T + 1), so that a bin the log only partly covers
// shows the rate of that part, not a drop.
struct ThroughputBins {
  double first_ms = 0, end_ms = 0;  // end_ms: the last event's time + 1
  double bin_ms = 0;
  std::vector<double> capacity_bytes, ingress_bytes, egress_bytes, dropped_packets;
  std::vector<double> marked_bytes, marked_packets;  // CE marks (ECN)

  size_t size() const { return capacity_bytes.size(); }
  double start_s(size_t bin) const { return (first_ms + static_cast<double>(bin) * bin_ms) / 1000; }
  double end_s(size_t bin) const { return std::min(start_s(bin) + bin_ms / 1000, end_ms / 1000); }
  double mbps(size_t bin, double bytes) const { return bytes * 8 / (end_s(bin) - start_s(bin)) / 1e6; }
};

inline constexpr double kMaxThroughputBins = 1e6;  // a point each in the chart

// Throws UsageError (naming `bin_text`, the MS-PER-BIN typed, and the least that would do) when
// the log would need more than kMaxThroughputBins bins.
ThroughputBins bin_throughput(const LinkLog& log, double bin_ms, std::string_view bin_text);

// What one log, or one direction of a live meter, brings to a throughput chart.
struct ThroughputSource {
  std::string label;  // its name in the legend, with name_logs
  bool no_events = false;
  bool has_capacity = true;   // false for a shell without a link (mm-delay, mm-loss, mm-meter)
  bool pass_through = false;  // mm-meter: what arrives leaves at once, so one line, "Traffic"
  double capacity_mbps = 0, ingress_mbps = 0, egress_mbps = 0;  // the means the legend gives
  double marked_mbps = 0;  // of the packets marked CE; 0 (and no series) when none was
  ThroughputBins bins;
};

// The chart of throughput_chart below, from its sources (the live meters' and the logs' one).
Chart throughput_chart(const std::vector<ThroughputSource>& sources, const std::string& title, bool name_logs);

// One chart of every log: capacity as a filled area, ingress and egress as lines, each plotted
// at the middle of its bin. With one log the original's colours; with several, one colour per
// log (ingress dashed). Legend entries start with the log's label when name_logs is set.
Chart throughput_chart(const std::vector<LabeledLog>& logs, const std::vector<ThroughputBins>& bins,
                       const std::string& title, bool name_logs);

// The CSV of what the chart plots: the header line
//   log,start_s,end_s,capacity_mbps,ingress_mbps,egress_mbps,dropped_packets
// then a row per bin of each log, in order.
std::string throughput_csv(const std::vector<LabeledLog>& logs, const std::vector<ThroughputBins>& bins);

// The lines printed to standard error, as the original's: average capacity, average throughput
// and utilisation, 95th percentile per-packet queueing delay and signal delay, drops; "-" with
// the reason where there is no value (no packets delivered, no events).
std::string throughput_summary(const LinkLog& log);
