// SPDX-License-Identifier: GPL-3.0-or-later
// mm-monkey: Monkey (the seed "Monkey See, Monkey Do"). "see" reads a packet capture made next to
// a server and writes, per TCP connection, what its network, client and server did; "do" replays
// such a workload through a path per client against the server emulator ("serve"). Installed
// setuid root for "do" (an isolated shell, as mm-replay); "see" and "serve" give root's rights up
// for good before anything else.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "monkey/monkey_do.hh"
#include "monkey/monkey_tool.hh"
#include "monkey/server_under_test.hh"
#include "shell/packet_shell.hh"
#include "util/args.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
const char* kUsage =
    "Usage: mm-monkey see [--force] CAPTURE -o WORKLOAD\n"
    "       mm-monkey do [--force] [--port PORT] [--seed N] WORKLOAD -o RESULTS\n"
    "       mm-monkey do [OPTION]... WORKLOAD -o RESULTS --server PORT -- SERVER-COMMAND...\n"
    "       mm-monkey plot WORKLOAD [RESULTS] -o DIR [--svg]\n";
const char* kHelp =
    "Monkey (\"Monkey See, Monkey Do\", USENIX 2004) on mahimahi's parts.\n"
    "\n"
    "  see CAPTURE -o WORKLOAD\n"
    "                    reads CAPTURE (pcap or pcapng, as tcpdump -w or Wireshark saves it;\n"
    "                    Ethernet, Linux cooked or raw IP; IPv4 and IPv6), taken next to a server,\n"
    "                    as a stream (any size), and writes WORKLOAD (- for standard output): per\n"
    "                    TCP connection its round-trip time, bottleneck bandwidth, loss towards the\n"
    "                    client, MSS, window scaling, SACK, timestamps, ECN, the client's ACKs per\n"
    "                    segment and window, and its exchanges (requests and responses by bursts;\n"
    "                    HTTP/1.x marked): sizes, the server's delay, the response time. A\n"
    "                    connection that cannot be judged in part is kept, flagged with why.\n"
    "                    A summary goes to standard error. man mm-monkey describes the file.\n"
    "     --output, -o WORKLOAD   where to write (required)\n"
    "     --force, -f    overwrite WORKLOAD if it exists\n"
    "\n"
    "  do WORKLOAD -o RESULTS\n"
    "                    replays WORKLOAD: every connection at its recorded start, from its client's\n"
    "                    own address through its client's own path (mm-paths: half the RTT each way,\n"
    "                    the bandwidth, the loss toward the client), its requests at their recorded\n"
    "                    think times and sizes, against the server emulator, which answers each after\n"
    "                    the recorded server delay with the recorded size. Writes RESULTS (CSV): per\n"
    "                    exchange the traced and the replayed response time (at the server: first\n"
    "                    request byte to last response byte) and their relative error; a summary goes\n"
    "                    to standard error. At most 1024 clients (addresses) per replay.\n"
    "     --output, -o RESULTS   where to write (required)\n"
    "     --force, -f    overwrite RESULTS if it exists\n"
    "     --port PORT    the server emulator's port (default 8000)\n"
    "     --server PORT -- SERVER-COMMAND...\n"
    "                    replay against a real server instead: SERVER-COMMAND (e.g. nginx -c\n"
    "                    $PWD/nginx.conf, in the foreground) runs in the paths' namespace as you and\n"
    "                    listens on PORT; each exchange sends its recorded HTTP/1.x request (method,\n"
    "                    target, Host; padded to its recorded size), the server's own response is\n"
    "                    read, and the replay, captured at the server, is read as the trace was.\n"
    "                    Connections without a recorded request line (TLS) are left out.\n"
    "     --seed N       seed the paths' losses, so that a replay repeats them\n"
    "     --verbose      say what the replay is made of\n"
    "     --server-initial-window=SEGMENTS, --server-congestion-control=NAME,\n"
    "     --server-slow-start-after-idle=on|off\n"
    "                    the server emulator's TCP (the kernel's by default): a change to predict\n"
    "\n"
    "  plot WORKLOAD [RESULTS] -o DIR\n"
    "                    draws into DIR (made if missing) workload.png: the CDFs of the connections'\n"
    "                    RTT, bandwidth and loss and of the server delay (Monkey's Figs. 3-5); with\n"
    "                    RESULTS, replay.png: the CDF of the replayed response time's relative error,\n"
    "                    overall and by response size, and the traced and replayed times (Figs. 6-8)\n"
    "     --svg          SVG rather than PNG\n"
    "\n"
    "  serve [--port PORT] [--congestion-control NAME] [--plan FILE]\n"
    "                    the server emulator, as mm-monkey do runs it inside mm-paths: listens on the\n"
    "                    shell's address (device ingress) until a replay stops it\n"
    "     --congestion-control NAME   its connections' congestion control\n"
    "     --plan FILE    how each response is written (in parts, Nagle's algorithm on or off)\n"
    "     --stop-fifo FIFO -- SERVER-COMMAND...\n"
    "                    runs a server under test (mm-monkey do --server) instead, until the replay\n"
    "                    writes its status to FIFO (then SIGTERM, SIGKILL 5 s later), and exits with it\n"
    "\n"
    "  --help, --version\n";

