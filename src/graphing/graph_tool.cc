// The command line and error handling of mm-throughput-graph and mm-delay-graph (see graph_tool.hh).
#include "graphing/graph_tool.hh"

#include "graphing/chart.hh"
#include "util/args.hh"

int run_graph_tool(int argc, char** argv, const std::string& name, const std::string& usage, const std::string& help,
                   const std::function<void(const GraphCommand&)>& body) {
  return run_tool(name, usage + "\n", [&] {
    const std::optional<ToolArgs> args = scan_tool_args(argc, argv, name, usage, help, {});
    if (!args) return 0;
    GraphCommand command{args->operands, args->output.value_or("")};
    check_chart_output(command.output);
    body(command);
    return 0;
  });
}
