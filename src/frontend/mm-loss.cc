// SPDX-License-Identifier: GPL-3.0-or-later
// mm-loss uplink|downlink MODEL [uplink|downlink MODEL] [--seed N] [--] [COMMAND...]
#include <string>

#include "shell/loss_shell.hh"
#include "shell/packet_shell.hh"

namespace {
const ProgramInfo kInfo{"mm-loss", "uplink|downlink MODEL [uplink|downlink MODEL] [--seed N] [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace where packets are lost\n"
                        "in the given direction as MODEL says. uplink: packets leaving the shell; downlink: packets\n"
                        "entering it. Both directions may be given at once, e.g. mm-loss uplink 0.01 downlink 0.02.\n"
                        "\n"
                        "MODEL (probabilities from 0 to 1, or as percentages: 1%):\n"
                        "  RATE                     each packet lost independently with probability RATE\n"
                        "  gemodel p [r [1-h [1-k]]]\n"
                        "                           bursts, Gilbert-Elliott as netem: lost with 1-k in the Good state\n"
                        "                           and 1-h in Bad, which it enters with p and leaves with r (Bad\n"
                        "                           lasts 1/r packets on average); defaults r = 1-p, 1-h = 1, 1-k = 0\n"
                        "  state p13 [p31 [p32 [p23 [p14]]]]\n"
                        "                           netem's 4-state model (1 gap, 2 burst, 3 lost in a burst, 4 an\n"
                        "                           isolated loss); defaults p31 = 1-p13, p32 = 0, p23 = 1, p14 = 0\n"
                        "  trace FILE               a loss probability that varies over time: \"TIME-MS PROBABILITY\"\n"
                        "                           per line, or one probability per line with --loss-interval\n"
                        "\n"
                        "Options:\n"
                        "  --loss-interval=MS   the time each line of a one-value loss trace covers\n"
                        "  --interpolate=step|linear   between a loss trace's points (default step)\n"
                        "  --once      hold a loss trace's last value after its end (default: it repeats)\n"
                        "  --seed N    seed the random drops, so that a run can be repeated exactly\n"
                        "  -u FILE, --uplink-log=FILE, -d FILE, --downlink-log=FILE\n"
                        "              log every arrival, drop and departure of that direction to FILE, in\n"
                        "              mm-link's format (mm-throughput-graph reads it)\n"
                        "  --meter-uplink, --meter-downlink, --meter-all,\n"
                        "  --meter-output=FILE.png|FILE.svg|DIR, --meter-snapshot-interval=S, --meter-stats\n"
                        "              live graphs of the traffic in and out, as mm-link's (see mm-link --help)\n" +
                            std::string(kHelpAndVersionLines)};

}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) { return loss_shell(kInfo, ac, av); });
}
