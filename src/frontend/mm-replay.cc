// SPDX-License-Identifier: GPL-3.0-or-later
// mm-replay DIR [OPTION]... [--] [COMMAND...]: runs COMMAND where every server of a recording
// exists at its recorded IP and port and answers from the recording, with no outside network.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "recording/timings.hh"
#include "replay/replay_fastcgi.hh"
#include "replay/replay_http3.hh"
#include "replay/replay_index.hh"
#include "replay/replay_servers.hh"
#include "shell/packet_shell.hh"
#include "shell/resolv_conf.hh"
#include "tls/certificate_authority.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"
#include "util/statistics.hh"
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

// The IPv4 resolvers the command will ask (glibc reads the first three nameserver lines;
// without any it asks 127.0.0.1): they must exist in the namespace, answered by dnsmasq.
std::vector<Ipv4> resolver_addresses() { return c_library_resolvers(read_resolv_conf()); }

// A private directory for the daemons' files, removed with everything in it.
class WorkDirectory {
 public:
  WorkDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mm-replay.XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw SystemError("creating a directory in " + std::filesystem::temp_directory_path().string());
    path_ = pattern;
  }
  // At a path chosen beforehand (with a random part no one else can guess), made new, 0700.
  explicit WorkDirectory(const std::filesystem::path& path) {
    if (::mkdir(path.c_str(), 0700) != 0) throw SystemError("creating the directory " + path.string());
    path_ = path;
  }
  ~WorkDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  WorkDirectory(const WorkDirectory&) = delete;
  WorkDirectory& operator=(const WorkDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct ReplayPlan {
  std::unique_ptr<ReplayIndex> index;
  std::vector<ReplayServerSpec> servers;
  ReplayDns dns;
};

ReplayPlan plan(const std::string& dir, bool http2, bool single_server, bool deterministic) {
  ReplayPlan p;
  std::vector<std::string> warnings;
  auto print_warnings = [&] {
    for (const std::string& w : warnings) std::cerr << "mm-replay: warning: " << w << std::endl;
  };
  try {
    p.index = std::make_unique<ReplayIndex>(ReplayIndex::load(dir, &warnings, deterministic));
  } catch (const UserError&) {
    print_warnings();  // "no valid pair: see the warnings"
    throw;
  }
  print_warnings();
  const auto& origins = p.index->origins();
  if (single_server) {
    // Every recorded port, on the first recorded address; every name resolves to it.
    const std::string ip = origins.front().ip;
    std::set<std::pair<uint16_t, bool>> ports;
    std::set<std::string> names;
    bool h2 = http2;
    for (const ReplayOrigin& o : origins) {
      ports.insert({o.port, o.https});
      names.insert(o.names.begin(), o.names.end());
      h2 = h2 || o.h2;
    }
    std::set<uint16_t> taken;
    for (auto [port, https] : ports) {
      if (!taken.insert(port).second) {
        throw UserError("--single-server: port " + std::to_string(port) +
                        " was recorded both with and without TLS; replay without --single-server");
      }
      p.servers.push_back({ip, port, https, {names.begin(), names.end()}, https && h2});
    }
    for (const auto& [name, ips] : p.index->names()) p.dns.names[name] = {ip};
  } else {
    for (const ReplayOrigin& o : origins)
      p.servers.push_back({o.ip, o.port, o.https, o.names, o.https && (http2 || o.h2), o.certificates, o.tls_max});
    p.dns.names = p.index->names();
  }
  for (Ipv4 r : resolver_addresses()) p.dns.listen.push_back(r.str());
  return p;
}

// The addresses the namespace's lo needs: every recorded server's and the resolvers', once each.
// 127.0.0.0/8 is on lo already (and may not be requested).
std::vector<Ipv4> addresses_of(const ReplayPlan& p) {
  std::vector<Ipv4> addresses;
  std::set<uint32_t> seen;
  auto add = [&](const std::string& text) {
    const auto ip = Ipv4::parse(text);
    if (ip && (ip->value >> 24) != 127 && seen.insert(ip->value).second) addresses.push_back(*ip);
  };
  for (const ReplayServerSpec& s : p.servers) add(s.ip);
  for (const std::string& r : p.dns.listen) add(r);
  return addresses;
}

// --timing=recorded: where the ferry writes the origins' distances for the mm-delay shell the
// command runs in, a directory named before the fork (the supervisor puts the path on the
// command line; the ferry, with the user's rights, makes the directory and writes the file).
struct TimingSettings {
  bool recorded = false;
  std::filesystem::path directory;
  std::filesystem::path destinations() const { return directory / "destinations"; }
};

// 128 random bits as hex: a name in /tmp no other user can take first.
std::string random_name() {
  uint8_t bytes[16];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) throw SystemError("getrandom");
  static const char* kHex = "0123456789abcdef";
  std::string name;
  for (uint8_t b : bytes) name += kHex[b >> 4], name += kHex[b & 15];
  return name;
}

