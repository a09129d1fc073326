// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a sweep's loads add up to: per configuration the loads ok of total, the median, p75 and
// p95 page-load time, the median speed index, and the optimal page-load time of the paper
// (§5.1.2) with each configuration's ratio to it; and the text of loads.csv and summary.csv.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pageload/load_report.hh"
#include "sweep/sweep_grid.hh"

// The optimal page-load time (paper §5.1.2): minimum RTT + site size / link rate + browser time,
// in ms. browser_ms is the median PLT of the unemulated loads (mm-replay alone), site_bytes the
// median bytes mm-pageload counted in them (the bytes delivered between navigation start and
// the load event, as the paper counts them). An unemulated configuration's optimal is the
// browser time (no delay, an infinite link). nullopt without a baseline.
std::optional<double> optimal_plt_ms(const Configuration& config, std::optional<double> browser_ms,
                                     std::optional<double> site_bytes);

struct SummaryRow {
  Configuration config;
  size_t loads_ok = 0, loads_total = 0;
  size_t loads_asked = 0;  // the sweep's runs of it: more than loads_total when loads are missing
  size_t hosts = 0;        // the machines its loads ran on
  std::optional<double> plt_median_ms, plt_p75_ms, plt_p95_ms, si_median_ms;
  std::optional<double> browser_ms, site_bytes;  // of this configuration's variant's baseline
  std::optional<double> optimal_plt_ms;
  std::optional<double> plt_ratio;  // median PLT / optimal PLT
  // The upper bound of the optimal speed index (paper §5.4.3): the page painted all at once at
  // the optimal page-load time, so the bound equals the optimal PLT.
  std::optional<double> optimal_si_ms;
  std::optional<double> si_ratio;  // median SI / optimal SI bound
};

// One row per configuration, in the given order. loads: by configuration id (missing ids have
// no loads). Metrics over the ok loads only; percentiles nearest-rank (load_report.hh).
std::vector<SummaryRow> summarize(const std::vector<Configuration>& configs,
                                  const std::map<std::string, std::vector<LoadResult>>& loads);

// loads.csv: configuration_columns(), load_report's columns, then where the load ran
// (host_csv_header(); empty for loads of an older version); one row per load, by configuration
// then run.
std::string loads_csv(const std::vector<Configuration>& configs, const std::string& queue,
                      const std::map<std::string, std::vector<LoadResult>>& loads);
// summary.csv: configuration_columns(), loads_ok, loads_total, plt_median_ms, plt_p75_ms,
// plt_p95_ms, si_median_ms, browser_ms, site_bytes, optimal_plt_ms, plt_ratio_to_optimal,
// optimal_si_ms, si_ratio_to_optimal, loads_asked (loads_total short of it: loads missing, e.g. a
// cluster's task that never finished), hosts; an unknown value is an empty field.
std::string summary_csv(const std::vector<SummaryRow>& rows, const std::string& queue);
