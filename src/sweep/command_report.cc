// SPDX-License-Identifier: GPL-3.0-or-later
// A command sweep's CSV files and plots (see command_report.hh).
#include "sweep/command_report.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "sweep/flow_figures.hh"
#include "sweep/sweep_store.hh"
#include "util/csv.hh"
#include "util/host_facts.hh"
#include "util/statistics.hh"

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The data direction's figures of a run, if it has them.
std::optional<FlowFigures> data_flow(const nlohmann::json& run) {
  const std::string direction = run.value("direction", "");
  if (direction.empty() || !run.contains(direction)) return std::nullopt;
  return flow_from_json(run.at(direction));
}

double throughput_of(const nlohmann::json& run, const char* direction) {
  if (!run.contains(direction)) return kNaN;
  const std::optional<FlowFigures> f = flow_from_json(run.at(direction));
  return f ? f->throughput_mbps : kNaN;
}

std::string text_of(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return "";
  const nlohmann::json& v = object.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

double median_of(std::vector<double> values) { return percentile(std::move(values), 50).value_or(kNaN); }

// A series' label: the scheme, the congestion control, or both, as the sweep varies them.
std::string series_label(const CommandConfiguration& c, bool schemes_vary, bool ccs_vary) {
  const std::string cc = c.cc.empty() ? "default" : c.cc;
  if (schemes_vary && ccs_vary) return c.scheme + "/" + cc;
  if (ccs_vary) return cc;
  return c.scheme;
}
}  // namespace

