// The command line and error handling of mm-throughput-graph and mm-delay-graph (see graph_tool.hh).
#include "graphing/graph_tool.hh"

#include "graphing/chart.hh"
#include "util/args.hh"

int run_graph_tool(int argc, char** argv, const ProgramInfo& info,
                   const std::function<void(const GraphCommand&)>& body) {
  const std::string usage = usage_line(info);
  return run_tool(info.name, usage + "\n", [&] {
    const std::optional<ToolArgs> args = scan_tool_args(argc, argv, info.name, usage, info.help, {});
    if (!args) return 0;
    GraphCommand command{args->operands, args->output.value_or("")};
    check_chart_output(command.output);
    body(command);
    return 0;
  });
}
