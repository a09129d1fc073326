// SPDX-License-Identifier: GPL-3.0-or-later
// mm-monkey: Monkey (the seed "Monkey See, Monkey Do"). "see" reads a packet capture made next to
// a server and writes, per TCP connection, what its network, client and server did; "do" replays
// such a workload through a path per client against the server emulator ("serve"). Installed
// setuid root for "do" (an isolated shell, as mm-replay); "see" and "serve" give root's rights up
// for good before anything else.
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "monkey/capture_reader.hh"
#include "monkey/monkey_do.hh"
#include "monkey/monkey_see.hh"
#include "monkey/monkey_server.hh"
#include "monkey/workload.hh"
#include "util/args.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/statistics.hh"
#include "util/text.hh"

namespace {
const char* kUsage =
    "Usage: mm-monkey see [--force] CAPTURE -o WORKLOAD\n"
    "       mm-monkey do [--force] [--port PORT] [--seed N] WORKLOAD -o RESULTS\n";
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
    "     --seed N       seed the paths' losses, so that a replay repeats them\n"
    "     --verbose      say what the replay is made of\n"
    "     --server-initial-window=SEGMENTS, --server-congestion-control=NAME,\n"
    "     --server-slow-start-after-idle=on|off\n"
    "                    the server emulator's TCP (the kernel's by default): a change to predict\n"
    "\n"
    "  serve [--port PORT] [--congestion-control NAME] [--plan FILE]\n"
    "                    the server emulator, as mm-monkey do runs it inside mm-paths: listens on the\n"
    "                    shell's address (device ingress) until a replay stops it; --plan: how\n"
    "                    each response is written (in parts, Nagle's algorithm on or off)\n"
    "\n"
    "  --help, --version\n";

std::string median_text(std::vector<double> values, double scale, const char* unit) {
  const std::optional<double> m = percentile(std::move(values), 50);
  if (!m) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.3g %s", *m * scale, unit);
  return text;
}

int see(const std::string& capture, const std::string& output, bool force) {
  CaptureReader reader(capture);
  FileDescriptor out;
  if (output == "-") {
    out = FileDescriptor(::dup(1));
  } else {
    out = FileDescriptor(::open(output.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), 0644));
    if (!out.valid() && errno == EEXIST)
      throw UserError(output + " exists: give another WORKLOAD, or --force to overwrite it");
    if (!out.valid()) throw SystemError("creating " + output);
  }
  std::string description = printable(capture, 200) + ", " + reader.link_name() + ", timestamps to " +
                            (reader.resolution() == 1 ? "1 ns" : "1 us");
  write_all(out.get(), workload_header(description));
  std::vector<double> rtts, bandwidths, losses;
  std::map<std::string, uint64_t> flagged;
  uint64_t exchanges = 0;
  MonkeySee see([&](MonkeyConnection&& c) {
    if (c.rtt) rtts.push_back(static_cast<double>(*c.rtt));
    if (c.bandwidth_bps) bandwidths.push_back(*c.bandwidth_bps);
    if (c.loss) losses.push_back(*c.loss);
    for (const std::string& f : c.flags) flagged[f]++;
    exchanges += c.exchanges.size();
    write_all(out.get(), workload_lines(c));
  });
  uint64_t segments = 0, other = 0;
  while (const std::optional<CapturedPacket> packet = reader.next()) {
    const std::optional<TcpSegment> segment = decode_tcp(packet->ip, packet->wire_length);
    if (!segment) {
      other++;
      continue;
    }
    segments++;
    see.segment(packet->time, *segment);
  }
  see.finish();
  std::cerr << "mm-monkey: " << capture << ": " << count_of(reader.frames(), "frame") << ", "
            << count_of(segments, "TCP segment") << " (" << count_of(other + reader.skipped(), "other frame") << "), "
            << count_of(see.reported(), "connection") << ", " << count_of(exchanges, "exchange") << "\n";
  if (!reader.ended_early().empty())
    std::cerr << "mm-monkey: warning: the capture ends inside a packet (" << reader.ended_early()
              << "): read up to there\n";
  std::cerr << "mm-monkey: medians: RTT " << median_text(rtts, 1e-6, "ms") << ", bandwidth "
            << median_text(bandwidths, 1e-6, "Mbit/s") << ", loss " << median_text(losses, 100, "%") << "\n";
  if (!flagged.empty()) {
    std::string list;
    for (const auto& [f, n] : flagged) list += (list.empty() ? "" : ", ") + f + " " + std::to_string(n);
    std::cerr << "mm-monkey: flagged connections: " << list << "\n";
  }
  if (output != "-") std::cerr << "mm-monkey: wrote " << output << "\n";
  return 0;
}

