// SPDX-License-Identifier: GPL-3.0-or-later
// mm-throughput-graph's bins, chart, CSV and summary (see throughput_plot.hh).
#include "graphing/throughput_plot.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/csv.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
std::string mbps_text(double mbps) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f Mbit/s", mbps);
  return text;
}

double mean_mbps(const LinkLog& log, double bytes) {
  const double span_ms = std::max(log.last - log.first, 1.0);  // as summarize() counts
  return bytes * 8 / (span_ms / 1000) / 1e6;
}

// "Capacity (mean 12.00 Mbit/s)", or "up.log: capacity (...)" when the log is named.
std::string series_label(const ThroughputSource& source, bool name_logs, const std::string& what, double mbps) {
  const std::string label = name_logs ? source.label + ": " + ascii_lowercase(what) : what;
  return label + (source.no_events ? " (no events)" : " (mean " + mbps_text(mbps) + ")");
}

double total_bytes(const std::vector<double>& bins) {
  double sum = 0;
  for (double b : bins) sum += b;
  return sum;
}
}  // namespace

ThroughputBins bin_throughput(const LinkLog& log, double bin_ms, std::string_view bin_text) {
  const double span = log.last - log.first;
  const double bin_count = std::floor(span / bin_ms) + 1;
  if (bin_count > kMaxThroughputBins) {
    char least[64];
    std::snprintf(least, sizeof least, "%g", std::ceil(span / (kMaxThroughputBins - 1)));
    throw UsageError("MS-PER-BIN " + std::string(bin_text) + " makes more than 1000000 bins of this log's " +
                     std::to_string(static_cast<uint64_t>(span)) + " ms; use " + least + " or more");
  }
  ThroughputBins bins;
  bins.first_ms = log.first;
  bins.end_ms = std::max(log.last + 1, log.first + std::min(bin_ms, 1.0));
  bins.bin_ms = bin_ms;
  const size_t count = static_cast<size_t>(bin_count);
  for (auto* v : {&bins.capacity_bytes, &bins.ingress_bytes, &bins.egress_bytes, &bins.dropped_packets,
                  &bins.marked_bytes, &bins.marked_packets})
    v->assign(count, 0);
  auto bin_of = [&](double t) { return std::min(count - 1, static_cast<size_t>((t - log.first) / bin_ms)); };
  for (const auto& o : log.opportunities) bins.capacity_bytes[bin_of(o.time)] += o.bytes;
  for (const auto& a : log.arrivals) bins.ingress_bytes[bin_of(a.time)] += a.bytes;
  for (const auto& d : log.departures) bins.egress_bytes[bin_of(d.time)] += d.bytes;
  for (const auto& d : log.drops) bins.dropped_packets[bin_of(d.time)] += d.packets;
  for (const auto& m : log.marks) {
    bins.marked_packets[bin_of(m.time)] += m.packets;
    bins.marked_bytes[bin_of(m.time)] += m.bytes;
  }
  return bins;
}

Chart throughput_chart(const std::vector<ThroughputSource>& sources, const std::string& title, bool name_logs) {
  Chart chart;
  chart.title = title.empty() ? "Throughput" : title;
  chart.x_label = "time (s)";
  chart.y_label = "throughput (Mbit/s)";
  const bool several = sources.size() > 1;
  for (size_t i = 0; i < sources.size(); i++) {
    const ThroughputSource& source = sources[i];
    const ThroughputBins& b = source.bins;
    const Color own = palette_color(i);
    Series capacity{series_label(source, name_logs, "Capacity", source.capacity_mbps),
                    Series::Style::Area,
                    several ? own : Color{0.85, 0.15, 0.15},
                    {}};
    Series ingress{series_label(source, name_logs, "Traffic ingress", source.ingress_mbps),
                   several ? Series::Style::DashedLine : Series::Style::Line,
                   several ? own : Color{0.15, 0.35, 0.85},
                   {}};
    Series egress{series_label(source, name_logs, "Traffic egress", source.egress_mbps),
                  Series::Style::Line,
                  several ? own : Color{0.8, 0.1, 0.1},
                  {}};
    // The traffic the queue marked CE instead of dropping (ECN), where it marked any.
    Series marked{series_label(source, name_logs, "Marked CE", source.marked_mbps),
                  Series::Style::DottedLine,
                  several ? own : Color{0.1, 0.6, 0.2},
                  {}};
    for (size_t k = 0; k < b.size(); k++) {
      // A last bin the log covers for less than half its width is left out of the chart (the
      // CSV keeps it, with its end): over so short a time one packet more or less swings its
      // rate by tens of percent, which would read as a burst or a stall that never happened.
      const bool short_last = b.size() > 1 && k + 1 == b.size() && b.end_s(k) - b.start_s(k) < b.bin_ms / 2000;
      if (short_last) continue;
      // Each bin at its middle; a log of a single bin from its start to its end, since a line
      // through one point would not show.
      for (double x : b.size() == 1 ? std::vector<double>{b.start_s(k), b.end_s(k)}
                                    : std::vector<double>{(b.start_s(k) + b.end_s(k)) / 2}) {
        capacity.points.emplace_back(x, b.mbps(k, b.capacity_bytes[k]));
        ingress.points.emplace_back(x, b.mbps(k, b.ingress_bytes[k]));
        egress.points.emplace_back(x, b.mbps(k, b.egress_bytes[k]));
        if (source.marked_mbps > 0) marked.points.emplace_back(x, b.mbps(k, b.marked_bytes[k]));
      }
    }
    if (source.pass_through) {
      // What arrives leaves at once, so one line is the traffic.
      ingress.label = series_label(source, name_logs, "Traffic", source.ingress_mbps);
      chart.series.push_back(std::move(ingress));
      continue;
    }
    if (source.has_capacity) chart.series.push_back(std::move(capacity));
    chart.series.push_back(std::move(ingress));
    chart.series.push_back(std::move(egress));
    if (source.marked_mbps > 0) chart.series.push_back(std::move(marked));
  }
  return chart;
}

