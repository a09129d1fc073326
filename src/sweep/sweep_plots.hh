// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The charts of a sweep (drawn by graphing/chart.hh, each written as PNG and SVG):
//   plt-cdf-RATEmbit       the PLT's CDF of each configuration at that rate (one line each)
//   median-plt-vs-rtt      median PLT vs RTT, a line per rate (and loss rate, and protocol)
//   plt-ratio-vs-rtt       median PLT / optimal PLT vs RTT, likewise (the paper's Figure 7)
//   si-ratio-vs-rtt        median speed index / its optimal bound vs RTT, likewise
//   median-plt-vs-loss     median PLT vs loss rate, a line per rate and RTT (and protocol); only
//                          when more than one loss rate was swept
// Protocols (h1, h2) and server layouts (multi, single) of merged sweeps share a chart: h2 and
// single-server lines are dashed, and each label names its protocol.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "graphing/chart.hh"
#include "pageload/load_report.hh"
#include "sweep/sweep_summary.hh"

struct NamedChart {
  std::string name;  // file name without extension
  Chart chart;
};

std::vector<NamedChart> sweep_charts(const std::vector<SummaryRow>& rows,
                                     const std::map<std::string, std::vector<LoadResult>>& loads);

// Writes each chart as DIR/NAME.png and DIR/NAME.svg (DIR created), each drawn under a temporary
// name and then renamed: a reader never sees half a plot.
void write_named_charts(const std::filesystem::path& dir, const std::vector<NamedChart>& charts);
