// SPDX-License-Identifier: GPL-3.0-or-later
// mm-replay DIR [OPTION]... [--] [COMMAND...]: runs COMMAND where every server of a recording
// exists at its recorded IP and port and answers from the recording, with no outside network.
#include <optional>
#include <string>

#include "replay/replay_shell.hh"
#include "shell/packet_shell.hh"
#include "shell/privileged.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
const ProgramInfo kInfo{
    "mm-replay", "DIR [OPTION]... [--] [COMMAND...]",
    "Runs COMMAND (default: your login shell) in a new network namespace with no way out, where\n"
    "every server of the recording in DIR (made by mm-record, or by the original Mahimahi)\n"
    "exists at its recorded IP address and port and answers from the recording: a virtual\n"
    "server of Apache httpd per recorded IP:port (HTTPS where recorded, with certificates from\n"
    "your local CA, see mm-ca), one matcher behind them all, and a DNS server that knows every\n"
    "recorded name (any other name fails at once).\n"
    "\n"
    "A request is answered with the recorded response whose scheme, Host (with its port), method\n"
    "and path match; among those, the one whose query string has the longest common substring\n"
    "with the request's; the User-Agent must match too unless --ignore-user-agent. Repeated\n"
    "identical requests get the recorded responses in order (see --repeats). Anything else\n"
    "gets a 404 whose body names the nearest recorded requests (and a line on standard error\n"
    "says the same), or with --unmatched=close no response at all.\n"
    "\n"
    "Options:\n"
    "  --http2               offer HTTP/2 on every HTTPS server (also done where the recording\n"
    "                        says the origin spoke h2)\n"
    "  --http3               every HTTPS server also answers HTTP/3 (QUIC v1) on UDP at the same\n"
    "                        address and port, with the same certificate and responses; a\n"
    "                        recorded Alt-Svc advertising h3 is kept, naming the port served\n"
    "                        (without --http3 every Alt-Svc is removed: nothing answers QUIC)\n"
    "  --advertise-h3        --http3, and every HTTPS response advertises it (Alt-Svc: h3), also\n"
    "                        where the origin did not when recorded\n"
    "  --qlog-dir=DIR        with --http3: one qlog file per QUIC connection in DIR (made if absent)\n"
    "  --timing=recorded     each server answers as it did when recorded: its think time before\n"
    "                        each response's first byte, and its distance (half its round trip\n"
    "                        each way: COMMAND runs inside mm-delay 0 --destinations=FILE, one\n"
    "                        FILE from the recording); mm-recording timings DIR shows them\n"
    "  --timing=none         answer at once, from servers next to COMMAND (the default)\n"
    "  --ignore-query-param=NAME\n"
    "                        compare requests without the query parameter NAME (a cache buster\n"
    "                        such as _ or t); repeatable\n"
    "  --repeats=in-order    repeated identical requests get the recorded responses in recorded\n"
    "                        order, then the last again (the default)\n"
    "  --repeats=first       ... always the first recorded one (the best match, as the original)\n"
    "  --unmatched=404       a request nothing matches gets a 404 naming the nearest recorded\n"
    "                        requests (the default)\n"
    "  --unmatched=close     ... gets no response, as on a network that drops it (the browser\n"
    "                        sees a failed request, not a 404): the connection it came on is\n"
    "                        closed (over HTTP/2 with the requests it carries), its stream reset\n"
    "                        over HTTP/3\n"
    "  --ignore-user-agent   match requests whatever their User-Agent (for a recording made with\n"
    "                        another client: curl's replayed to a browser, or the reverse)\n"
    "  --deterministic       every HTML page gets a script that makes Date, Math.random and\n"
    "                        crypto.getRandomValues repeat (the clock from the page's recorded\n"
    "                        time): for pages recorded with mm-record --deterministic that build\n"
    "                        URLs from the clock or at random\n"
    "  --single-server       one server (one IP) answers everything and every name resolves to\n"
    "                        it: a control for what multi-origin emulation changes\n"
    "  --ca-dir=DIR          the CA that signs the servers' certificates (default: as mm-record)\n"
    "  --server-congestion-control=NAME\n"
    "                        the servers' TCP congestion control (one the kernel allows in a\n"
    "                        namespace: net.ipv4.tcp_allowed_congestion_control)\n"
    "  --server-initial-window=SEGMENTS\n"
    "                        the servers' TCP initial congestion window (the kernel's: 10), for\n"
    "                        connections to a command in a shell inside the replay\n"
    "  --server-slow-start-after-idle=on|off\n"
    "                        whether the servers' TCP restarts slow start after an idle\n"
    "                        period (the kernel's default: on)\n"
    "  --tcp-ecn=on|accept|off\n"
    "                        TCP's ECN of the servers, the command and the shells inside\n"
    "                        (net.ipv4.tcp_ecn): on, asked for and accepted; accept, used when\n"
    "                        the peer asks; off, never (default: as where mm-replay starts)\n"
    "  --verbose             a summary of requests answered and missed at the end\n"
    "  --help, --version\n"
    "\n"
    "A request that asks for a range (Range: bytes=...) gets a 206 with that part of the recorded\n"
    "response (416 if it lies beyond it; the whole response for several disjoint ranges);\n"
    "recorded 206 responses answer the ranges they hold. A request without a Range never gets a\n"
    "206: recorded slices that cover the whole body are put together into a 200; else a 404.\n"
    "\n"
    "With --http3, Chromium given --origin-to-force-quic-on=HOST:443 (each recorded HTTPS host,\n"
    "or *) uses QUIC at once and accepts your local CA over QUIC; given HOST:1 instead (a port\n"
    "nothing uses) it accepts the CA but keeps TCP until an Alt-Svc sends it to QUIC\n"
    "(--advertise-h3). mm-pageload --http3 does this for you.\n"
    "\n"
    "Also installed as mm-webreplay. mm-replay goes outermost, the other shells inside it, so that\n"
    "they sit between your program and the replayed servers:\n"
    "  mm-replay /tmp/site mm-delay 50 mm-link up.trace down.trace -- chromium ...\n"
    "(mm-delay 50 mm-replay ... would delay nothing: the servers would be inside the delay\n"
    "shell too; mm-replay warns when it starts inside another shell.)\n"};

