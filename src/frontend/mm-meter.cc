// SPDX-License-Identifier: GPL-3.0-or-later
// mm-meter [OPTION]... [--] [COMMAND...]: a pass-through shell (no delay, no loss, no queue)
// that graphs the traffic crossing it, live in X windows or into image files.
#include "graphing/local_meters.hh"
#include "packet/queues.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"

namespace {
const ProgramInfo kInfo{"mm-meter", "[OPTION]... [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace whose packets cross\n"
                        "unchanged (no delay, no loss, no queue), and graphs the traffic in each direction, in\n"
                        "Mbit/s over a scrolling time axis, in an X window per direction. Put it around or inside\n"
                        "other shells to watch what crosses there: mm-delay 50 mm-meter -- iperf3 -c HOST\n"
                        "\n"
                        "Options (before COMMAND; use -- if COMMAND could be taken for one):\n"
                        "  --meter-uplink, --meter-downlink   graph only that direction (default: both)\n"
                        "  --meter-all                        both directions\n"
                        "  --meter-output=FILE.png|FILE.svg|DIR\n"
                        "        no window: draw the graphs (of the whole run) into FILE, one under the other, or one\n"
                        "        PNG per graph into DIR, when the shell ends; works without a display (SSH, CI)\n"
                        "  --meter-snapshot-interval=S  with --meter-output, also every S seconds while it runs\n"
                        "  --meter-stats  print the frames drawn per second and their CPU time when the shell ends\n" +
                            std::string(kHelpAndVersionLines)};
}

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    MeterOptions meters;
    ShellSpec spec;
    std::vector<ArgScanner::Option> options{ArgScanner::verbose_option(spec.verbose),
                                            ArgScanner::tcp_ecn_option(spec.tcp_ecn)};
    meters.add_options(options, false);
    ArgScanner scanner(kInfo, std::move(options));
    spec.command = scanner.scan(ac, av, [](std::string_view) { return false; });
    spec.device_kind = ShellKind::Meter;
    spec.tag = "[meter] ";
    meters.finish(spec, true);
    spec.ferry = [meters](const FerryEndpoints& endpoints, const std::function<void()>& ready) {
      // Its own start: a pass-through follows no trace.
      const Nanos origin = monotonic_now();
      const LogOptions no_logs;
      ShellWatch watch("mm-meter", no_logs, endpoints, std::make_unique<LocalMeters>("mm-meter", meters, origin, true),
                       origin);
      MeterQueue uplink(watch.direction(0, meters.uplink, "", "", "[meter] uplink"));
      MeterQueue downlink(watch.direction(1, meters.downlink, "", "", "[meter] downlink"));
      return watch.run(uplink, downlink, ready);
    };
    return spec;
  });
}
