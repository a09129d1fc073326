// SPDX-License-Identifier: GPL-3.0-or-later
#include "replay/replay_shell.hh"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

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
#include "util/private_directory.hh"
#include "util/signals.hh"
#include "util/statistics.hh"
#include "util/text.hh"

namespace {
// The IPv4 resolvers the command will ask (glibc reads the first three nameserver lines;
// without any it asks 127.0.0.1): they must exist in the namespace, answered by dnsmasq.
std::vector<Ipv4> resolver_addresses() { return c_library_resolvers(read_resolv_conf()); }

// A private directory for the daemons' files, removed with everything in it.

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
    work_holder.emplace(WorkDirectory::Prefix{"mm-replay"});
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

}  // namespace

void add_recorded_timing(TimingSettings& timing, std::vector<std::string>& command) {
  // The command runs inside a per-destination delay shell (mm-delay, found next to this
  // program) whose map the ferry writes from the recording before the command starts.
  timing.directory = std::filesystem::path("/tmp") / ("mm-replay.timing-" + unguessable_name());
  std::vector<std::string> wrapped = {"mm-delay", "0", "--destinations=" + timing.destinations().string(), "--"};
  wrapped.insert(wrapped.end(), command.begin(), command.end());
  command = std::move(wrapped);
}

int run_replay_ferry(const ReplayShellSettings& s, const FerryEndpoints& endpoints,
                     const std::function<void()>& ready) {
  try {
    if (!endpoints.outer_prefix.empty()) std::cerr << nesting_warning(endpoints.outer_prefix) << std::endl;
    (void)::setpriority(PRIO_PROCESS, 0, 0);  // neither the loading nor the servers may outrank the command
    ReplayPlan p = plan(s.dir, s.http2, s.single_server, s.deterministic);
    endpoints.add_addresses(addresses_of(p));
    return serve(ready, p, s.ca_dir, s.options, s.http3, s.timing, s.single_server, s.verbose);
  } catch (const std::exception& e) {
    std::cerr << "mm-replay: " << e.what() << std::endl;
    return 1;
  }
}
