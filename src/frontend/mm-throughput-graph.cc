// SPDX-License-Identifier: GPL-3.0-or-later
// mm-throughput-graph [OPTIONS] MS-PER-BIN [LOG...]
#include <cstdio>

#include "graphing/chart.hh"
#include "graphing/graph_tool.hh"
#include "graphing/throughput_plot.hh"
#include "util/args.hh"
#include "util/exception.hh"

namespace {
const ProgramInfo kInfo{
    "mm-throughput-graph", "[OPTIONS] MS-PER-BIN [LOG...]",
    "Plots mm-link logs (--uplink-log / --downlink-log; standard input if no LOG is given, or for -):\n"
    "the link's capacity, the traffic arriving (ingress) and leaving (egress), in bins of\n"
    "MS-PER-BIN milliseconds, the first argument (as in the original's\n"
    "'mm-throughput-graph 500 LOG > plot.svg'). Up to 10 logs share one chart, one colour each;\n"
    "the legend sits below the plot. Prints to standard error, for each log: the average\n"
    "capacity, the average throughput and utilisation, the 95th percentile per-packet queueing\n"
    "delay and signal delay, and drops (\"-\" and the reason where there is no value, e.g. when\n"
    "no packet was delivered), and the packets the queue marked CE (ECN) if it marked any; the\n"
    "chart then has their traffic too (\"Marked CE\").\n"
    "\n"
    "Options:\n" +
        std::string(kGraphOptionsHelp) +
        "\n"
        "CSV columns: log,start_s,end_s,capacity_mbps,ingress_mbps,egress_mbps,dropped_packets,\n"
        "marked_packets\n"
        "(a row per bin of each log; times in seconds from the log's base timestamp).\n"
        "Exit status: 0 when the chart was written (also for a log with no packets), 1 when a log\n"
        "cannot be read or an output cannot be written, 2 for a usage error.\n"};

void plot_throughput(const GraphCommand& command) {
  if (command.operands.empty()) throw UsageError("missing MS-PER-BIN (the bin width in ms, e.g. 500)");
  const std::string& first = command.operands[0];
  if (first.empty() || (first.find_first_not_of("0123456789.eE+-") != std::string::npos)) {
    throw UsageError("the first argument is MS-PER-BIN, the bin width in ms, not \"" + first +
                     "\"; e.g. mm-throughput-graph 500 " + first);
  }
  const double bin_ms = parse_nonnegative(first, "MS-PER-BIN");
  if (bin_ms <= 0) throw UsageError("MS-PER-BIN must be greater than 0");
  const std::vector<std::string> paths(command.operands.begin() + 1, command.operands.end());
  const std::vector<LabeledLog> logs = read_graph_logs(paths, command);
  std::vector<ThroughputBins> bins;
  for (const auto& named : logs) {
    try {
      bins.push_back(bin_throughput(named.log, bin_ms, command.operands[0]));
    } catch (const UsageError& e) {
      throw UsageError(logs.size() > 1 ? named.label + ": " + e.what() : std::string(e.what()));
    }
  }
  write_graph_csv(command, throughput_csv(logs, bins));
  render_chart(throughput_chart(logs, bins, command.title, legend_names_logs(command, logs.size())), command.output);
  for (const auto& named : logs) {
    if (logs.size() > 1) std::fprintf(stderr, "%s:\n", named.label.c_str());
    std::fputs(throughput_summary(named.log).c_str(), stderr);
  }
}
}  // namespace

int main(int argc, char** argv) { return run_graph_tool(argc, argv, kInfo, plot_throughput); }
