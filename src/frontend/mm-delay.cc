// SPDX-License-Identifier: GPL-3.0-or-later
// mm-delay DELAY-MS [--] [COMMAND...]: a fixed one-way delay in each direction.
#include <optional>

#include "packet/queues.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"

namespace {
const ProgramInfo kInfo{"mm-delay", "DELAY-MS [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace whose packets are\n"
                        "delayed by DELAY-MS milliseconds in each direction (so the round trip grows by twice\n"
                        "DELAY-MS). DELAY-MS may be fractional (12.5) and 0.\n"
                        "\n"
                        "Options:\n" +
                            std::string(kHelpAndVersionLines) +
                            "\n"
                            "MAHIMAHI_BASE is set to the address by which the machine outside all shells is reached.\n"
                            "Shells nest: mm-delay 20 mm-loss uplink 0.01 -- ping 192.0.2.1\n"};
}

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<double> delay_ms;
    std::string typed;
    ShellSpec spec;
    ArgScanner scanner(kInfo, {ArgScanner::verbose_option(spec.verbose)});
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (delay_ms) return false;
      delay_ms = parse_nonnegative(word, "DELAY-MS");
      typed = word;
      return true;
    });
    if (!delay_ms) throw UsageError("missing DELAY-MS");
    spec.device_kind = "delay";
    spec.tag = "[delay " + typed + " ms] ";
    const Nanos delay = ms_to_nanos(*delay_ms);
    spec.ferry = [delay](const FerryEndpoints& tuns, const std::function<void()>& ready) {
      DelayQueue uplink(delay), downlink(delay);
      return run_ferry_pair(tuns, uplink, downlink, ready);
    };
    return spec;
  });
}