// The mm-delay map: each recorded address at half its smallest round trip each way (the
// recording's own words for it, as mm-recording timings --destinations writes them).
std::string destinations_of(const std::vector<ReplayOrigin>& origins) {
  std::vector<OriginTiming> timings;
  for (const ReplayOrigin& o : origins) {
    OriginTiming t;
    t.ip = o.ip;
    t.port = o.port;
    t.https = o.https;
    t.names = o.names;
    if (o.rtt_us) t.rtt_ms = static_cast<double>(*o.rtt_us) / 1000.0;
    timings.push_back(std::move(t));
  }
  return destinations_map(timings);
}

// What --timing=recorded will replay, for --verbose and for a recording without timing.
std::string timing_summary(const ReplayIndex& index, bool single_server) {
  size_t timed_origins = 0;
  std::vector<double> rtts;
  for (const ReplayOrigin& o : index.origins())
    if (o.rtt_us) timed_origins++, rtts.push_back(static_cast<double>(*o.rtt_us) / 1000.0);
  std::string text = "timing: ";
  if (single_server) {
    text += "one server for every origin (--single-server) sits at no origin's distance; ";
  } else {
    text += std::to_string(timed_origins) + " of " + count_of(index.origins().size(), "origin") +
            " at their recorded distances";
    if (!rtts.empty()) {
      char range[64];
      std::snprintf(range, sizeof range, " (round trips %.1f to %.1f ms)", *percentile(rtts, 0),
                    *percentile(rtts, 100));
      text += range;
    }
    text += "; ";
  }
  text += "think times as recorded (" + index.think_time_summary() + ")";
  return text;
}

struct Http3Settings {
  bool serve = false;
  AltSvcPolicy alt_svc = AltSvcPolicy::kNone;
  std::optional<std::string> qlog_dir;
};

