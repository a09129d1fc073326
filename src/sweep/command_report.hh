// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a command sweep's runs add up to, written again from the stored runs every time:
//   RESULTS/runs.csv     a row per stored run: the configuration, its status and exit status,
//                        the data direction's figures (the direction that delivered more bytes:
//                        throughput, the link's capacity, mean and 95th-percentile one-way
//                        delay, loss, CE marks), both directions' throughput, and where and on
//                        what it ran (host, kernel, CPU, CPUs, load average, mahimahi's version)
//   RESULTS/summary.csv  a row per configuration: runs asked for, stored and ok (a missing or
//                        failed run shows here, never as a silent hole), the statuses of the
//                        others, and the medians over its ok runs, and how many hosts ran it
//   RESULTS/plots/       per path (link, RTT, loss, queue): throughput against the 95th
//                        percentile one-way delay, a colour per scheme and congestion control,
//                        a dot per run and the link's capacity (Pantheon's figure:
//                        tput-delay-PATH), and each one's first ok run's throughput over time
//                        (tput-time-PATH)
#include <string>
#include <vector>

#include "sweep/command_results.hh"
#include "sweep/sweep_plots.hh"

// The summary's rows, as summary.csv writes them (for the frontend's closing line and tests).
struct CommandSummaryRow {
  CommandConfiguration config;
  int runs = 0, stored = 0, ok = 0;
  std::string others;  // "failed 1, timeout 1"
  std::string direction;
  double throughput_mbps = 0, capacity_mbps = 0, delay_mean_ms = 0, delay_p95_ms = 0, loss_rate = 0;
  size_t hosts = 0;
};

std::vector<CommandSummaryRow> summarize_command_runs(const CommandResults& results,
                                                      const std::map<std::string, std::vector<nlohmann::json>>& runs);
std::string command_runs_csv(const CommandResults& results,
                             const std::map<std::string, std::vector<nlohmann::json>>& runs);
std::string command_summary_csv(const std::vector<CommandSummaryRow>& rows);
std::vector<NamedChart> command_charts(const std::vector<CommandSummaryRow>& rows,
                                       const std::map<std::string, std::vector<nlohmann::json>>& runs);

// Writes runs.csv, summary.csv and plots/; returns the summary's rows.
std::vector<CommandSummaryRow> write_command_report(const CommandResults& results);
