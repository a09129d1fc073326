// SPDX-License-Identifier: GPL-3.0-or-later
// mm-delay DELAY-MS [--destination=...]... [--destinations=FILE] [--] [COMMAND...]: a fixed
// one-way delay in each direction, or one per destination; or a delay that varies over time
// (--delay-trace) with jitter (--jitter).
#include <string>

#include "shell/delay_shell.hh"
#include "shell/packet_shell.hh"

namespace {
const ProgramInfo kInfo{"mm-delay", "DELAY-MS [OPTION]... [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace whose packets are\n"
                        "delayed by DELAY-MS milliseconds in each direction (so the round trip grows by twice\n"
                        "DELAY-MS). DELAY-MS may be fractional (12.5) and 0.\n"
                        "\n"
                        "Options:\n"
                        "  --destination=ADDRESS[/LEN][:PORT]=MS[,DOWN-MS]\n"
                        "              packets to that address, prefix or port (and their answers) get MS\n"
                        "              milliseconds each way instead of DELAY-MS, or MS toward it and DOWN-MS\n"
                        "              back; repeatable\n"
                        "  --destinations=FILE\n"
                        "              the same from a file, one \"ADDRESS[/LEN][:PORT] MS [DOWN-MS]\" per line\n"
                        "              (# comments); mm-recording timings --destinations DIR writes one that puts\n"
                        "              every origin of a recording at its recorded distance\n"
                        "  --delay-trace=FILE, --uplink-delay-trace=FILE, --downlink-delay-trace=FILE\n"
                        "              a delay that varies over time, in both directions or one (DELAY-MS\n"
                        "              then serves the other): \"TIME-MS DELAY-MS\" per line, or one DELAY-MS\n"
                        "              per line with --delay-interval (PR #135's and LeoReplayer's files)\n"
                        "  --delay-interval=MS   the time each line of a one-value trace covers\n"
                        "  --interpolate=step|linear   between a trace's points (default step)\n"
                        "  --once      hold a trace's last delay after its end (default: it repeats)\n"
                        "  --jitter=MS[,normal|uniform|paretonormal]\n"
                        "              add to each packet's delay a random offset of standard deviation MS\n"
                        "              (normal by default); never below 0\n"
                        "  --order=fifo|overtake   fifo (default): no packet leaves before one that\n"
                        "              arrived earlier; overtake: each leaves at its own time (reorders)\n"
                        "  --reorder=P[,GAP]   with probability P a packet jumps ahead of the GAP packets\n"
                        "              before it (default 1: an adjacent swap), if they are still queued\n"
                        "  --duplicate=P       with probability P a packet leaves twice\n"
                        "  --seed N    seed the jitter, reordering and duplication, so that a run repeats\n"
                        "  -u FILE, --uplink-log=FILE, -d FILE, --downlink-log=FILE\n"
                        "              log every arrival and departure (with its delay) of that direction to\n"
                        "              FILE, in mm-link's format (mm-delay-graph and mm-throughput-graph read it)\n"
                        "  --meter-uplink, --meter-downlink, --meter-uplink-delay, --meter-downlink-delay,\n"
                        "  --meter-all, --meter-output=FILE.png|FILE.svg|DIR, --meter-snapshot-interval=S,\n"
                        "  --meter-stats\n"
                        "              live graphs of the traffic in and out and of each packet's delay, as\n"
                        "              mm-link's (see mm-link --help)\n" +
                            std::string(kHelpAndVersionLines) +
                            "\n"
                            "With destinations, the most specific rule applies: an address with the port, the\n"
                            "address, then prefixes from the longest; a packet to anywhere else gets DELAY-MS. The\n"
                            "packets of one connection always keep their order, and a far destination's packets\n"
                            "never hold up a near one's.\n"
                            "\n"
                            "MAHIMAHI_BASE is set to the address by which the machine outside all shells is reached.\n"
                            "Shells nest: mm-delay 20 mm-loss uplink 0.01 -- ping 192.0.2.1\n"};

}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) { return delay_shell(kInfo, ac, av); });
}