// The server emulator inside the shell: on the address of its device "ingress".
int serve(uint16_t port, const std::string& congestion_control, const std::string& plan_file) {
  ifaddrs* list = nullptr;
  std::optional<Ipv4> address;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && std::string_view(a->ifa_name) == "ingress")
        address = Ipv4::from_in_addr(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr);
    ::freeifaddrs(list);
  }
  if (!address)
    throw UserError(
        "serve runs inside a shell (it listens on the address of the device ingress); "
        "mm-monkey do starts it so");
  MonkeyServerOptions options{*address, port, 100'000, congestion_control, {}};
  if (!plan_file.empty())
    options.plan =
        parse_server_plan(read_user_file(plan_file, "server plan", uint64_t{1} << 30, "give mm-monkey do's plan"),
                          user_file_name(plan_file));
  return run_monkey_server(options, [] {});
}

int run(int argc, char** argv) {
  std::vector<std::string> words;
  std::string output, congestion_control, plan;
  uint16_t port = 8000;
  bool force = false, options_done = false;
  for (int i = 1; i < argc; i++) {
    const std::string_view w = argv[i];
    if (options_done || w == "-" || w.empty() || w[0] != '-') {
      words.emplace_back(w);
    } else if (w == "--") {
      options_done = true;
    } else if (answer_help_or_version(w, "mm-monkey", kUsage, kHelp)) {
      return 0;
    } else if (w == "-o" || w == "--output") {
      if (i + 1 >= argc) throw UsageError(std::string(w) + " needs a WORKLOAD file (- for standard output)");
      output = argv[++i];
    } else if (w.starts_with("--output=")) {
      output = std::string(w.substr(9));
    } else if (w == "--force" || w == "-f") {
      force = true;
    } else if (w == "--port" || w.starts_with("--port=")) {
      const std::string_view v = w == "--port" ? (i + 1 < argc ? std::string_view(argv[++i]) : "") : w.substr(7);
      const uint64_t p = parse_unsigned(v, "--port");
      if (p < 1 || p > 65535) throw UsageError("--port is 1 to 65535");
      port = static_cast<uint16_t>(p);
    } else if (w == "--plan" || w.starts_with("--plan=")) {
      plan = w == "--plan" ? (i + 1 < argc ? argv[++i] : "") : std::string(w.substr(7));
      if (plan.empty()) throw UsageError("--plan needs a file (mm-monkey do writes it)");
    } else if (w == "--congestion-control" || w.starts_with("--congestion-control=")) {
      congestion_control = w == "--congestion-control" ? (i + 1 < argc ? argv[++i] : "") : std::string(w.substr(21));
      if (congestion_control.empty() || congestion_control.size() > 15)
        throw UsageError("--congestion-control needs the name of one of the kernel's (cubic, reno, bbr)");
    } else {
      throw UsageError("unknown option \"" + std::string(w) + "\"");
    }
  }
  if (words.empty()) throw UsageError("missing command (see, do, serve)");
  const std::string command = words[0];
  words.erase(words.begin());
  if (command == "see") {
    if (words.size() != 1) throw UsageError("see takes one CAPTURE file");
    if (output.empty()) throw UsageError("see needs -o WORKLOAD (- for standard output)");
    return see(words[0], output, force);
  }
  if (command == "serve") {
    if (!words.empty()) throw UsageError("serve takes no file");
    return serve(port, congestion_control, plan);
  }
  throw UsageError("unknown command \"" + printable(command, 100) + "\" (see, do, serve)");
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
