// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What mm-delay-graph computes from its logs: the signal delay and the packets' delays per
// millisecond, the chart, the CSV file (--csv) and the summary it prints.
#include <string>
#include <utility>
#include <vector>

#include "graphing/chart.hh"
#include "graphing/link_log_reader.hh"

// One log's rows: one per millisecond of its span, or, for a log over kMaxDelayRows ms, one per
// group of group_ms milliseconds (so that a chart holds at most kMaxDelayRows points).
struct DelayRows {
  double first_ms = 0;  // the millisecond of the log's first event
  size_t span_ms = 0;   // milliseconds covered: the first event's to the last event's, both included
  size_t group_ms = 1;
  std::vector<double> signal_delay_ms;              // the highest in the row's milliseconds; NaN: none
  std::vector<double> packets;                      // departures in the row's milliseconds
  std::vector<double> mean_delay_ms, max_delay_ms;  // theirs; NaN when there is none

  size_t size() const { return signal_delay_ms.size(); }
  double start_s(size_t row) const { return (first_ms + static_cast<double>(row * group_ms)) / 1000; }
  double end_s(size_t row) const {
    return (first_ms + static_cast<double>(std::min(span_ms, (row + 1) * group_ms))) / 1000;
  }
};

inline constexpr size_t kMaxDelayRows = 1'000'000;

DelayRows delay_rows(const LinkLog& log);

// The points of DelaySource::marks for a log.
std::vector<std::pair<double, double>> mark_points(const LinkLog& log);

// What one log, or one direction of a live meter, brings to a delay chart.
struct DelaySource {
  std::string label;  // its name in the legend, with name_logs
  bool no_events = false, no_departures = false;
  double queueing_delay_p95_ms, signal_delay_p95_ms;       // NaN: none
  std::vector<std::pair<double, double>> signal, packets;  // (s, ms): the signal delay; each packet's at its departure
  // (s, ms): each CE mark (ECN) at its time, at the delay of the first packet to leave then or
  // after: the queueing delay at which the queue marked (the marked packet's own for codel and
  // fq_codel, which mark the packet leaving; for pie, which marks on arrival, the queue's then).
  std::vector<std::pair<double, double>> marks = {};
};

// The chart of delay_chart below, from its sources (the live meters' and the logs' one).
Chart delay_chart(const std::vector<DelaySource>& sources, const std::string& title, bool name_logs);

// One chart of every log, on a logarithmic scale: each packet's delay as a dot at its
// departure, the signal delay (filled for one log, a line in the log's colour for several), and
// the CE marks (DelaySource::marks) where the log has any.
// Legend entries start with the log's label when name_logs is set.
Chart delay_chart(const std::vector<LabeledLog>& logs, const std::vector<DelayRows>& rows, const std::string& title,
                  bool name_logs);

// The CSV of the rows: the header line
//   log,start_s,end_s,signal_delay_ms,packets,mean_delay_ms,max_delay_ms
// then a row per millisecond (or group) of each log, in order; empty fields where no value.
std::string delay_csv(const std::vector<LabeledLog>& logs, const std::vector<DelayRows>& rows);

// The lines printed to standard error: the 95th percentile per-packet queueing delay and
// signal delay, "-" with the reason where there is no value.
std::string delay_summary(const LinkLog& log);