int serve(const std::function<void()>& ready, ReplayPlan& p, const std::optional<std::string>& ca_dir,
          const ReplayOptions& options, const Http3Settings& http3, const TimingSettings& timing, bool single_server,
          bool verbose) {
  SignalSet handled{SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD};
  handled.block();  // inherited by the threads; SIGTERM (from the supervisor) and SIGCHLD are read below
  SignalFd signals(SignalSet{SIGTERM, SIGCHLD});
  for (int s : {SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(s, SIG_IGN);

  CertificateAuthority ca = CertificateAuthority::load_or_create(ca_dir ? std::filesystem::path(*ca_dir)
                                                                        : CertificateAuthority::default_directory());
  if (http3.qlog_dir) {
    std::error_code error;
    std::filesystem::create_directories(*http3.qlog_dir, error);
    if (error) throw UserError("--qlog-dir: cannot make " + *http3.qlog_dir + ": " + error.message());
  }
  std::optional<WorkDirectory> work_holder;
  if (timing.recorded) {
    work_holder.emplace(timing.directory);
    const std::string map =
        single_server ? "# --single-server: no origin at its own distance\n" : destinations_of(p.index->origins());
    write_all(FileDescriptor(check_syscall("open", ::open(timing.destinations().c_str(),
                                                          O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)))
                  .get(),
              map);
    if (verbose) std::cerr << "mm-replay: " << timing_summary(*p.index, single_server) << std::endl;
  } else {
    work_holder.emplace();
  }
  const WorkDirectory& work = *work_holder;
  auto match = [&](const ReplayRequest& request) {
    ReplayMatch m = p.index->match(request, options);
    apply_alt_svc_policy(m.response, http3.alt_svc, request.https, request.host);
    if (!timing.recorded) m.response.think_us = 0;
    return m;
  };
  auto log_miss = [](const std::string& line) { std::cerr << "mm-replay: " << line << std::endl; };  // one line
  // With think times a thread waits while its request "thinks": enough threads that a browser's
  // requests in flight (6 connections per host, hundreds in all) wait side by side.
  ReplayFastCgi matcher(match, work.path() / "matcher.sock", timing.recorded ? 256 : 8, log_miss);
  matcher.start();
  bool failed = false;
  uint64_t served_h3 = 0, missed_h3 = 0;
  {
    ReplayServers servers(p.servers, p.dns, ca, work.path() / "matcher.sock", work.path());
    std::unique_ptr<ReplayHttp3> h3;
    if (http3.serve) {
      h3 = std::make_unique<ReplayHttp3>(http3_endpoints(p.servers, work.path()), match, log_miss,
                                         http3.qlog_dir.value_or(""));
    }
    ready();
    // Until the supervisor ends the replay: a daemon that dies meanwhile (killed, crashed) ends
    // it too, with its name and last words, rather than leaving the command to meet refused
    // connections or unanswered names.
    while (signals.read_signal().ssi_signo == SIGCHLD) {
      if (const auto why = servers.ended_unexpectedly()) {
        std::cerr << "mm-replay: " << *why << "\nmm-replay: the replay cannot go on without it; ending the shell"
                  << std::endl;
        failed = true;
        break;
      }
    }
    if (h3) {
      h3->stop();
      served_h3 = h3->served();
      missed_h3 = h3->missed();
      if (verbose) std::cerr << "mm-replay: HTTP/3: " << http3_summary(h3->stats()) << std::endl;
    }
    servers.stop();
  }
  matcher.stop();
  if (verbose) {
    std::cerr << "mm-replay: " << replay_summary(matcher.served() + served_h3, matcher.missed() + missed_h3);
    if (http3.serve) std::cerr << " (" << served_h3 + missed_h3 << " over HTTP/3)";
    std::cerr << std::endl;
  }
  return failed ? kFerryFailedSaidWhy : 0;
}
// mm-replay inside another shell (its MAHIMAHI_SHELL_PREFIX, e.g. "[delay 50 ms] "): the servers
// start inside that shell, next to the command, so nothing the shell emulates lies between them.
std::string nesting_warning(const std::string& outer_prefix) {
  return "mm-replay: warning: started inside another shell (" + printable(trim_blanks(outer_prefix), 200) +
         "), so the replayed servers sit inside it with your program and it emulates nothing between them; "
         "put mm-replay outermost, e.g. mm-replay DIR mm-delay 50 -- COMMAND";
}

// The command line: DIR, options, the command; what the ferry does with them.
ShellSpec parse_command_line(int argc, char** argv) {
  std::optional<std::string> dir, ca_dir;
  bool http2 = false, single_server = false, verbose = false, deterministic = false;
  ReplayOptions options;
  Http3Settings http3;
  TimingSettings timing;
  ServerTcpSettings server_tcp;
  ArgScanner scanner(
      kInfo, {{"http2", false, [&](std::string_view) { http2 = true; }},
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
              {"server-congestion-control", true,
               [&](std::string_view v) {
                 if (!is_congestion_control_name(v))
                   throw UsageError(
                       "--server-congestion-control needs a congestion control's name (such as reno "
                       "or bbr), not \"" +
                       printable(v, 40) + "\"");
                 server_tcp.congestion_control = std::string(v);
               }},
              {"server-initial-window", true,
               [&](std::string_view v) {
                 const uint64_t n = parse_unsigned(v, "--server-initial-window");
                 if (n < 1 || n > kMaxInitialWindow)
                   throw UsageError("--server-initial-window takes a number of segments from 1 to " +
                                    std::to_string(kMaxInitialWindow) + ", not " + std::to_string(n));
                 server_tcp.initial_window = static_cast<uint32_t>(n);
               }},
              {"server-slow-start-after-idle", true,
               [&](std::string_view v) {
                 if (v != "on" && v != "off")
                   throw UsageError("--server-slow-start-after-idle takes on or off, not \"" + printable(v, 40) + "\"");
                 server_tcp.slow_start_after_idle = v == "on";
               }},
              {"ignore-user-agent", false, [&](std::string_view) { options.ignore_user_agent = true; }},
              {"ignore-query-param", true,
               [&](std::string_view v) {
                 if (v.empty() || v.size() > kMaxQueryParameterName ||
                     v.find_first_of("&=?# \t\r\n") != std::string_view::npos)
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
              {"single-server", false, [&](std::string_view) { single_server = true; }},
              {"deterministic", false, [&](std::string_view) { deterministic = true; }},
              {"ca-dir", true, [&](std::string_view v) { ca_dir = std::string(v); }},
              {"verbose", false, [&](std::string_view) { verbose = true; }},
              ArgScanner::tcp_ecn_option(server_tcp.ecn)});
  ShellSpec spec;
  spec.command = scanner.scan(argc, argv, [&](std::string_view word) {
    if (dir) return false;
    dir = std::string(word);
    return true;
  });
  if (!dir || dir->empty()) throw UsageError("missing DIR (a recording made by mm-record)");
  if (ca_dir && ca_dir->empty()) throw UsageError("--ca-dir needs a directory");
  if (http3.qlog_dir && http3.qlog_dir->empty()) throw UsageError("--qlog-dir needs a directory");
  if (http3.qlog_dir && !http3.serve) throw UsageError("--qlog-dir goes with --http3 (there is no QUIC without it)");
  spec.tag = "[replay " + *dir + "] ";
  if (timing.recorded) {
    // The command runs inside a per-destination delay shell (mm-delay, found next to this
    // program) whose map the ferry writes from the recording before the command starts.
    timing.directory = std::filesystem::path("/tmp") / ("mm-replay.timing-" + random_name());
    std::vector<std::string> command = {"mm-delay", "0", "--destinations=" + timing.destinations().string(), "--"};
    command.insert(command.end(), spec.command.begin(), spec.command.end());
    spec.command = std::move(command);
  }
  // The ferry reads the recording: it has dropped root's rights for good (no memory bug in the
  // parsing can regain them), and only the list of addresses goes back to the supervisor.
  spec.isolated = true;
  spec.isolated_tcp = server_tcp;
  spec.ferry = [dir = *dir, http2, single_server, deterministic, ca_dir, options, http3, timing, verbose](
                   const FerryEndpoints& endpoints, const std::function<void()>& ready) {
    try {
      if (!endpoints.outer_prefix.empty()) std::cerr << nesting_warning(endpoints.outer_prefix) << std::endl;
      (void)::setpriority(PRIO_PROCESS, 0, 0);  // neither the loading nor the servers may outrank the command
      ReplayPlan p = plan(dir, http2, single_server, deterministic);
      endpoints.add_addresses(addresses_of(p));
      return serve(ready, p, ca_dir, options, http3, timing, single_server, verbose);
    } catch (const std::exception& e) {
      std::cerr << "mm-replay: " << e.what() << std::endl;
      return 1;
    }
  };
  return spec;
}
}  // namespace

int main(int argc, char** argv) { return run_packet_shell(argc, argv, kInfo, parse_command_line); }