Chart throughput_chart(const std::vector<LabeledLog>& logs, const std::vector<ThroughputBins>& bins,
                       const std::string& title, bool name_logs) {
  std::vector<ThroughputSource> sources;
  for (size_t i = 0; i < logs.size(); i++) {
    const LinkLog& log = logs[i].log;
    const ThroughputBins& b = bins[i];
    // A log without opportunity lines is a shell's without a link (mm-delay, mm-loss).
    sources.push_back({logs[i].label, log.empty(), log.empty() || !log.opportunities.empty(), false,
                       mean_mbps(log, total_bytes(b.capacity_bytes)), mean_mbps(log, total_bytes(b.ingress_bytes)),
                       mean_mbps(log, total_bytes(b.egress_bytes)), mean_mbps(log, total_bytes(b.marked_bytes)), b});
  }
  Chart chart = throughput_chart(sources, title, name_logs);
  chart.note = empty_logs_note(logs);
  return chart;
}

std::string throughput_csv(const std::vector<LabeledLog>& logs, const std::vector<ThroughputBins>& bins) {
  std::string csv = "log,start_s,end_s,capacity_mbps,ingress_mbps,egress_mbps,dropped_packets,marked_packets\n";
  for (size_t i = 0; i < logs.size(); i++) {
    const ThroughputBins& b = bins[i];
    const std::string label = csv_field(logs[i].label);
    for (size_t k = 0; k < b.size(); k++) {
      csv += label + "," + csv_number(b.start_s(k), 6) + "," + csv_number(b.end_s(k), 6) + "," +
             csv_number(b.mbps(k, b.capacity_bytes[k]), 6) + "," + csv_number(b.mbps(k, b.ingress_bytes[k]), 6) + "," +
             csv_number(b.mbps(k, b.egress_bytes[k]), 6) + "," + csv_number(b.dropped_packets[k], 0) + "," +
             csv_number(b.marked_packets[k], 0) + "\n";
    }
  }
  return csv;
}

std::string throughput_summary(const LinkLog& log) {
  const LinkSummary s = summarize(log);
  char line[160];
  std::string text;
  if (log.empty()) {
    text = "Average capacity: - (no events in the log)\nAverage throughput: - (no events in the log)\n";
  } else {
    if (log.opportunities.empty()) {
      text = "Average capacity: - (no link: the log of a shell without one, such as mm-delay or mm-loss)\n";
    } else {
      std::snprintf(line, sizeof line, "Average capacity: %.2f Mbits/s\n", s.capacity_mbps);
      text = line;
    }
    if (log.departures.empty()) {
      std::snprintf(line, sizeof line, "Average throughput: %.2f Mbits/s (no packets delivered)\n", s.throughput_mbps);
    } else if (log.opportunities.empty()) {
      std::snprintf(line, sizeof line, "Average throughput: %.2f Mbits/s\n", s.throughput_mbps);
    } else {
      std::snprintf(line, sizeof line, "Average throughput: %.2f Mbits/s (%.1f%% utilization)\n", s.throughput_mbps,
                    s.utilization_percent);
    }
    text += line;
  }
  text += "95th percentile per-packet queueing delay: " + delay_text(s.queueing_delay_p95_ms, log) + "\n";
  text += "95th percentile signal delay: " + delay_text(s.signal_delay_p95_ms, log) + "\n";
  text += "Dropped packets: " + std::to_string(s.dropped_packets) + "\n";
  // Only where the queue marked (ECN): the original's summary lines stay as they were otherwise.
  if (s.marked_packets) text += "Marked packets (ECN CE): " + std::to_string(s.marked_packets) + "\n";
  return text;
}
