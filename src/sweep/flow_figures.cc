// SPDX-License-Identifier: GPL-3.0-or-later
// A link direction's figures for a run (see flow_figures.hh).
#include "sweep/flow_figures.hh"

#include <algorithm>
#include <cmath>

#include "util/statistics.hh"

FlowFigures flow_figures(const LinkLog& log, double propagation_ms, double bin_s) {
  FlowFigures f;
  f.arrived_packets = static_cast<double>(log.arrivals.size());
  f.delivered_packets = static_cast<double>(log.departures.size());
  for (const auto& d : log.drops) f.dropped_packets += d.packets;
  for (const auto& m : log.marks) f.marked_packets += m.packets;
  if (log.departures.empty()) return f;
  double first = log.departures.front().time - log.departures.front().delay, last = log.departures.back().time;
  if (!log.arrivals.empty()) first = std::min(first, log.arrivals.front().time);
  for (const auto& d : log.departures) last = std::max(last, d.time);
  const double span_ms = std::max(last - first, 1.0);
  f.duration_s = span_ms / 1000;
  std::vector<double> delays;
  delays.reserve(log.departures.size());
  double delay_sum = 0;
  for (const auto& d : log.departures) {
    f.delivered_bytes += d.bytes;
    delays.push_back(d.delay + propagation_ms);
    delay_sum += d.delay + propagation_ms;
  }
  double capacity = 0;
  for (const auto& o : log.opportunities)
    if (o.time >= first && o.time <= last) capacity += o.bytes;
  f.throughput_mbps = f.delivered_bytes * 8 / f.duration_s / 1e6;
  f.capacity_mbps = capacity * 8 / f.duration_s / 1e6;
  f.delay_mean_ms = delay_sum / static_cast<double>(delays.size());
  f.delay_p95_ms = percentile(std::move(delays), 95);
  f.bin_s = std::max(bin_s, f.duration_s / static_cast<double>(kMaxSeriesBins));
  const size_t bins = static_cast<size_t>(std::ceil(f.duration_s / f.bin_s));
  std::vector<double> bytes(std::max<size_t>(bins, 1), 0);
  for (const auto& d : log.departures) {
    const size_t bin = std::min(bytes.size() - 1, static_cast<size_t>((d.time - first) / 1000 / f.bin_s));
    bytes[bin] += d.bytes;
  }
  f.throughput_series_mbps.reserve(bytes.size());
  for (double b : bytes) f.throughput_series_mbps.push_back(b * 8 / f.bin_s / 1e6);
  return f;
}

nlohmann::json flow_json(const FlowFigures& f) {
  nlohmann::json j = {{"arrived_packets", f.arrived_packets},
                      {"delivered_packets", f.delivered_packets},
                      {"dropped_packets", f.dropped_packets},
                      {"marked_packets", f.marked_packets},
                      {"delivered_bytes", f.delivered_bytes},
                      {"duration_s", f.duration_s},
                      {"throughput_mbps", f.throughput_mbps},
                      {"capacity_mbps", f.capacity_mbps},
                      {"loss_rate", f.loss_rate()},
                      {"delay_mean_ms", nullptr},
                      {"delay_p95_ms", nullptr},
                      {"bin_s", f.bin_s},
                      {"throughput_series_mbps", f.throughput_series_mbps}};
  if (f.delay_mean_ms) j["delay_mean_ms"] = *f.delay_mean_ms;
  if (f.delay_p95_ms) j["delay_p95_ms"] = *f.delay_p95_ms;
  return j;
}

std::optional<FlowFigures> flow_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  try {
    FlowFigures f;
    f.arrived_packets = j.at("arrived_packets").get<double>();
    f.delivered_packets = j.at("delivered_packets").get<double>();
    f.dropped_packets = j.at("dropped_packets").get<double>();
    f.marked_packets = j.at("marked_packets").get<double>();
    f.delivered_bytes = j.at("delivered_bytes").get<double>();
    f.duration_s = j.at("duration_s").get<double>();
    f.throughput_mbps = j.at("throughput_mbps").get<double>();
    f.capacity_mbps = j.at("capacity_mbps").get<double>();
    if (!j.at("delay_mean_ms").is_null()) f.delay_mean_ms = j.at("delay_mean_ms").get<double>();
    if (!j.at("delay_p95_ms").is_null()) f.delay_p95_ms = j.at("delay_p95_ms").get<double>();
    f.bin_s = j.value("bin_s", 0.0);
    if (j.contains("throughput_series_mbps") && j.at("throughput_series_mbps").size() <= kMaxSeriesBins)
      f.throughput_series_mbps = j.at("throughput_series_mbps").get<std::vector<double>>();
    return f;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}
