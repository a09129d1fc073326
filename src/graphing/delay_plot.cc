// SPDX-License-Identifier: GPL-3.0-or-later
// mm-delay-graph's rows, chart, CSV and summary (see delay_plot.hh).
#include "graphing/delay_plot.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "util/csv.hh"
#include "util/text.hh"

namespace {
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// "Signal delay (95th percentile 42 ms)", "up.log: signal delay (no packets delivered)".
std::string series_label(const DelaySource& source, bool name_logs, const std::string& what, double p95) {
  const std::string label = name_logs ? source.label + ": " + ascii_lowercase(what) : what;
  if (source.no_events) return label + " (no events)";
  if (source.no_departures) return label + " (no packets delivered)";
  if (std::isnan(p95)) return label + " (none sent within the log delivered)";
  char text[64];
  std::snprintf(text, sizeof text, " (95th percentile %.0f ms)", p95);
  return label + text;
}

// A paler version of a colour, for dots under a line of the same colour.
Color paler(Color c) { return {0.45 * c.r + 0.55, 0.45 * c.g + 0.55, 0.45 * c.b + 0.55}; }
}  // namespace

DelayRows delay_rows(const LinkLog& log) {
  DelayRows rows;
  const std::vector<double> signal = signal_delays(log);  // one per ms
  rows.first_ms = std::floor(log.first);
  rows.span_ms = signal.size();
  rows.group_ms = (signal.size() + kMaxDelayRows - 1) / kMaxDelayRows;
  const size_t count = (signal.size() + rows.group_ms - 1) / rows.group_ms;
  rows.signal_delay_ms.assign(count, kNan);
  rows.packets.assign(count, 0);
  rows.mean_delay_ms.assign(count, 0);
  rows.max_delay_ms.assign(count, kNan);
  for (size_t i = 0; i < signal.size(); i++) {
    double& highest = rows.signal_delay_ms[i / rows.group_ms];
    if (std::isnan(highest) || signal[i] > highest) highest = signal[i];
  }
  for (const auto& d : log.departures) {
    const double ms = std::clamp(std::floor(d.time) - rows.first_ms, 0.0, static_cast<double>(signal.size() - 1));
    const size_t row = static_cast<size_t>(ms) / rows.group_ms;
    rows.packets[row] += 1;
    rows.mean_delay_ms[row] += d.delay;  // a sum until divided below
    if (std::isnan(rows.max_delay_ms[row]) || d.delay > rows.max_delay_ms[row]) rows.max_delay_ms[row] = d.delay;
  }
  for (size_t row = 0; row < count; row++) {
    rows.mean_delay_ms[row] = rows.packets[row] > 0 ? rows.mean_delay_ms[row] / rows.packets[row] : kNan;
  }
  return rows;
}

Chart delay_chart(const std::vector<DelaySource>& sources, const std::string& title, bool name_logs) {
  Chart chart;
  chart.title = title.empty() ? "Delay" : title;
  chart.x_label = "time (s)";
  chart.y_label = "delay (ms)";
  chart.log_y = true;
  const bool several = sources.size() > 1;
  for (size_t i = 0; i < sources.size(); i++) {
    const DelaySource& source = sources[i];
    const Color own = palette_color(i);
    Series signal{series_label(source, name_logs, "Signal delay", source.signal_delay_p95_ms),
                  several ? Series::Style::Line : Series::Style::Area, several ? own : Color{0.95, 0.55, 0.1},
                  source.signal};
    Series packets{series_label(source, name_logs, "Per-packet delay", source.queueing_delay_p95_ms),
                   Series::Style::Dots, several ? paler(own) : Color{0.15, 0.35, 0.85}, source.packets};
    chart.series.push_back(std::move(signal));
    chart.series.push_back(std::move(packets));
    if (!source.marks.empty()) {
      chart.series.push_back(Series{name_logs ? source.label + ": ECN CE marks" : "ECN CE marks", Series::Style::Dots,
                                    several ? own : Color{0.1, 0.6, 0.2}, source.marks});
    }
  }
  return chart;
}

std::vector<std::pair<double, double>> mark_points(const LinkLog& log) {
  // Both lists are in time order, as the log is written: one pass.
  std::vector<std::pair<double, double>> points;
  size_t d = 0;
  for (const auto& m : log.marks) {
    while (d < log.departures.size() && log.departures[d].time < m.time) d++;
    if (d == log.departures.size()) break;
    points.emplace_back(m.time / 1000, log.departures[d].delay);
  }
  return points;
}

Chart delay_chart(const std::vector<LabeledLog>& logs, const std::vector<DelayRows>& rows, const std::string& title,
                  bool name_logs) {
  std::vector<DelaySource> sources;
  for (size_t i = 0; i < logs.size(); i++) {
    const LinkLog& log = logs[i].log;
    const LinkSummary s = summarize(log);
    DelaySource source{
        logs[i].label, log.empty(), log.departures.empty(), s.queueing_delay_p95_ms, s.signal_delay_p95_ms, {}, {}};
    for (size_t r = 0; r < rows[i].size(); r++)
      source.signal.emplace_back(rows[i].start_s(r), rows[i].signal_delay_ms[r]);
    for (const auto& d : log.departures) source.packets.emplace_back(d.time / 1000, d.delay);
    source.marks = mark_points(log);
    sources.push_back(std::move(source));
  }
  Chart chart = delay_chart(sources, title, name_logs);
  chart.note = empty_logs_note(logs);
  return chart;
}

std::string delay_csv(const std::vector<LabeledLog>& logs, const std::vector<DelayRows>& rows) {
  std::string csv = "log,start_s,end_s,signal_delay_ms,packets,mean_delay_ms,max_delay_ms\n";
  for (size_t i = 0; i < logs.size(); i++) {
    const DelayRows& r = rows[i];
    const std::string label = csv_field(logs[i].label);
    for (size_t k = 0; k < r.size(); k++) {
      csv += label + "," + csv_number(r.start_s(k), 3) + "," + csv_number(r.end_s(k), 3) + "," +
             csv_number(r.signal_delay_ms[k], 3) + "," + csv_number(r.packets[k], 0) + "," +
             csv_number(r.mean_delay_ms[k], 3) + "," + csv_number(r.max_delay_ms[k], 3) + "\n";
    }
  }
  return csv;
}

std::string delay_summary(const LinkLog& log) {
  const LinkSummary s = summarize(log);
  return "95th percentile per-packet queueing delay: " + delay_text(s.queueing_delay_p95_ms, log) +
         "\n95th percentile signal delay: " + delay_text(s.signal_delay_p95_ms, log) + "\n" +
         (s.marked_packets ? "Marked packets (ECN CE): " + std::to_string(s.marked_packets) + "\n" : "");
}
