// SPDX-License-Identifier: GPL-3.0-or-later
// Summaries, the optimal page-load time and the CSV files of a sweep (see sweep_summary.hh).
#include "sweep/sweep_summary.hh"

#include <cmath>
#include <set>

#include "util/csv.hh"

namespace {
std::optional<double> median(const std::vector<double>& values) { return percentile(values, 50); }

std::string field(std::optional<double> value, int decimals) {
  return value ? csv_number(*value, decimals) : std::string();
}

std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}
}  // namespace

std::optional<double> optimal_plt_ms(const Configuration& config, std::optional<double> browser_ms,
                                     std::optional<double> site_bytes) {
  if (!browser_ms) return std::nullopt;
  if (!config.emulated) return *browser_ms;
  if (!site_bytes) return std::nullopt;
  const double transfer_ms = *site_bytes * 8 / (config.rate_mbps * 1e6) * 1000;
  return config.rtt_ms + transfer_ms + *browser_ms;
}

std::vector<SummaryRow> summarize(const std::vector<Configuration>& configs,
                                  const std::map<std::string, std::vector<LoadResult>>& loads) {
  static const std::vector<LoadResult> kNone;
  auto loads_of = [&](const Configuration& c) -> const std::vector<LoadResult>& {
    const auto found = loads.find(c.id());
    return found == loads.end() ? kNone : found->second;
  };
  // Each variant's baseline: browser time and site size.
  std::map<std::string, std::pair<std::optional<double>, std::optional<double>>> baselines;
  for (const Configuration& c : configs) {
    if (c.emulated) continue;
    std::vector<double> plts, bytes;
    for (const LoadResult& load : loads_of(c)) {
      if (load.status != LoadResult::Status::Ok) continue;
      if (load.plt_ms) plts.push_back(*load.plt_ms);
      if (load.bytes) bytes.push_back(*load.bytes);
    }
    baselines[c.variant.protocol() + c.variant.servers()] = {median(plts), median(bytes)};
  }
  std::vector<SummaryRow> rows;
  for (const Configuration& c : configs) {
    SummaryRow row;
    row.config = c;
    std::vector<double> plts, sis;
    std::set<std::string> hosts;
    for (const LoadResult& load : loads_of(c)) {
      row.loads_total++;
      if (load.host) hosts.insert(load.host->host);
      if (load.status != LoadResult::Status::Ok) continue;
      row.loads_ok++;
      if (load.plt_ms) plts.push_back(*load.plt_ms);
      if (load.speed_index_ms) sis.push_back(*load.speed_index_ms);
    }
    row.hosts = hosts.size();
    row.plt_median_ms = median(plts);
    row.plt_p75_ms = percentile(plts, 75);
    row.plt_p95_ms = percentile(plts, 95);
    row.si_median_ms = median(sis);
    // Cumulus's optimal is the page's (the paper's, the same for every protocol): h1's baseline
    // when the sweep has one, not the unemulated Cumulus load (which adds the Remote Proxy's work).
    auto baseline = baselines.find(c.variant.protocol() + c.variant.servers());
    if (c.variant.protocol_kind == Protocol::kCumulus) {
      if (const auto h1 = baselines.find("h1" + c.variant.servers()); h1 != baselines.end()) baseline = h1;
    }
    if (baseline != baselines.end()) std::tie(row.browser_ms, row.site_bytes) = baseline->second;
    row.optimal_plt_ms = optimal_plt_ms(c, row.browser_ms, row.site_bytes);
    row.plt_ratio = ratio(row.plt_median_ms, row.optimal_plt_ms);
    row.optimal_si_ms = row.optimal_plt_ms;
    row.si_ratio = ratio(row.si_median_ms, row.optimal_si_ms);
    rows.push_back(row);
  }
  return rows;
}

std::string loads_csv(const std::vector<Configuration>& configs, const std::string& queue,
                      const std::map<std::string, std::vector<LoadResult>>& loads) {
  // mm-pageload's columns, then where each load ran.
  auto with_host = [](std::string line, const std::string& host) {
    line.pop_back();  // its newline
    return line + "," + host + "\n";
  };
  std::string text = with_host(load_csv_header(configuration_columns()), host_csv_header());
  for (const Configuration& c : configs) {
    const auto found = loads.find(c.id());
    if (found == loads.end()) continue;
    const std::vector<std::string> values = configuration_values(c, queue);
    for (const LoadResult& load : found->second)
      text += with_host(load_csv_row(load, values), load.host ? host_csv_fields(*load.host) : ",,,,,");
  }
  return text;
}

std::string summary_csv(const std::vector<SummaryRow>& rows, const std::string& queue) {
  std::string text;
  const std::vector<std::string> columns = configuration_columns();
  for (const std::string& column : columns) text += column + ",";
  text +=
      "loads_ok,loads_total,plt_median_ms,plt_p75_ms,plt_p95_ms,si_median_ms,browser_ms,site_bytes,optimal_plt_ms,"
      "plt_ratio_to_optimal,optimal_si_ms,si_ratio_to_optimal,loads_asked,hosts\n";
  for (const SummaryRow& row : rows) {
    for (const std::string& value : configuration_values(row.config, queue)) text += csv_field(value) + ",";
    text += std::to_string(row.loads_ok) + "," + std::to_string(row.loads_total) + "," + field(row.plt_median_ms, 1) +
            "," + field(row.plt_p75_ms, 1) + "," + field(row.plt_p95_ms, 1) + "," + field(row.si_median_ms, 1) + "," +
            field(row.browser_ms, 1) + "," + field(row.site_bytes, 0) + "," + field(row.optimal_plt_ms, 1) + "," +
            field(row.plt_ratio, 3) + "," + field(row.optimal_si_ms, 1) + "," + field(row.si_ratio, 3) + "," +
            std::to_string(row.loads_asked) + "," + std::to_string(row.hosts) + "\n";
  }
  return text;
}