std::vector<CommandSummaryRow> summarize_command_runs(const CommandResults& results,
                                                      const std::map<std::string, std::vector<nlohmann::json>>& runs) {
  std::vector<CommandSummaryRow> rows;
  for (const CommandConfiguration& c : results.configurations()) {
    CommandSummaryRow row;
    row.config = c;
    row.runs = results.runs();
    std::vector<double> throughput, capacity, mean, p95, loss;
    std::map<std::string, int> statuses, directions;
    std::set<std::string> hosts;
    const auto it = runs.find(c.id());
    if (it != runs.end()) {
      for (const nlohmann::json& run : it->second) {
        row.stored++;
        hosts.insert(text_of(run.value("host", nlohmann::json::object()), "host"));
        const std::string status = run.value("status", "?");
        if (status != "ok") {
          statuses[status]++;
          continue;
        }
        row.ok++;
        directions[run.value("direction", "")]++;
        if (const std::optional<FlowFigures> f = data_flow(run)) {
          throughput.push_back(f->throughput_mbps);
          capacity.push_back(f->capacity_mbps);
          mean.push_back(f->delay_mean_ms.value_or(kNaN));
          p95.push_back(f->delay_p95_ms.value_or(kNaN));
          loss.push_back(f->loss_rate());
        }
      }
    }
    if (row.stored < row.runs) statuses["missing"] += row.runs - row.stored;
    for (const auto& [status, count] : statuses)
      row.others += (row.others.empty() ? "" : ", ") + status + " " + std::to_string(count);
    for (const auto& [direction, count] : directions)
      if (row.direction.empty() || count > directions[row.direction]) row.direction = direction;
    row.throughput_mbps = median_of(throughput);
    row.capacity_mbps = median_of(capacity);
    row.delay_mean_ms = median_of(mean);
    row.delay_p95_ms = median_of(p95);
    row.loss_rate = median_of(loss);
    row.hosts = hosts.size();
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string command_runs_csv(const CommandResults& results,
                             const std::map<std::string, std::vector<nlohmann::json>>& runs) {
  std::string text;
  for (const std::string& column : command_configuration_columns()) text += column + ",";
  text +=
      "run,status,exit_status,direction,throughput_mbps,capacity_mbps,delay_mean_ms,delay_p95_ms,loss_rate,"
      "marked_packets,uplink_mbps,downlink_mbps,seconds," +
      host_csv_header() + "\n";
  for (const CommandConfiguration& c : results.configurations()) {
    const auto it = runs.find(c.id());
    if (it == runs.end()) continue;
    for (const nlohmann::json& run : it->second) {
      for (const std::string& value : command_configuration_values(c)) text += csv_field(value) + ",";
      const std::optional<FlowFigures> f = data_flow(run);
      const HostFacts host = run.value("host", nlohmann::json::object()).get<HostFacts>();
      text += std::to_string(run.value("run", 0)) + "," + csv_field(run.value("status", "")) + "," +
              csv_field(text_of(run, "exit_status")) + "," + csv_field(run.value("direction", "")) + "," +
              csv_number(f ? f->throughput_mbps : kNaN, 3) + "," + csv_number(f ? f->capacity_mbps : kNaN, 3) + "," +
              csv_number(f && f->delay_mean_ms ? *f->delay_mean_ms : kNaN, 2) + "," +
              csv_number(f && f->delay_p95_ms ? *f->delay_p95_ms : kNaN, 2) + "," +
              csv_number(f ? f->loss_rate() : kNaN, 5) + "," + csv_number(f ? f->marked_packets : kNaN, 0) + "," +
              csv_number(throughput_of(run, "uplink"), 3) + "," + csv_number(throughput_of(run, "downlink"), 3) + "," +
              csv_number(run.value("seconds", kNaN), 2) + "," + host_csv_fields(host) + "\n";
    }
  }
  return text;
}

std::string command_summary_csv(const std::vector<CommandSummaryRow>& rows) {
  std::string text;
  for (const std::string& column : command_configuration_columns()) text += column + ",";
  text += "runs,stored,ok,not_ok,direction,throughput_mbps,capacity_mbps,delay_mean_ms,delay_p95_ms,loss_rate,hosts\n";
  for (const CommandSummaryRow& row : rows) {
    for (const std::string& value : command_configuration_values(row.config)) text += csv_field(value) + ",";
    text += std::to_string(row.runs) + "," + std::to_string(row.stored) + "," + std::to_string(row.ok) + "," +
            csv_field(row.others) + "," + csv_field(row.direction) + "," + csv_number(row.throughput_mbps, 3) + "," +
            csv_number(row.capacity_mbps, 3) + "," + csv_number(row.delay_mean_ms, 2) + "," +
            csv_number(row.delay_p95_ms, 2) + "," + csv_number(row.loss_rate, 5) + "," + std::to_string(row.hosts) +
            "\n";
  }
  return text;
}

std::vector<NamedChart> command_charts(const std::vector<CommandSummaryRow>& rows,
                                       const std::map<std::string, std::vector<nlohmann::json>>& runs) {
  std::set<std::string> schemes, ccs;
  for (const CommandSummaryRow& row : rows) {
    schemes.insert(row.config.scheme);
    ccs.insert(row.config.cc);
  }
  const bool schemes_vary = schemes.size() > 1, ccs_vary = ccs.size() > 1 || schemes.size() == 1;
  std::vector<std::string> paths;  // in the sweep's order
  for (const CommandSummaryRow& row : rows)
    if (std::find(paths.begin(), paths.end(), row.config.path_id()) == paths.end())
      paths.push_back(row.config.path_id());
  std::vector<NamedChart> charts;
  for (const std::string& path : paths) {
    Chart scatter, series;
    scatter.title = "throughput against 95th-percentile one-way delay: " + path;
    scatter.x_label = "95th-percentile one-way delay (ms)";
    scatter.y_label = series.y_label = "throughput (Mbit/s)";
    series.title = "throughput over time (each one's first ok run): " + path;
    series.x_label = "time (s)";
    std::vector<double> capacities, delays;
    size_t colour = 0;
    for (const CommandSummaryRow& row : rows) {
      if (row.config.path_id() != path) continue;
      const std::string label = series_label(row.config, schemes_vary, ccs_vary);
      Series dots{label, Series::Style::Markers, palette_color(colour), {}};
      Series line{label, Series::Style::Line, palette_color(colour), {}};
      colour++;
      const auto it = runs.find(row.config.id());
      if (it == runs.end()) continue;
      for (const nlohmann::json& run : it->second) {
        if (run.value("status", "") != "ok") continue;
        const std::optional<FlowFigures> f = data_flow(run);
        if (!f || !f->delay_p95_ms) continue;
        dots.points.emplace_back(*f->delay_p95_ms, f->throughput_mbps);
        delays.push_back(*f->delay_p95_ms);
        capacities.push_back(f->capacity_mbps);
        if (line.points.empty()) {
          for (size_t i = 0; i < f->throughput_series_mbps.size(); i++)
            line.points.emplace_back((static_cast<double>(i) + 0.5) * f->bin_s, f->throughput_series_mbps[i]);
        }
      }
      std::sort(dots.points.begin(), dots.points.end());
      if (!dots.points.empty()) {
        dots.label +=
            " (median " + csv_number(row.throughput_mbps, 1) + " Mbit/s, " + csv_number(row.delay_p95_ms, 0) + " ms)";
        scatter.series.push_back(std::move(dots));
      }
      if (!line.points.empty()) series.series.push_back(std::move(line));
    }
    if (scatter.series.empty()) {
      scatter.note = series.note = "no ok run";
    } else {
      const double capacity = median_of(capacities);
      const auto [low, high] = std::minmax_element(delays.begin(), delays.end());
      const double span = std::max(*high - *low, 1.0);
      scatter.series.push_back({"link capacity (" + csv_number(capacity, 1) + " Mbit/s)",
                                Series::Style::DashedLine,
                                {0.4, 0.4, 0.4},
                                {{*low - span * 0.1, capacity}, {*high + span * 0.1, capacity}}});
      double end = 0;
      for (const Series& s : series.series) end = std::max(end, s.points.back().first);
      series.series.push_back({"link capacity",
                               Series::Style::DashedLine,
                               {0.4, 0.4, 0.4},
                               {{0, capacity}, {std::max(end, 1.0), capacity}}});
    }
    charts.push_back({"tput-delay-" + path, std::move(scatter)});
    charts.push_back({"tput-time-" + path, std::move(series)});
  }
  return charts;
}

std::vector<CommandSummaryRow> write_command_report(const CommandResults& results) {
  const auto runs = results.read_runs();
  std::vector<CommandSummaryRow> rows = summarize_command_runs(results, runs);
  write_file_atomically(results.dir() / "runs.csv", command_runs_csv(results, runs));
  write_file_atomically(results.dir() / "summary.csv", command_summary_csv(rows));
  write_named_charts(results.dir() / "plots", command_charts(rows, runs));
  return rows;
}
