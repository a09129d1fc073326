#pragma once
// What mm-throughput-graph and mm-delay-graph share: their command line and error handling.
#include <functional>
#include <string>
#include <vector>

#include "util/args.hh"

struct GraphCommand {
  std::vector<std::string> operands;  // positional arguments
  std::string output;                 // -o FILE ("" : SVG on standard output)
};

// Parses -o FILE / --output=FILE, --help, --version and operands, then runs body; returns the
// exit status (2 for usage errors, 1 for others).
int run_graph_tool(int argc, char** argv, const ProgramInfo& info,
                   const std::function<void(const GraphCommand&)>& body);