int run(int argc, char** argv) {
  std::vector<std::string> words;
  std::string output, congestion_control, plan, stop_fifo;
  size_t before_dashes = SIZE_MAX;  // words before "--" (after it: a command's)
  uint16_t port = 8000;
  bool force = false, options_done = false, svg = false;
  for (int i = 1; i < argc; i++) {
    const std::string_view w = argv[i];
    if (options_done || w == "-" || w.empty() || w[0] != '-') {
      words.emplace_back(w);
    } else if (w == "--") {
      options_done = true;
      before_dashes = words.size();
    } else if (answer_help_or_version(w, "mm-monkey", kUsage, kHelp)) {
      return 0;
    } else if (w == "-o" || w == "--output") {
      if (i + 1 >= argc) throw UsageError(std::string(w) + " needs a WORKLOAD file (- for standard output)");
      output = argv[++i];
    } else if (w.starts_with("--output=")) {
      output = std::string(w.substr(9));
    } else if (w == "--force" || w == "-f") {
      force = true;
    } else if (w == "--svg") {
      svg = true;
    } else if (w == "--port" || w.starts_with("--port=")) {
      const std::string_view v = w == "--port" ? (i + 1 < argc ? std::string_view(argv[++i]) : "") : w.substr(7);
      const uint64_t p = parse_unsigned(v, "--port");
      if (p < 1 || p > 65535) throw UsageError("--port is 1 to 65535");
      port = static_cast<uint16_t>(p);
    } else if (w == "--plan" || w.starts_with("--plan=")) {
      plan = w == "--plan" ? (i + 1 < argc ? argv[++i] : "") : std::string(w.substr(7));
      if (plan.empty()) throw UsageError("--plan needs a file (mm-monkey do writes it)");
    } else if (w == "--stop-fifo" || w.starts_with("--stop-fifo=")) {
      stop_fifo = w == "--stop-fifo" ? (i + 1 < argc ? argv[++i] : "") : std::string(w.substr(12));
      if (stop_fifo.empty()) throw UsageError("--stop-fifo needs a FIFO (mm-monkey do makes it)");
    } else if (w == "--congestion-control" || w.starts_with("--congestion-control=")) {
      congestion_control = w == "--congestion-control" ? (i + 1 < argc ? argv[++i] : "") : std::string(w.substr(21));
      if (congestion_control.empty() || congestion_control.size() > 15)
        throw UsageError("--congestion-control needs the name of one of the kernel's (cubic, reno, bbr)");
    } else {
      throw UsageError("unknown option \"" + std::string(w) + "\"");
    }
  }
  if (words.empty()) throw UsageError("missing command (see, do, plot, serve)");
  const std::string command = words[0];
  words.erase(words.begin());
  if (command == "see") {
    if (words.size() != 1) throw UsageError("see takes one CAPTURE file");
    if (output.empty()) throw UsageError("see needs -o WORKLOAD (- for standard output)");
    return monkey_see_command(words[0], output, force);
  }
  if (command == "plot") {
    if (words.empty() || words.size() > 2) throw UsageError("plot takes a WORKLOAD and, if you have them, its RESULTS");
    if (output.empty() || output == "-") throw UsageError("plot needs -o DIR, the directory for the images");
    return monkey_plot_command(words[0], words.size() == 2 ? words[1] : "", output, svg);
  }
  if (command == "serve") {
    if (!stop_fifo.empty()) {
      if (before_dashes != 1 || words.empty())
        throw UsageError("serve --stop-fifo FIFO takes the server's command after --, and nothing before");
      return run_server_under_test(stop_fifo, words);
    }
    if (!words.empty()) throw UsageError("serve takes no file (a server under test comes with --stop-fifo)");
    return monkey_serve_command(port, congestion_control, plan);
  }
  throw UsageError("unknown command \"" + printable(command, 100) + "\" (see, do, plot, serve)");
}
const ProgramInfo kDoInfo{"mm-monkey do", "WORKLOAD -o RESULTS [OPTION]...", kHelp};
}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "do") {
    return run_packet_shell(argc - 1, argv + 1, kDoInfo,
                            [](int ac, char** av) { return monkey_do_shell(kDoInfo, ac, av); });
  }
  // see and serve need no privilege: installed setuid (for do), they give it up for good here.
  if (::setresgid(::getgid(), ::getgid(), ::getgid()) != 0 || ::setresuid(::getuid(), ::getuid(), ::getuid()) != 0 ||
      (::getuid() != 0 && (::setresuid(0, 0, 0) == 0 || ::geteuid() == 0))) {
    std::cerr << "mm-monkey: cannot give up root's rights" << std::endl;
    return 1;
  }
  return run_tool("mm-monkey", kUsage, [&] { return run(argc, argv); });
}
