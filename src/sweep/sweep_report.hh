// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Writes what a results directory's loads add up to: RESULTS/loads.csv, RESULTS/summary.csv and
// RESULTS/plots/NAME.png and .svg (sweep_summary.hh, sweep_plots.hh). Made again from the stored
// loads every time, so a resumed or merged sweep's files cover every load.
#include <vector>

#include "sweep/sweep_store.hh"
#include "sweep/sweep_summary.hh"

// Returns the summary rows it wrote.
std::vector<SummaryRow> write_sweep_report(const ResultStore& store);
