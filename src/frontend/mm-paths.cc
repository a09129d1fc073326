// SPDX-License-Identifier: GPL-3.0-or-later
// mm-paths PATHS-FILE [--path="PEER SETTING..."]... [--] [COMMAND...]: each peer outside the
// shell on a path of its own (delay, rate, loss, queue each way), in one ferry.
#include <string>

#include "shell/packet_shell.hh"
#include "shell/paths_shell.hh"

namespace {
const ProgramInfo kInfo{
    "mm-paths", "PATHS-FILE [OPTION]... [--] [COMMAND...]",
    "Runs COMMAND (default: your login shell) in a new network namespace where each peer outside\n"
    "(an address, a prefix, or either with a port) is on a path of its own: its own one-way delay,\n"
    "rate, loss and queue in each direction. Packets to and from any other address pass as through\n"
    "mm-delay 0. One shell and one ferry carry thousands of paths: a server inside and many clients\n"
    "outside, each client at its own address on its own path (mm-monkey do's replay), or a client\n"
    "inside and each server it reaches at its own distance and speed.\n"
    "\n"
    "PATHS-FILE has one path per line (# comments):\n"
    "  PEER [delay=MS[,MS]] [rate=RATE[,RATE]] [loss=P[,P]] [queue=N[,N]]\n"
    "  PEER      ADDRESS, ADDRESS/LEN, or either with :PORT (198.51.100.7, 10.1.0.0/16:443)\n"
    "  delay=    one-way delay in milliseconds (fractional, 0 to 3600000); default 0\n"
    "  rate=     the path's rate, e.g. 10Mbit/s, 500kbit/s, 1Gbit/s; default none (unlimited)\n"
    "  loss=     the probability that a packet is lost (0 to 1); default 0\n"
    "  queue=    packets (of 1500 bytes) that may wait for the rate before the next is dropped;\n"
    "            default 1000\n"
    "  Two values (A,B) are toward the peer (packets leaving the shell) and from it (entering);\n"
    "  one value is both. A packet takes the most specific path: an address with the port, the\n"
    "  address, then prefixes from the longest.\n"
    "\n"
    "Options:\n"
    "  --capture=FILE  write a capture of COMMAND's traffic as COMMAND's side sees it (a pcap:\n"
    "              what tcpdump in the shell would record; each packet's first 256 bytes): the\n"
    "              packets it sent when it sent them, those it received when they reached it\n"
    "  --path=\"PEER SETTING...\"   one more path, as a line of PATHS-FILE (then PATHS-FILE may be\n"
    "              left out); it replaces the file's line for the same PEER; repeatable\n"
    "  --seed N    seed the losses, so that a run repeats\n"
    "  --tcp-congestion-control=NAME, --tcp-initial-window=SEGMENTS,\n"
    "  --tcp-slow-start-after-idle=on|off\n"
    "              the TCP of COMMAND's namespace (a server's, inside): its congestion control (one\n"
    "              the kernel allows in a namespace), the initial congestion window of its\n"
    "              connections out (the kernel's: 10), slow start after an idle period\n" +
        std::string(kHelpAndVersionLines) +
        "\n"
        "A path's packets keep their order and leave one after another at its rate; one path's\n"
        "backlog never holds up another's. With --verbose, each path that carried packets says at\n"
        "the end how many it carried, lost and dropped in each direction.\n"
        "\n"
        "MAHIMAHI_BASE is set to the address by which the machine outside all shells is reached.\n"
        "Shells nest: mm-paths clients.paths mm-link 12Mbps.trace 12Mbps.trace -- nginx\n"};
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) { return paths_shell(kInfo, ac, av); });
}