// The options, into the settings and the servers' TCP.
std::vector<ArgScanner::Option> replay_options(ReplayShellSettings& s, ServerTcpSettings& server_tcp) {
  std::optional<std::string>& ca_dir = s.ca_dir;
  ReplayOptions& options = s.options;
  Http3Settings& http3 = s.http3;
  TimingSettings& timing = s.timing;
  std::vector<ArgScanner::Option> list{
      {"http2", false, [&](std::string_view) { s.http2 = true; }},
      {"timing", true,
       [&](std::string_view v) {
         if (v == "recorded") {
           timing.recorded = true;
         } else if (v == "none") {
           timing.recorded = false;
         } else {
           throw UsageError("--timing takes recorded or none, not \"" + printable(v, 40) + "\"");
         }
       }},
      {"http3", false,
       [&](std::string_view) {
         http3.serve = true;
         if (http3.alt_svc == AltSvcPolicy::kNone) http3.alt_svc = AltSvcPolicy::kRecorded;
       }},
      {"advertise-h3", false,
       [&](std::string_view) {
         http3.serve = true;
         http3.alt_svc = AltSvcPolicy::kAll;
       }},
      {"qlog-dir", true, [&](std::string_view v) { http3.qlog_dir = std::string(v); }},
      {"ignore-user-agent", false, [&](std::string_view) { options.ignore_user_agent = true; }},
      {"ignore-query-param", true,
       [&](std::string_view v) {
         if (v.empty() || v.size() > kMaxQueryParameterName || v.find_first_of("&=?# \t\r\n") != std::string_view::npos)
           throw UsageError("--ignore-query-param needs a parameter name (no & = ? # or spaces), not \"" +
                            printable(v, 40) + "\"");
         if (options.ignored_query_parameters.size() == kMaxIgnoredQueryParameters)
           throw UsageError("more than " + std::to_string(kMaxIgnoredQueryParameters) +
                            " --ignore-query-param options");
         options.ignored_query_parameters.emplace_back(v);
       }},
      {"repeats", true,
       [&](std::string_view v) {
         if (v != "in-order" && v != "first")
           throw UsageError("--repeats takes in-order or first, not \"" + printable(v, 40) + "\"");
         options.repeats_in_order = v == "in-order";
       }},
      {"unmatched", true,
       [&](std::string_view v) {
         if (v != "404" && v != "close")
           throw UsageError("--unmatched takes 404 or close, not \"" + printable(v, 40) + "\"");
         options.close_unmatched = v == "close";
       }},
      {"single-server", false, [&](std::string_view) { s.single_server = true; }},
      {"deterministic", false, [&](std::string_view) { s.deterministic = true; }},
      {"ca-dir", true, [&](std::string_view v) { ca_dir = std::string(v); }},
      {"verbose", false, [&](std::string_view) { s.verbose = true; }},
      ArgScanner::tcp_ecn_option(server_tcp.ecn)};
  for (ArgScanner::Option& o : tcp_settings_options(server_tcp, "server-")) list.push_back(std::move(o));
  return list;
}

// The command line: DIR, options, the command; what the ferry does with them.
ShellSpec parse_command_line(int argc, char** argv) {
  ReplayShellSettings s;
  std::optional<std::string> dir;
  ServerTcpSettings server_tcp;
  ArgScanner scanner(kInfo, replay_options(s, server_tcp));
  ShellSpec spec;
  spec.command = scanner.scan(argc, argv, [&](std::string_view word) {
    if (dir) return false;
    dir = std::string(word);
    return true;
  });
  if (!dir || dir->empty()) throw UsageError("missing DIR (a recording made by mm-record)");
  if (s.ca_dir && s.ca_dir->empty()) throw UsageError("--ca-dir needs a directory");
  if (s.http3.qlog_dir && s.http3.qlog_dir->empty()) throw UsageError("--qlog-dir needs a directory");
  if (s.http3.qlog_dir && !s.http3.serve)
    throw UsageError("--qlog-dir goes with --http3 (there is no QUIC without it)");
  spec.tag = "[replay " + *dir + "] ";
  if (s.timing.recorded) add_recorded_timing(s.timing, spec.command);
  // The ferry reads the recording: it has dropped root's rights for good (no memory bug in the
  // parsing can regain them), and only the list of addresses goes back to the supervisor.
  spec.isolated = true;
  spec.isolated_tcp = server_tcp;
  s.dir = *dir;
  spec.ferry = [s](const FerryEndpoints& endpoints, const std::function<void()>& ready) {
    return run_replay_ferry(s, endpoints, ready);
  };
  return spec;
}
}  // namespace

int main(int argc, char** argv) { return run_packet_shell(argc, argv, kInfo, parse_command_line); }
