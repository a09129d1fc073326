// SPDX-License-Identifier: GPL-3.0-or-later
// Monkey Do: the plan, the ferry's work, the results (monkey_do.hh).
#include "monkey/monkey_do.hh"

#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include "monkey/capture_reader.hh"
#include "monkey/monkey_see.hh"
#include "monkey/server_under_test.hh"
#include "packet/peer_paths.hh"
#include "shell/root_helper.hh"
#include "util/csv.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/private_directory.hh"
#include "util/random.hh"
#include "util/signals.hh"
#include "util/statistics.hh"
#include "util/text.hh"

namespace {
// A workload of a million connections is about 200 MB.
constexpr uint64_t kMaxWorkloadFileBytes = uint64_t{1} << 30;
constexpr Nanos kServerStartDeadline = 30 * kNanosPerSec;

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

Nanos ms(double value) { return static_cast<Nanos>(std::llround(std::max(0.0, value) * 1e6)); }

struct ClientFigures {
  std::optional<double> rtt_ms;
  std::vector<double> bandwidths, losses;
  // The trace's losses, by their place among the client's data packets (its connections one
  // after another: exact for one connection, close for several in turn, rough for several at once).
  bool pattern = false;
  std::vector<uint64_t> drops;
  uint64_t packets = 0;
};
}  // namespace

