// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What one direction of an emulated link saw during a run, from mm-link's log of it: the
// figures a congestion-control comparison reads (Pantheon's: throughput against the 95th
// percentile one-way delay, a packet's delay being its time in the link's queue plus the path's
// propagation delay), and throughput over time.
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "graphing/link_log_reader.hh"

struct FlowFigures {
  double arrived_packets = 0, delivered_packets = 0, dropped_packets = 0, marked_packets = 0;
  double delivered_bytes = 0;
  // From the first packet's arrival to the last one's departure (0 when nothing was delivered).
  double duration_s = 0;
  double throughput_mbps = 0;  // delivered bits over the duration
  double capacity_mbps = 0;    // the link's opportunities over the same span (its mean rate then)
  // Per delivered packet: the time it spent in the link (queueing and waiting for its
  // opportunity) plus `propagation_ms`; unset when no packet was delivered.
  std::optional<double> delay_mean_ms, delay_p95_ms;
  double bin_s = 0;                            // the series' step
  std::vector<double> throughput_series_mbps;  // per bin from the first arrival
  double loss_rate() const { return arrived_packets > 0 ? dropped_packets / arrived_packets : 0; }
};

inline constexpr size_t kMaxSeriesBins = 100000;  // a run's series: the step grows to stay within it

// `propagation_ms`: the one-way delay the path adds besides the link (mm-delay's RTT/2).
FlowFigures flow_figures(const LinkLog& log, double propagation_ms, double bin_s = 0.5);

nlohmann::json flow_json(const FlowFigures& figures);
// The figures (without the series, which may be absent) of flow_json's object; nullopt if `j`
// is not one.
std::optional<FlowFigures> flow_from_json(const nlohmann::json& j);
