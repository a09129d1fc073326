// SPDX-License-Identifier: GPL-3.0-or-later
// mm-link UPLINK-TRACE DOWNLINK-TRACE [OPTION]... [--] [COMMAND...]: runs COMMAND behind a link
// whose delivery opportunities come from a trace in each direction, with a queue in front of each.
#include <fcntl.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include "graphing/local_meters.hh"
#include "packet/link_log.hh"
#include "packet/link_queue.hh"
#include "packet/queue_factory.hh"
#include "packet/trace.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"
#include "util/random.hh"
#include "util/text.hh"

namespace {
const ProgramInfo kInfo{
    "mm-link", "UPLINK-TRACE DOWNLINK-TRACE [OPTION]... [--] [COMMAND...]",
    "Runs COMMAND (default: your login shell) behind a link whose delivery opportunities come\n"
    "from a trace in each direction. A trace file holds one integer per line, a time in ms;\n"
    "each line is one opportunity to deliver 1500 bytes of IP packets, and the trace repeats\n"
    "with the last time as its period (a file with the single line 1 is 12 Mbit/s). Instead\n"
    "of a file, rate:RATE gives a constant rate, e.g. rate:12Mbit/s, rate:500kbit/s, rate:1Gbit/s.\n"
    "A trace named without a '/' is looked for in the current directory, then in the\n"
    "directories of MAHIMAHI_TRACE_PATH (colon-separated), then among the bundled traces in\n"
    "  " MAHIMAHI_TRACE_DIR
    "\n"
    "(constant-1Mbps ... constant-1000Mbps): mm-link constant-12Mbps constant-12Mbps\n"
    "A rate:RATE link sends each packet in its own size's time at RATE (84 bytes at 1.5 Mbit/s:\n"
    "0.45 ms), as netem's rate and tbf do; a trace file's link sends in its opportunities.\n"
    "\n"
    "Options (before COMMAND; use -- if COMMAND could be taken for one):\n"
    "  -u FILE, --uplink-log=FILE, -d FILE, --downlink-log=FILE\n"
    "        log every opportunity, arrival, departure and drop of that direction to FILE\n"
    "  --uplink-queue=TYPE, --downlink-queue=TYPE\n"
    "        infinite (default), droptail, drophead, codel, pie, fq_codel, dualpi2\n"
    "  --uplink-queue-args=ARGS, --downlink-queue-args=ARGS\n"
    "        NAME=NUMBER,... with NAME among bytes, packets (limits), target, interval (codel,\n"
    "        fq_codel), qdelay_ref, max_burst (pie), ecn (codel, pie, fq_codel: 1 marks ECN-capable\n"
    "        packets CE instead of dropping them, 0 drops only), ce_threshold (codel, fq_codel),\n"
    "        flows (fq_codel), target, tupdate, alpha, beta, step_thresh, min_qlen_step,\n"
    "        coupling_factor, c_protection, drop_overload (dualpi2); times in ms.\n"
    "        droptail and drophead need a limit, e.g. \"packets=100\" or \"bytes=30000\".\n"
    "        Defaults: codel packets=1000,target=5,interval=100,ecn=1 (RFC 8289);\n"
    "        pie packets=1000,qdelay_ref=15,max_burst=150,ecn=1 (RFC 8033);\n"
    "        fq_codel packets=10240,target=5,interval=100,ecn=1,flows=1024 (as Linux's);\n"
    "        dualpi2 packets=10000,target=15,tupdate=16,alpha=0.16,beta=3.2,step_thresh=1,\n"
    "        min_qlen_step=0,coupling_factor=2,c_protection=10,drop_overload=1 (RFC 9332, Linux's);\n"
    "        1000 packets is the limit of Linux's codel and pie: the AQM, not the limit, drops\n"
    "  --uplink-overhead=SPEC, --downlink-overhead=SPEC\n"
    "        the link-layer framing each packet costs on the link: none (default: 1500 bytes of IP\n"
    "        packets per opportunity, as the original), ethernet (38 bytes a packet, 84 at least),\n"
    "        atm (AAL5's 8 bytes, in 48-byte cells of 53 bytes), or bytes=N,min=N,cell=N,cellovh=N\n"
    "        (after a profile's name, or alone; e.g. atm,bytes=40 for PPPoE over LLC)\n"
    "  --rate-opportunities\n"
    "        rate:RATE links send in 1500-byte opportunities, one every 12000/RATE seconds, as a\n"
    "        constant trace does (the original's accounting: a small packet waits for the next one)\n"
    "  --once      end the shell (and COMMAND) when both traces have been played once\n"
    "              (a warning at the start if a trace lasts less than a second);\n"
    "              exit status 124 if the traces ran out before COMMAND ended\n"
    "  --seed N    seed PIE's random drops\n"
    "  --meter-uplink, --meter-downlink\n"
    "        a live graph of that direction in an X window: the link's capacity (shaded), the\n"
    "        traffic arriving at the queue and leaving the link, in Mbit/s\n"
    "  --meter-uplink-delay, --meter-downlink-delay\n"
    "        a live graph of each packet's delay in the queue and on the link, and the signal delay\n"
    "  --meter-all  all four; closing a window does not end the shell\n"
    "  --meter-output=FILE.png|FILE.svg|DIR\n"
    "        no window: draw the graphs (of the whole run) into FILE, one under the other, or one\n"
    "        PNG per graph into DIR, when the shell ends (without a --meter-* graph: both\n"
    "        throughput graphs); works without a display (SSH, CI)\n"
    "  --meter-snapshot-interval=S  with --meter-output, also every S seconds while it runs\n"
    "  --meter-stats  print the frames drawn per second and their CPU time when the shell ends\n"
    "  --tcp-congestion-control=NAME, --tcp-initial-window=SEGMENTS,\n"
    "  --tcp-slow-start-after-idle=on|off\n"
    "              the TCP of COMMAND's namespace: its congestion control (one the kernel\n"
    "              allows in a namespace, e.g. reno or bbr), the initial congestion window of its\n"
    "              connections out (the kernel's: 10), slow start after an idle period\n" MM_TCP_ECN_HELP_LINE
        MM_VERBOSE_HELP_LINE "  --help, --version\n"};

struct Direction {
  Direction(const char* n, const char* o) : name(n), option(o) {}
  const char* name;    // Uplink / Downlink
  const char* option;  // --uplink-queue / --downlink-queue
  std::string trace;
  std::string queue = "infinite";
  QueueArgs args;
  LinkOverhead overhead;  // --uplink-overhead / --downlink-overhead
};

// What the command line chose, handed to the ferry process.
struct LinkSettings {
  Direction up{"Uplink", "--uplink-queue"};
  Direction down{"Downlink", "--downlink-queue"};
  bool once = false;
  bool rate_opportunities = false;  // --rate-opportunities
  uint64_t base_seed = 0;
  MeterOptions meters;
  LogOptions logs;
  bool verbose = false;
  std::optional<int> tcp_ecn;
  ServerTcpSettings command_tcp;  // --tcp-congestion-control and the like: the command's TCP
};

// Reads mm-link's own arguments into `settings` and returns the user's command. Bad queues and
// rates are usage errors here, before any set-up.
std::vector<std::string> scan_link_arguments(int ac, char** av, LinkSettings& settings) {
  Direction& up = settings.up;
  Direction& down = settings.down;
  std::optional<std::string> up_args, down_args;
  std::optional<uint64_t> seed;
  std::vector<ArgScanner::Option> options{
      {"uplink-queue", true, [&](std::string_view v) { up.queue = v; }},
      {"downlink-queue", true, [&](std::string_view v) { down.queue = v; }},
      {"uplink-queue-args", true, [&](std::string_view v) { up_args = v; }},
      {"downlink-queue-args", true, [&](std::string_view v) { down_args = v; }},
      {"uplink-overhead", true, [&](std::string_view v) { up.overhead = LinkOverhead::parse(v, "--uplink-overhead"); }},
      {"downlink-overhead", true,
       [&](std::string_view v) { down.overhead = LinkOverhead::parse(v, "--downlink-overhead"); }},
      {"once", false, [&](std::string_view) { settings.once = true; }},
      {"rate-opportunities", false, [&](std::string_view) { settings.rate_opportunities = true; }},
      ArgScanner::seed_option(seed),
      ArgScanner::verbose_option(settings.verbose),
      ArgScanner::tcp_ecn_option(settings.tcp_ecn)};
  for (ArgScanner::Option& o : tcp_settings_options(settings.command_tcp, "tcp-")) options.push_back(std::move(o));
  settings.meters.add_options(options, true);
  settings.logs.add_options(options);
  ArgScanner scanner(kInfo, std::move(options));
  int traces = 0;
  std::vector<std::string> command = scanner.scan(ac, av, [&](std::string_view word) {
    if (traces == 2) return false;
    if (word.empty()) throw UsageError("empty trace name");
    if (Trace::is_rate(word)) Trace::parse_rate(word.substr(5));  // a bad rate is a usage error
    (traces++ == 0 ? up : down).trace = word;
    return true;
  });
  if (traces < 2) throw UsageError(traces == 0 ? "missing UPLINK-TRACE and DOWNLINK-TRACE" : "missing DOWNLINK-TRACE");
  settings.base_seed = seed ? *seed : Random::fresh_seed();
  for (auto* d : {&up, &down}) {
    const auto& text = d == &up ? up_args : down_args;
    d->args = QueueArgs::parse(text.value_or(""), d->option);
    make_queue_discipline(d->queue, d->args, d->option, 0);  // reject bad queues before any set-up
  }
  settings.logs.set_command_line(ac, av);
  return command;
}

// The prompt's tag, e.g. "[link 12Mbit/s up 12Mbit/s down] ", from the arguments alone (it is
// made before the privilege drop: no trace is read).
std::string link_tag(const LinkSettings& settings) {
  return "[link " + Trace::label(settings.up.trace) + " up " + Trace::label(settings.down.trace) + " down] ";
}

// The ferry process, as the user: opens the traces and logs with the user's rights and runs
// both directions, with their live graphs if asked.
int run_link_ferry(const LinkSettings& settings, const FerryEndpoints& endpoints, const std::function<void()>& ready) {
  const Direction& up = settings.up;
  const Direction& down = settings.down;
  const Trace up_trace = Trace::from_argument(up.trace);
  const Trace down_trace = Trace::from_argument(down.trace);
  if (settings.once) {
    if (const std::string warning = short_once_warning(up_trace, down_trace); !warning.empty())
      std::cerr << "mm-link: warning: " << warning << "\n";
  }
  const Nanos origin = trace_start(endpoints);
  std::unique_ptr<EventViewer> meters;
  if (settings.meters.any()) meters = std::make_unique<LocalMeters>("mm-link", settings.meters, origin);
  ShellWatch watch("mm-link", settings.logs, endpoints, std::move(meters), origin);
  uint64_t seeds = settings.base_seed;
  auto make = [&](const Direction& d, const Trace& trace, int index) {
    auto queue = make_queue_discipline(d.queue, d.args, d.option, Random::splitmix(seeds));
    const std::string queue_line =
        "queue: " + queue->description() + (d.overhead.none() ? "" : ", overhead: " + d.overhead.describe());
    LinkEventRing* ring = watch.direction(index, settings.meters.metered(index), trace.name(), queue_line,
                                          link_tag(settings) + ascii_lowercase(d.name), &trace, settings.once);
    return LinkQueue(trace, watch.origin(), settings.once, std::move(queue), ring, d.overhead,
                     settings.rate_opportunities ? LinkTiming::Opportunities : LinkTiming::Serialised);
  };
  LinkQueue uplink = make(up, up_trace, 0);
  LinkQueue downlink = make(down, down_trace, 1);
  return watch.run(uplink, downlink, ready);
}
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    LinkSettings settings;
    ShellSpec spec;
    spec.command = scan_link_arguments(ac, av, settings);
    spec.verbose = settings.verbose;
    spec.tcp_ecn = settings.tcp_ecn;
    spec.command_tcp = settings.command_tcp;
    spec.device_kind = ShellKind::Link;
    spec.follows_trace = true;
    spec.tag = link_tag(settings);
    settings.meters.finish(spec, false);
    spec.ferry = [settings](const FerryEndpoints& endpoints, const std::function<void()>& ready) {
      return run_link_ferry(settings, endpoints, ready);
    };
    return spec;
  });
}