std::optional<HttpRequestPlan> http_request_plan(const WorkloadExchange& e, const std::string& server) {
  if (e.target.empty()) return std::nullopt;
  HttpRequestPlan r;
  r.method = e.method;
  const std::string request_line = e.method + " " + e.target + " HTTP/1.1\r\n";
  const std::string host = e.host.empty() ? server : e.host;
  r.head = request_line + "Host: " + host + "\r\n";
  const uint64_t bare = r.head.size() + 2;  // and the blank line
  if (e.method == "POST" || e.method == "PUT" || e.method == "PATCH") {
    // Content-Length's own line counts: the body is what the recorded size leaves after it. The
    // line is given room for DIGITS digits; a shorter number is preceded by more spaces (optional
    // whitespace, RFC 9110), so that the whole comes to the recorded size exactly.
    std::string line = "Content-Length: 0\r\n";
    for (uint64_t digits = 1; digits <= 20 && e.request_bytes >= bare + 18 + digits; digits++) {
      const uint64_t body = e.request_bytes - bare - 18 - digits;
      const std::string number = std::to_string(body);
      if (number.size() > digits) continue;
      line = "Content-Length:" + std::string(digits - number.size() + 1, ' ') + number + "\r\n";
      r.body = body;
      break;
    }
    r.head += line;
  } else if (constexpr std::string_view kPad = "X-Monkey-Padding: "; e.request_bytes >= bare + kPad.size() + 2) {
    const uint64_t fill = std::min<uint64_t>(e.request_bytes - bare - kPad.size() - 2, 60'000);
    r.head += std::string(kPad) + std::string(fill, 'x') + "\r\n";
  } else if (e.request_bytes > bare) {
    // Too little for a field of its own: the Host field's optional whitespace takes it.
    r.head = request_line + "Host:" + std::string(1 + e.request_bytes - bare, ' ') + host + "\r\n";
  }
  r.head += "\r\n";
  return r;
}

MonkeyPlan plan_replay(const std::vector<WorkloadConnection>& workload, size_t max_clients, bool real_server) {
  MonkeyPlan plan;
  std::map<std::string, size_t> client_index;
  std::vector<ClientFigures> figures;
  std::vector<double> all_rtts;
  for (const WorkloadConnection& c : workload) {
    auto [it, added] = client_index.emplace(c.client, figures.size());
    if (added) {
      if (figures.size() == max_clients)
        throw UserError("the workload has more than " + std::to_string(max_clients) +
                        " clients, more than one replay gives addresses to; replay its connections in parts "
                        "(a part of the capture each: editcap, or tcpdump -r with a filter of clients)");
      figures.emplace_back();
    }
    ClientFigures& f = figures[it->second];
    if (c.rtt_ms) {
      f.rtt_ms = f.rtt_ms ? std::min(*f.rtt_ms, *c.rtt_ms) : *c.rtt_ms;
      all_rtts.push_back(*c.rtt_ms);
    }
    if (c.bandwidth_mbps) f.bandwidths.push_back(*c.bandwidth_mbps);
    if (c.loss) f.losses.push_back(*c.loss);
    if (c.has_lost_packets) {
      f.pattern = true;
      for (uint64_t n : c.lost_packets)
        if (f.drops.size() < kMaxPathDrops && (f.drops.empty() || f.packets + n > f.drops.back()))
          f.drops.push_back(f.packets + n);
      f.packets +=
          std::max<uint64_t>(c.server_segments + c.retransmissions, c.lost_packets.empty() ? 0 : c.lost_packets.back());
    }
  }
  const double median_rtt = percentile(all_rtts, 50).value_or(0);
  for (size_t i = 0; i < figures.size(); i++) {
    const Ipv4 address{kFirstClientAddress + static_cast<uint32_t>(i)};
    plan.clients.push_back(address);
    const ClientFigures& f = figures[i];
    const double rtt = f.rtt_ms.value_or(median_rtt);
    std::string line = address.str() + " delay=" + fixed(rtt / 2, 3);
    if (const std::optional<double> bw = percentile(f.bandwidths, 50); bw && *bw > 0)
      line += " rate=" + fixed(std::max(1.0, *bw * 1e6), 0) + "bit/s";  // mm-paths takes 1 bit/s on
    if (f.pattern) {
      // The trace's own losses, packet by packet, rather than a rate drawn again at random.
      if (!f.drops.empty()) {
        line += " drops=";
        for (size_t k = 0; k < f.drops.size(); k++) line += (k ? "," : "") + std::to_string(f.drops[k]);
      }
    } else if (!f.losses.empty()) {
      double sum = 0;
      for (double l : f.losses) sum += l;
      line += " loss=" + fixed(std::clamp(sum / static_cast<double>(f.losses.size()), 0.0, 1.0), 6) + ",0";
    }
    plan.paths += line + "\n";
  }
  const double first_start = workload.empty() ? 0 : workload.front().start_s;
  for (const WorkloadConnection& c : workload) {
    const size_t client = client_index.at(c.client);
    const double rtt = figures[client].rtt_ms.value_or(median_rtt);
    plan.emulated_client.push_back(plan.clients[client]);
    plan.not_replayed.emplace_back();
    if (real_server && std::any_of(c.exchanges.begin(), c.exchanges.end(),
                                   [](const WorkloadExchange& e) { return e.target.empty(); })) {
      plan.not_replayed.back() = "not-http";
      continue;
    }
    if (!c.rtt_ms) plan.without_rtt++;
    if (!c.bandwidth_mbps) plan.without_bandwidth++;
    ClientConnectionPlan p{c.id, plan.clients[client], ms((c.start_s - first_start) * 1000), {}};
    double previous_end = 0;  // the handshake's end, then each response's (ms from the start)
    for (size_t i = 0; i < c.exchanges.size(); i++) {
      const WorkloadExchange& e = c.exchanges[i];
      // The gap at the server held a round trip the client waited through: the rest it thought.
      const Nanos think = ms(e.request_start_ms - (i == 0 ? 0 : previous_end) - rtt);
      const double delay = e.response_start_ms ? *e.response_start_ms - e.request_end_ms : 0;
      p.exchanges.push_back({think,
                             {c.id, e.index, e.request_bytes, e.response_bytes,
                              static_cast<uint64_t>(std::min<Nanos>(ms(delay) / 1000, kMaxServerDelayUs))},
                             real_server ? http_request_plan(e, c.server) : std::nullopt});
      previous_end = e.response_end_ms.value_or(e.request_end_ms);
      if (e.parts.size() > 1 || c.nodelay) {
        std::vector<ServerPart> parts;
        for (const WorkloadPart& part : e.parts)
          parts.push_back(
              {part.bytes, std::min<Nanos>(ms(part.pause_ms), kMaxServerDelayUs * 1000)});  // the emulator's bound
        if (parts.empty()) parts.push_back({e.response_bytes, 0});
        plan.server += server_plan_line(c.id, e.index, c.nodelay, parts);
      }
    }
    plan.connections.push_back(std::move(p));
  }
  return plan;
}

MonkeyResults compare_replay(const std::vector<WorkloadConnection>& workload, const MonkeyPlan& plan,
                             const ClientRunResult& clients, const std::vector<ServedExchange>& served) {
  MonkeyResults r;
  std::map<std::pair<uint64_t, uint32_t>, const ServedExchange*> at_server;
  for (const ServedExchange& s : served) at_server[{s.connection, s.index}] = &s;
  std::map<std::pair<uint64_t, uint32_t>, const ClientExchangeResult*> at_client;
  for (const ClientExchangeResult& c : clients.exchanges) at_client[{c.connection, c.index}] = &c;
  r.csv =
      "connection,exchange,client,emulated_client,rtt_ms,bandwidth_mbps,loss,request_bytes,response_bytes,"
      "traced_ms,replayed_ms,relative_error,client_side_ms,status\n";
  std::vector<double> errors;
  size_t failed = 0;
  size_t not_replayed = 0;
  for (size_t ci = 0; ci < workload.size(); ci++) {
    const WorkloadConnection& c = workload[ci];
    const std::string client = plan.emulated_client[ci].str();
    for (const WorkloadExchange& e : c.exchanges) {
      const auto s = at_server.find({c.id, e.index});
      const auto k = at_client.find({c.id, e.index});
      const bool done = k != at_client.end() && k->second->done && s != at_server.end();
      if (done && k->second->status >= 400) r.not_ok++;
      if (done && k->second->status && e.response_bytes &&
          std::fabs(static_cast<double>(k->second->response_bytes) - static_cast<double>(e.response_bytes)) >
              0.1 * static_cast<double>(e.response_bytes))
        r.other_size++;
      std::optional<double> replayed, error, client_side;
      if (done) {
        replayed = static_cast<double>(s->second->last_byte_sent - s->second->first_byte) / 1e6;
        client_side = static_cast<double>(k->second->received - k->second->sent) / 1e6;
        if (e.response_time_ms && *e.response_time_ms > 0) {
          error = (*replayed - *e.response_time_ms) / *e.response_time_ms;
          errors.push_back(std::fabs(*error));
          r.compared++;
          if (std::fabs(*error) <= 0.1) r.within_10++;
          if (std::fabs(*error) <= 0.2) r.within_20++;
        }
      } else if (plan.not_replayed[ci].empty()) {
        failed++;
      } else {
        not_replayed++;
      }
      auto opt = [](const std::optional<double>& v, int decimals) { return v ? fixed(*v, decimals) : std::string(); };
      r.csv += std::to_string(c.id) + "," + std::to_string(e.index) + "," + csv_field(c.client) + "," + client + "," +
               opt(c.rtt_ms, 3) + "," + opt(c.bandwidth_mbps, 3) + "," + opt(c.loss, 4) + "," +
               std::to_string(e.request_bytes) + "," + std::to_string(e.response_bytes) + "," +
               opt(e.response_time_ms, 3) + "," + opt(replayed, 3) + "," + opt(error, 4) + "," + opt(client_side, 3) +
               "," +
               (done                            ? (error ? "ok" : "no-traced-time")
                : plan.not_replayed[ci].empty() ? "failed"
                                                : plan.not_replayed[ci]) +
               "\n";
    }
  }
  auto percent = [&](size_t n) { return r.compared ? fixed(100.0 * static_cast<double>(n) / r.compared, 1) : "-"; };
  r.summary = "replayed " + count_of(clients.connections - clients.failed, "connection") + " of " +
              std::to_string(clients.connections) + " (" + std::to_string(clients.failed) + " failed), " +
              count_of(r.compared, "exchange") + " compared: within 10 % of the traced response time " +
              percent(r.within_10) + " %, within 20 % " + percent(r.within_20) + " %, median error " +
              (errors.empty() ? std::string("-") : fixed(100 * *percentile(errors, 50), 1) + " %") +
              (failed ? "; " + count_of(failed, "exchange") + " not replayed" : "") +
              (not_replayed ? "; " + count_of(not_replayed, "exchange") +
                                  " left out (no HTTP/1.x request line to send a real server: TLS or another protocol)"
                            : "") +
              (r.not_ok ? "; " + count_of(r.not_ok, "response") + " with a status of 400 or more" : "") +
              (r.other_size ? "; " + count_of(r.other_size, "response") +
                                  " more than 10 % off its traced size (the server does not hold the traced content)"
                            : "");
  return r;
}

namespace {
struct MonkeyDoSettings {
  std::string workload, results;
  bool force = false, verbose = false;
  uint16_t port = 8000;  // the server emulator's, or the server under test's (--server)
  bool under_test = false;
  std::filesystem::path directory;  // the paths table's, named by the supervisor
};

// What the server under test did, from the capture mm-paths made at its side: each replayed
// exchange's request's first byte and its response's last, as Monkey See reads them, by the
// client's address and port (the connection they were replayed on).
std::vector<ServedExchange> served_from_capture(const std::string& capture, const MonkeyPlan& plan,
                                                const ClientRunResult& run) {
  std::map<std::pair<std::string, uint16_t>, uint64_t> connection_of;
  for (size_t i = 0; i < plan.connections.size(); i++)
    if (run.local_ports[i])
      connection_of[{plan.connections[i].client.str(), run.local_ports[i]}] = plan.connections[i].id;
  std::vector<ServedExchange> served;
  CaptureReader reader(capture);
  MonkeySee see([&](MonkeyConnection&& c) {
    const auto it = connection_of.find({c.client.address_text(), c.client.port});
    if (it == connection_of.end()) return;  // not a client's (the probes that waited for the server)
    for (size_t i = 0; i < c.exchanges.size(); i++) {
      const MonkeyExchange& e = c.exchanges[i];
      if (e.response_end)
        served.push_back(
            {it->second, static_cast<uint32_t>(i + 1), e.request_start, *e.response_end, e.response_bytes});
    }
  });
  see_capture(reader, see);
  return served;
}

// The shell's address (its outer device, "paths-PID", holds .1 of its /30; the inner is .2).
std::optional<Ipv4> server_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<Ipv4> found;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && std::string_view(a->ifa_name).starts_with("paths-")) {
      found = Ipv4{Ipv4::from_in_addr(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr).value + 1};
    }
  }
  ::freeifaddrs(list);
  return found;
}

