// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Writes what a results directory's loads add up to: RESULTS/loads.csv, RESULTS/summary.csv and
// RESULTS/plots/NAME.png and .svg (sweep_summary.hh, sweep_plots.hh). Made again from the stored
// loads every time, so a resumed or merged sweep's files cover every load.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sweep/sweep_store.hh"
#include "sweep/sweep_summary.hh"

// Returns the summary rows it wrote. With Cumulus configurations, also RESULTS/cumulus.csv.
std::vector<SummaryRow> write_sweep_report(const ResultStore& store);

// What a Cumulus load's log says (mm-cumulus-local's lines): the bulk response and the Remote
// Proxy's load (its status, time and CPU time, which shares this machine's cores with the
// measured browser), and how the browser's requests were answered. Absent fields stay empty.
struct CumulusLoadLog {
  std::optional<double> bulk_objects, bulk_kib, bulk_ms;
  std::string remote_status;  // "ok", "timeout", "error", or "" (no end frame: the bulk failed)
  std::optional<double> remote_load_ms, remote_cpu_ms;
  std::optional<double> answered, forwarded;
  std::string bulk_failure;  // the line's reason when the bulk failed, stalled or was cut
};
CumulusLoadLog parse_cumulus_log(std::string_view log);
// The header and a row of RESULTS/cumulus.csv.
std::string cumulus_csv_header();
std::string cumulus_csv_row(const std::string& id, int run, const CumulusLoadLog& log);
