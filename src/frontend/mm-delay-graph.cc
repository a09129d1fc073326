// mm-delay-graph [LOG] [-o FILE.svg|FILE.png]
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "graphing/chart.hh"
#include "graphing/graph_tool.hh"
#include "graphing/link_log_reader.hh"
#include "util/args.hh"
#include "util/exception.hh"

namespace {
const ProgramInfo kInfo{"mm-delay-graph", "[LOG] [-o FILE.svg|FILE.png]",
                        "Plots the delays in an mm-link log (standard input if LOG is omitted or -): each packet's\n"
                        "delay in the queue and on the link when it left, and the signal delay (for each ms, how\n"
                        "long until a packet sent then or later arrived), on a logarithmic scale. Writes FILE as\n"
                        "SVG or PNG (by its name), or SVG to standard output. Prints to standard error the 95th\n"
                        "percentile of both.\n"};

void plot_delays(const GraphCommand& command) {
  if (command.operands.size() > 1) throw UsageError("too many arguments");
  const LinkLog log = LinkLog::read(command.operands.empty() ? "-" : command.operands[0]);
  const LinkSummary s = summarize(log);
  const std::vector<double> signal = signal_delays(log);

  Chart chart;
  chart.title = "Delay";
  chart.x_label = "time (s)";
  chart.y_label = "delay (ms)";
  chart.log_y = true;
  char label[128];
  std::snprintf(label, sizeof label, "Signal delay (95th percentile %.0f ms)", s.signal_delay_p95_ms);
  Series sig{label, Series::Style::Area, {0.95, 0.55, 0.1}, {}};
  // One point per ms, or for a long log (over 1000000 ms) the highest of each group of
  // ms, so that the chart holds at most a million points.
  constexpr size_t kMaxPoints = 1'000'000;
  const size_t group = (signal.size() + kMaxPoints - 1) / kMaxPoints;
  for (size_t i = 0; i < signal.size(); i += group) {
    double value = signal[i];
    for (size_t j = i + 1; j < std::min(signal.size(), i + group); j++) {
      if (std::isnan(value) || signal[j] > value) value = signal[j];
    }
    sig.points.emplace_back((std::floor(log.first) + static_cast<double>(i)) / 1000, value);
  }
  std::snprintf(label, sizeof label, "Per-packet delay (95th percentile %.0f ms)", s.queueing_delay_p95_ms);
  Series packets{label, Series::Style::Dots, {0.15, 0.35, 0.85}, {}};
  for (const auto& d : log.departures) packets.points.emplace_back(d.time / 1000, d.delay);
  chart.series = {sig, packets};
  render_chart(chart, command.output);

  std::fprintf(stderr, "95th percentile per-packet queueing delay: %.0f ms\n", s.queueing_delay_p95_ms);
  std::fprintf(stderr, "95th percentile signal delay: %.0f ms\n", s.signal_delay_p95_ms);
}
}  // namespace

int main(int argc, char** argv) { return run_graph_tool(argc, argv, kInfo, plot_delays); }