bool answers(Ipv4 address, uint16_t port) {
  FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_in to = socket_address(address, port);
  return fd.valid() && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0;
}

// Waits (polling `stop_fd` too) until `ready` holds; false at the deadline or a signal.
template <class Ready>
bool wait_for(const Ready& ready, int stop_fd, Nanos deadline) {
  while (!ready()) {
    pollfd p{stop_fd, POLLIN, 0};
    if (monotonic_now() > deadline || ::poll(&p, 1, 20) > 0) return false;
  }
  return true;
}

// Stops the server emulator with `status`; returns what it served.
std::vector<ServedExchange> stop_server(Ipv4 address, uint16_t port, int status) {
  FileDescriptor fd(check_syscall("socket", ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)));
  const sockaddr_in to = socket_address(address, port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0)
    throw SystemError("reaching the server emulator to stop it");
  write_all(fd.get(), "MKY1 stop " + std::to_string(status) + "\n");
  std::string log;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    log.append(buffer, static_cast<size_t>(n));
  }
  std::vector<ServedExchange> served;
  for (size_t at = 0; at < log.size();) {
    const size_t newline = log.find('\n', at);
    if (newline == std::string::npos) break;
    if (const auto e = parse_served_line(std::string_view(log).substr(at, newline - at))) served.push_back(*e);
    at = newline + 1;
  }
  return served;
}

