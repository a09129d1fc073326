// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What mm-throughput-graph and mm-delay-graph share: their command line, reading their logs,
// writing the CSV file, and error handling.
#include <functional>
#include <string>
#include <vector>

#include "graphing/link_log_reader.hh"
#include "util/args.hh"

struct GraphCommand {
  std::vector<std::string> operands;  // positional arguments (after "--" too)
  std::string output;                 // -o FILE ("" : SVG on standard output)
  std::string title;                  // --title TEXT ("" : the tool's own)
  std::string csv;                    // --csv FILE ("" : none; "-": standard output)
  std::vector<std::string> labels;    // --label NAME, once per log, in order
};

// The most logs one chart holds: one colour each.
inline constexpr size_t kMaxGraphLogs = 10;

// The options of both tools, for their --help text.
inline constexpr std::string_view kGraphOptionsHelp =
    "  -o, --output FILE  write the chart to FILE, SVG or PNG by its name (default: SVG on\n"
    "                     standard output)\n"
    "  --title TEXT       the chart's title\n"
    "  --csv FILE         also write the series the chart plots to FILE as CSV (- : standard\n"
    "                     output, when the chart goes to a file)\n"
    "  --label NAME       name the next LOG in the legend and the CSV (default: its file name);\n"
    "                     give one per LOG, in order\n"
    "  --help             show this help\n"
    "  --version          show the version\n";

// Parses the options (-o/--output, --title, --csv, --label, --help, --version; as --NAME VALUE
// or --NAME=VALUE, anywhere) and operands, checks the outputs, then runs body; returns the exit
// status (0 when the chart was written, 2 for usage errors, 1 for others).
int run_graph_tool(int argc, char** argv, const ProgramInfo& info,
                   const std::function<void(const GraphCommand&)>& body);

// Reads the logs named (none: standard input), labelled by command.labels or by their file
// names. Throws UsageError for more than kMaxGraphLogs logs, "-" twice, or labels that do not
// match the logs one for one; UserError for a log that cannot be read.
std::vector<LabeledLog> read_graph_logs(const std::vector<std::string>& paths, const GraphCommand& command);

// Writes the CSV text to command.csv ("-": standard output); nothing if there is no --csv.
void write_graph_csv(const GraphCommand& command, const std::string& text);

// Several logs, or a --label: the legend names each log.
bool legend_names_logs(const GraphCommand& command, size_t log_count);
