// SPDX-License-Identifier: GPL-3.0-or-later
// mm-monkey plot (monkey_plots.hh).
#include "monkey/monkey_plots.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "graphing/chart.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
// The empirical CDF of `values` as a step line: (value, share of values at or below it).
Series cdf(const std::string& label, std::vector<double> values, size_t color) {
  Series s{label + " (" + std::to_string(values.size()) + ")", Series::Style::Line, palette_color(color), {}};
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  for (size_t i = 0; i < values.size(); i++) {
    s.points.emplace_back(values[i], static_cast<double>(i) / n);
    s.points.emplace_back(values[i], static_cast<double>(i + 1) / n);
  }
  return s;
}

Chart cdf_chart(const std::string& title, const std::string& x_label, std::vector<Series> series) {
  Chart c{title, x_label, "share at or below (CDF)", false, std::move(series), "", std::nullopt, {{0, 1}}};
  bool empty = true;
  for (const Series& s : c.series) empty = empty && s.points.empty();
  if (empty) c.note = "no value in the workload";
  return c;
}

std::vector<std::string_view> comma_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (size_t at = 0;;) {
    const size_t comma = line.find(',', at);
    fields.push_back(line.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
    if (comma == std::string_view::npos) return fields;
    at = comma + 1;
  }
}

double number_of(std::string_view text, const std::string& where) {
  double v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    throw UserError(where + ": \"" + printable(text, 40) + "\" is not a number");
  return v;
}
}  // namespace

std::vector<ReplayedRow> parse_replay_results(std::string_view text, const std::string& source) {
  constexpr std::string_view kHeader =
      "connection,exchange,client,emulated_client,rtt_ms,bandwidth_mbps,loss,request_bytes,response_bytes,"
      "traced_ms,replayed_ms,relative_error,client_side_ms,status";
  if (next_line(text) != kHeader)
    throw UserError(source + " is not the results of mm-monkey do (its first line is not their header)");
  std::vector<ReplayedRow> rows;
  size_t line_number = 1;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    line_number++;
    if (line.empty()) continue;
    const std::string where = source + " line " + std::to_string(line_number);
    const std::vector<std::string_view> f = comma_fields(line);
    if (f.size() != 14) throw UserError(where + ": 14 fields expected, not " + std::to_string(f.size()));
    if (f[13] != "ok") continue;
    if (rows.size() == kMaxWorkloadExchanges) throw UserError(source + ": more rows than a workload has exchanges");
    rows.push_back({static_cast<uint64_t>(number_of(f[8], where)), number_of(f[9], where), number_of(f[10], where),
                    number_of(f[11], where)});
  }
  return rows;
}

std::vector<std::string> plot_monkey(const std::vector<WorkloadConnection>& workload,
                                     const std::vector<ReplayedRow>& rows, const std::string& directory,
                                     const std::string& extension) {
  std::vector<double> rtts, bandwidths, losses, delays;
  for (const WorkloadConnection& c : workload) {
    if (c.rtt_ms) rtts.push_back(*c.rtt_ms);
    if (c.bandwidth_mbps) bandwidths.push_back(*c.bandwidth_mbps);
    if (c.loss) losses.push_back(100 * *c.loss);
    for (const WorkloadExchange& e : c.exchanges)
      if (e.response_start_ms && e.request_bytes)
        delays.push_back(std::max(0.0, *e.response_start_ms - e.request_end_ms));
  }
  std::vector<std::string> written;
  const std::string workload_file = directory + "/workload." + extension;
  render_charts(
      {cdf_chart("Round-trip time (Monkey's Fig. 3)", "RTT (ms)", {cdf("connections", rtts, 0)}),
       cdf_chart("Bottleneck bandwidth (Fig. 4)", "Mbit/s", {cdf("connections", bandwidths, 1)}),
       cdf_chart("Loss toward the client (Fig. 5)", "% of the server's data segments", {cdf("connections", losses, 2)}),
       cdf_chart("Server delay", "last request byte to first response byte (ms)", {cdf("exchanges", delays, 3)})},
      workload_file);
  written.push_back(workload_file);
  if (rows.empty()) return written;
  std::map<int, std::vector<double>> errors;  // by class: 0 all, 1 below 10 KB, 2 10-100 KB, 3 larger
  std::vector<double> traced, replayed;
  for (const ReplayedRow& r : rows) {
    const double percent = std::clamp(100 * r.error, -50.0, 50.0);  // beyond: at the edges
    errors[0].push_back(percent);
    errors[r.response_bytes < 10'000 ? 1 : r.response_bytes < 100'000 ? 2 : 3].push_back(percent);
    traced.push_back(r.traced_ms);
    replayed.push_back(r.replayed_ms);
  }
  const char* names[] = {"all exchanges", "responses below 10 KB", "10-100 KB", "100 KB and more"};
  std::vector<Series> by_class;
  for (const auto& [k, v] : errors) by_class.push_back(cdf(names[k], v, static_cast<size_t>(k)));
  Chart error =
      cdf_chart("Replayed against traced response time (Monkey's Figs. 6-8)",
                "relative error of the replayed response time (%; beyond 50 at the edges)", std::move(by_class));
  const std::string replay_file = directory + "/replay." + extension;
  render_charts({error, cdf_chart("Response times at the server", "response time (ms)",
                                  {cdf("traced", traced, 0), cdf("replayed", replayed, 1)})},
                replay_file);
  written.push_back(replay_file);
  return written;
}