// The ferry's work, with the user's rights, in the isolated namespace.
int run_monkey_do(const MonkeyDoSettings& s, const FerryEndpoints& endpoints, const std::function<void()>& ready) {
  SignalSet handled{SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  handled.block();
  SignalFd signals(SignalSet{SIGTERM});
  const std::vector<WorkloadConnection> workload =
      parse_workload(read_user_file(s.workload, "workload", kMaxWorkloadFileBytes, "give a workload of mm-monkey see"),
                     user_file_name(s.workload));
  const MonkeyPlan plan = plan_replay(workload, kMaxIsolatedAddresses, s.under_test);
  FileDescriptor results = create_output_file(s.results, s.force);  // before the replay: a bad path fails at once
  WorkDirectory work(s.directory);
  write_all(FileDescriptor(check_syscall("open", ::open((s.directory / "paths").c_str(),
                                                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)))
                .get(),
            "# mm-monkey do: each client's path\n" + plan.paths);
  if (s.under_test) {
    check_syscall("mkfifo", ::mkfifo((s.directory / "stop").c_str(), 0600));
  } else {
    write_all(FileDescriptor(check_syscall("open", ::open((s.directory / "server-plan").c_str(),
                                                          O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)))
                  .get(),
              plan.server);
  }
  if (s.verbose)
    std::cerr << "mm-monkey do: " << count_of(workload.size(), "connection") << " of "
              << count_of(plan.clients.size(), "client") << "; " << plan.without_rtt
              << " without an RTT (the median's), " << plan.without_bandwidth << " without a bandwidth (no rate limit)"
              << std::endl;
  endpoints.add_addresses(plan.clients);
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;  // a descriptor per open connection
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }
  ready();
  std::optional<Ipv4> server;
  const Nanos deadline = monotonic_now() + kServerStartDeadline;
  const char* what = s.under_test ? "the server under test" : "the server emulator";
  if (!wait_for([&] { return (server = server_address()).has_value(); }, signals.fd(), deadline) ||
      !wait_for([&] { return answers(*server, s.port); }, signals.fd(), deadline)) {
    std::cerr << "mm-monkey do: " << what << " did not answer on port " << s.port << " within 30 s" << std::endl;
    if (s.under_test) (void)stop_server_under_test(s.directory / "stop", 1);
    return kFerryFailedSaidWhy;
  }
  const ClientRunResult run = run_clients(plan.connections, *server, s.port, {.stop_fd = signals.fd()});
  for (const std::string& e : run.errors) std::cerr << "mm-monkey do: " << e << std::endl;
  std::vector<ServedExchange> served;
  if (s.under_test) {
    // The server goes; the shell around it ends, mm-paths finishing its capture first; then the
    // supervisor's signal comes, and the capture is whole.
    (void)stop_server_under_test(s.directory / "stop", run.failed ? 1 : 0);
    (void)signals.read_signal();
    served = served_from_capture(s.directory / "replay.pcap", plan, run);
  } else {
    served = stop_server(*server, s.port, run.failed ? 1 : 0);
  }
  const MonkeyResults r = compare_replay(workload, plan, run, served);
  write_all(results.get(), r.csv);
  std::cerr << "mm-monkey do: " << r.summary << "\nmm-monkey do: wrote " << s.results << std::endl;
  if (!s.under_test) (void)signals.read_signal();  // the supervisor's, once the server (the command) has gone
  return 0;
}
}  // namespace

