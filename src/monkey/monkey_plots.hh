// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-monkey plot: the paper's figures as images. From a workload, the distributions (CDFs) of
// the connections' RTT, bottleneck bandwidth, loss and the exchanges' server delay (Monkey's
// Figs. 3-5); from a replay's results, the CDF of the relative error of the replayed response
// time, overall and by response size, and the traced and replayed response times (Figs. 6-8).
#include <string>
#include <vector>

#include "monkey/workload.hh"

// One exchange of a replay's results (mm-monkey do's RESULTS), as plot needs it.
struct ReplayedRow {
  uint64_t response_bytes = 0;
  double traced_ms = 0, replayed_ms = 0, error = 0;
};
// The rows with status ok; throws UserError naming `source` and the line if it is not RESULTS.
std::vector<ReplayedRow> parse_replay_results(std::string_view text, const std::string& source);

// Writes DIR/workload.EXT (four charts) and, with rows, DIR/replay.EXT (two); EXT is png or svg.
// Returns the files written.
std::vector<std::string> plot_monkey(const std::vector<WorkloadConnection>& workload,
                                     const std::vector<ReplayedRow>& rows, const std::string& directory,
                                     const std::string& extension);
