// SPDX-License-Identifier: GPL-3.0-or-later
// The command line, logs, CSV and error handling of mm-throughput-graph and mm-delay-graph
// (see graph_tool.hh).
#include "graphing/graph_tool.hh"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "graphing/chart.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

namespace {
void check_outputs(const GraphCommand& command) {
  check_chart_output(command.output);
  if (command.csv == "-" && command.output.empty())
    throw UsageError("--csv - and the chart would both go to standard output; give the chart a file with -o FILE.svg");
  if (!command.csv.empty() && command.csv == command.output)
    throw UsageError("--csv and -o name the same file " + command.output + "; give the CSV another name");
}
}  // namespace

int run_graph_tool(int argc, char** argv, const ProgramInfo& info,
                   const std::function<void(const GraphCommand&)>& body) {
  return run_tool(info.name, usage_line(info) + "\n", [&] {
    GraphCommand command;
    auto set = [](std::string& field, const char* name) {
      return [&field, name](std::string_view value) {
        if (value.empty()) throw UsageError(std::string(name) + " needs a value");
        field = value;
      };
    };
    ArgScanner scanner(info, {{"o", true, set(command.output, "-o")},
                              {"output", true, set(command.output, "--output")},
                              {"title", true, [&](std::string_view v) { command.title = v; }},
                              {"csv", true, set(command.csv, "--csv")},
                              {"label", true, [&](std::string_view v) { command.labels.emplace_back(v); }}});
    // Every word is an operand; after "--", words starting with '-' are operands too.
    const std::vector<std::string> rest = scanner.scan(argc, argv, [&](std::string_view word) {
      command.operands.emplace_back(word);
      return true;
    });
    command.operands.insert(command.operands.end(), rest.begin(), rest.end());
    check_outputs(command);
    body(command);
    return 0;
  });
}

std::vector<LabeledLog> read_graph_logs(const std::vector<std::string>& paths, const GraphCommand& command) {
  const std::vector<std::string> named = paths.empty() ? std::vector<std::string>{"-"} : paths;
  if (named.size() > kMaxGraphLogs) {
    throw UsageError(count_of(named.size(), "log") + " given; one chart holds at most " +
                     std::to_string(kMaxGraphLogs) + " (one colour each)");
  }
  if (std::count(named.begin(), named.end(), "-") > 1)
    throw UsageError("standard input (-) named twice; it can be read only once");
  if (!command.labels.empty() && command.labels.size() != named.size()) {
    throw UsageError(count_of(named.size(), "log") + " but " + count_of(command.labels.size(), "--label") +
                     "; give one --label per LOG, in order, or none");
  }
  std::vector<LabeledLog> logs;
  for (size_t i = 0; i < named.size(); i++) {
    logs.push_back({command.labels.empty() ? user_file_name(named[i]) : command.labels[i], LinkLog::read(named[i])});
  }
  return logs;
}

void write_graph_csv(const GraphCommand& command, const std::string& text) {
  if (command.csv.empty()) return;
  FileDescriptor file;
  if (command.csv != "-") {
    file = FileDescriptor(::open(command.csv.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (!file.valid()) throw UserError("cannot write CSV file " + command.csv + ": " + std::strerror(errno));
  }
  try {
    write_all(file.valid() ? file.get() : 1, text);
  } catch (const SystemError& e) {
    throw UserError("cannot write CSV file " + (file.valid() ? command.csv : std::string("to standard output")) + ": " +
                    std::strerror(e.error()));
  }
}

bool legend_names_logs(const GraphCommand& command, size_t log_count) {
  return log_count > 1 || !command.labels.empty();
}