ShellSpec monkey_do_shell(const ProgramInfo& info, int ac, char** av) {
  MonkeyDoSettings s;
  ShellSpec spec;
  bool port_given = false;
  std::optional<uint64_t> seed;
  ServerTcpSettings server_tcp;
  std::vector<ArgScanner::Option> options{{"output", true, [&](std::string_view v) { s.results = std::string(v); }},
                                          {"o", true, [&](std::string_view v) { s.results = std::string(v); }},
                                          {"force", false, [&](std::string_view) { s.force = true; }},
                                          {"f", false, [&](std::string_view) { s.force = true; }},
                                          {"port", true,
                                           [&](std::string_view v) {
                                             const uint64_t port = parse_unsigned(v, "--port");
                                             if (port < 1 || port > 65535) throw UsageError("--port is 1 to 65535");
                                             s.port = static_cast<uint16_t>(port);
                                             port_given = true;
                                           }},
                                          {"server", true,
                                           [&](std::string_view v) {
                                             const uint64_t port = parse_unsigned(v, "--server");
                                             if (port < 1 || port > 65535)
                                               throw UsageError("--server takes the server's PORT, 1 to 65535");
                                             s.port = static_cast<uint16_t>(port);
                                             s.under_test = true;
                                           }},
                                          ArgScanner::seed_option(seed),
                                          {"verbose", false, [&](std::string_view) { s.verbose = true; }}};
  for (ArgScanner::Option& o : tcp_settings_options(server_tcp, "server-")) options.push_back(std::move(o));
  ArgScanner scanner(info, std::move(options));
  const std::vector<std::string> rest = scanner.scan(ac, av, [&](std::string_view word) {
    if (!s.workload.empty()) throw UsageError("one WORKLOAD only (\"" + printable(word, 80) + "\" is a second)");
    s.workload = std::string(word);
    return true;
  });
  if (s.under_test && port_given) throw UsageError("--port is the server emulator's: with --server, give one only");
  if (s.under_test && rest.empty())
    throw UsageError("--server PORT needs the server to run after --, e.g. -- nginx -c $PWD/nginx.conf");
  if (!s.under_test && !rest.empty())
    throw UsageError("a command (\"" + printable(rest[0], 80) + "\") is the server under test: add --server PORT");
  if (s.workload.empty()) throw UsageError("missing WORKLOAD (made by mm-monkey see)");
  if (s.results.empty()) throw UsageError("missing -o RESULTS (a CSV file to write)");
  // The paths table goes where the supervisor says, under a name nobody can take first; the
  // ferry makes the directory with the user's rights, mm-paths reads it, the ferry removes it.
  s.directory = std::filesystem::path("/tmp") / ("mm-monkey.do-" + unguessable_name());
  const uint64_t loss_seed = seed ? *seed : Random::fresh_seed();
  spec.tag = "[monkey do] ";
  spec.isolated = true;
  spec.command = {"mm-paths", (s.directory / "paths").string(), "--seed", std::to_string(loss_seed)};
  if (s.under_test) spec.command.push_back("--capture=" + (s.directory / "replay.pcap").string());
  // The server's TCP: its namespace's, inside mm-paths (its initial window on the default route
  // its answers take).
  if (!server_tcp.congestion_control.empty())
    spec.command.push_back("--tcp-congestion-control=" + server_tcp.congestion_control);
  if (server_tcp.initial_window)
    spec.command.push_back("--tcp-initial-window=" + std::to_string(server_tcp.initial_window));
  if (server_tcp.slow_start_after_idle)
    spec.command.push_back(std::string("--tcp-slow-start-after-idle=") +
                           (*server_tcp.slow_start_after_idle ? "on" : "off"));
  if (s.under_test) {
    for (const char* word : {"--", "mm-monkey", "serve", "--stop-fifo"}) spec.command.push_back(word);
    spec.command.push_back((s.directory / "stop").string());
    spec.command.push_back("--");
    spec.command.insert(spec.command.end(), rest.begin(), rest.end());
  } else {
    for (const char* word : {"--", "mm-monkey", "serve", "--port"}) spec.command.push_back(word);
    spec.command.push_back(std::to_string(s.port));
    spec.command.push_back("--plan=" + (s.directory / "server-plan").string());
  }
  spec.ferry = [s](const FerryEndpoints& endpoints, const std::function<void()>& ready) {
    try {
      return run_monkey_do(s, endpoints, ready);
    } catch (const std::exception& e) {
      std::cerr << "mm-monkey do: " << e.what() << std::endl;
      return 1;
    }
  };
  return spec;
}
