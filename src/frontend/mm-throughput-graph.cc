// mm-throughput-graph MS-PER-BIN [LOG] [-o FILE.svg|FILE.png]
#include <cmath>
#include <cstdio>

#include "graphing/chart.hh"
#include "graphing/graph_tool.hh"
#include "graphing/link_log_reader.hh"
#include "util/args.hh"
#include "util/exception.hh"

namespace {
const ProgramInfo kInfo{"mm-throughput-graph", "MS-PER-BIN [LOG] [-o FILE.svg|FILE.png]",
                        "Plots an mm-link log (--uplink-log / --downlink-log; standard input if LOG is omitted or -):\n"
                        "the link's capacity, the traffic arriving (ingress) and leaving (egress), in bins of\n"
                        "MS-PER-BIN milliseconds. Writes FILE as SVG or PNG (by its name), or SVG to standard\n"
                        "output. Prints to standard error the average capacity, the average throughput and\n"
                        "utilisation, the 95th percentile per-packet queueing delay and signal delay, and drops.\n"};

void plot_throughput(const GraphCommand& command) {
  if (command.operands.empty() || command.operands.size() > 2)
    throw UsageError(command.operands.empty() ? "missing MS-PER-BIN" : "too many arguments");
  const double bin_ms = parse_nonnegative(command.operands[0], "MS-PER-BIN");
  if (bin_ms <= 0) throw UsageError("MS-PER-BIN must be greater than 0");
  const LinkLog log = LinkLog::read(command.operands.size() == 2 ? command.operands[1] : "-");
  const LinkSummary s = summarize(log);

  // At most kMaxBins bins (a point each in the chart; the log spans at most 24 hours).
  constexpr double kMaxBins = 1e6;
  const double bin_count = std::floor((log.last - log.first) / bin_ms) + 1;
  if (bin_count > kMaxBins) {
    char least[64];
    std::snprintf(least, sizeof least, "%g", std::ceil((log.last - log.first) / (kMaxBins - 1)));
    throw UsageError("MS-PER-BIN " + command.operands[0] + " makes more than 1000000 bins of this log's " +
                     std::to_string(static_cast<uint64_t>(log.last - log.first)) + " ms; use " + least + " or more");
  }
  const size_t bins = static_cast<size_t>(bin_count);
  std::vector<double> capacity(bins), ingress(bins), egress(bins);
  auto bin_of = [&](double t) { return std::min(bins - 1, static_cast<size_t>((t - log.first) / bin_ms)); };
  for (const auto& o : log.opportunities) capacity[bin_of(o.time)] += o.bytes;
  for (const auto& a : log.arrivals) ingress[bin_of(a.time)] += a.bytes;
  for (const auto& d : log.departures) egress[bin_of(d.time)] += d.bytes;
  const double to_mbps = 8 / (bin_ms / 1000) / 1e6;
  double mean_in = 0;
  for (const auto& a : log.arrivals) mean_in += a.bytes;
  mean_in = mean_in * 8 / (s.duration_s) / 1e6;

  Chart chart;
  chart.title = "Throughput";
  chart.x_label = "time (s)";
  chart.y_label = "throughput (Mbit/s)";
  char label[128];
  std::snprintf(label, sizeof label, "Capacity (mean %.2f Mbit/s)", s.capacity_mbps);
  Series cap{label, Series::Style::Area, {0.85, 0.15, 0.15}, {}};
  std::snprintf(label, sizeof label, "Traffic ingress (mean %.2f Mbit/s)", mean_in);
  Series in{label, Series::Style::Line, {0.15, 0.35, 0.85}, {}};
  std::snprintf(label, sizeof label, "Traffic egress (mean %.2f Mbit/s)", s.throughput_mbps);
  Series out{label, Series::Style::Line, {0.8, 0.1, 0.1}, {}};
  for (size_t b = 0; b < bins; b++) {
    const double t = (log.first + (static_cast<double>(b) + 0.5) * bin_ms) / 1000;
    cap.points.emplace_back(t, capacity[b] * to_mbps);
    in.points.emplace_back(t, ingress[b] * to_mbps);
    out.points.emplace_back(t, egress[b] * to_mbps);
  }
  chart.series = {cap, in, out};
  render_chart(chart, command.output);

  std::fprintf(stderr, "Average capacity: %.2f Mbits/s\n", s.capacity_mbps);
  std::fprintf(stderr, "Average throughput: %.2f Mbits/s (%.1f%% utilization)\n", s.throughput_mbps,
               s.utilization_percent);
  std::fprintf(stderr, "95th percentile per-packet queueing delay: %.0f ms\n", s.queueing_delay_p95_ms);
  std::fprintf(stderr, "95th percentile signal delay: %.0f ms\n", s.signal_delay_p95_ms);
  std::fprintf(stderr, "Dropped packets: %lu\n", static_cast<unsigned long>(s.dropped_packets));
}
}  // namespace

int main(int argc, char** argv) { return run_graph_tool(argc, argv, kInfo, plot_throughput); }
