// SPDX-License-Identifier: GPL-3.0-or-later
// mm-delay-graph [OPTIONS] [LOG...]
#include <cstdio>

#include "graphing/chart.hh"
#include "graphing/delay_plot.hh"
#include "graphing/graph_tool.hh"
#include "util/args.hh"

namespace {
const ProgramInfo kInfo{
    "mm-delay-graph", "[OPTIONS] [LOG...]",
    "Plots the delays in mm-link logs (standard input if no LOG is given, or for -): each packet's\n"
    "delay in the queue and on the link when it left, and the signal delay (for each ms, how\n"
    "long until a packet sent then or later arrived), on a logarithmic scale. Up to 10 logs\n"
    "share one chart, one colour each. The legend sits below the plot. Prints to standard error,\n"
    "for each log, the 95th percentile of both (\"-\" and the reason when no packet was delivered).\n"
    "\n"
    "Options:\n" +
        std::string(kGraphOptionsHelp) +
        "\n"
        "CSV columns: log,start_s,end_s,signal_delay_ms,packets,mean_delay_ms,max_delay_ms\n"
        "(a row per ms of each log, per group of ms beyond 1000000 ms; packets: those that left\n"
        "then, with their mean and highest delay; an empty field has no value).\n"
        "Exit status: 0 when the chart was written (also for a log with no packets), 1 when a log\n"
        "cannot be read or an output cannot be written, 2 for a usage error.\n"};

void plot_delays(const GraphCommand& command) {
  const std::vector<LabeledLog> logs = read_graph_logs(command.operands, command);
  std::vector<DelayRows> rows;
  for (const auto& named : logs) rows.push_back(delay_rows(named.log));
  write_graph_csv(command, delay_csv(logs, rows));
  render_chart(delay_chart(logs, rows, command.title, legend_names_logs(command, logs.size())), command.output);
  for (const auto& named : logs) {
    if (logs.size() > 1) std::fprintf(stderr, "%s:\n", named.label.c_str());
    std::fputs(delay_summary(named.log).c_str(), stderr);
  }
}
}  // namespace

int main(int argc, char** argv) { return run_graph_tool(argc, argv, kInfo, plot_delays); }
