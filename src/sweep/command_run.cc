// SPDX-License-Identifier: GPL-3.0-or-later
// One run of a command sweep (see command_run.hh).
#include "sweep/command_run.hh"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "sweep/flow_figures.hh"
#include "sweep/sweep_store.hh"
#include "util/child_process.hh"
#include "util/clock.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/host_facts.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
// Whether a socket of this namespace listens on TCP `port` or is bound to UDP `port`.
bool port_in_use(uint16_t port) {
  char wanted[8];
  std::snprintf(wanted, sizeof wanted, "%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"}) {
    const bool tcp = std::string_view(table).find("tcp") != std::string_view::npos;
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    for (size_t n = 0; std::getline(in, line) && n < 1000000; n++) {
      // "sl local_address rem_address st ...": ADDRESS:PORT in hexadecimal, then the state.
      const std::vector<std::string_view> words = blank_separated_words(line);
      if (words.size() < 4) continue;
      const std::string_view local = words[1];
      if (local.substr(local.find(':') + 1) != wanted) continue;
      if (!tcp || words[3] == "0A") return true;  // 0A: LISTEN
    }
  }
  return false;
}

void set_run_environment(const CommandRun& r) {
  ::setenv("MM_SWEEP_PORT", std::to_string(r.port).c_str(), 1);
  ::setenv("MM_SWEEP_SCHEME", r.config.scheme.c_str(), 1);
  ::setenv("MM_SWEEP_CC", r.config.cc.empty() ? "default" : r.config.cc.c_str(), 1);
  ::setenv("MM_SWEEP_RUN", std::to_string(r.run).c_str(), 1);
  ::setenv("MM_SWEEP_CONFIGURATION", r.config.id().c_str(), 1);
  // The run's outermost shell then sets MAHIMAHI_BASE to the address of this namespace, where the
  // server listens (a shell keeps a MAHIMAHI_BASE it is given: mm-sweep's own, when it runs in a
  // shell, leads out of that shell's namespace, away from the server).
  ::unsetenv("MAHIMAHI_BASE");
}

// Waits for `pid` until `deadline`: its shell exit code, or nullopt at the deadline. A stop
// signal (SIGTERM, SIGINT, SIGHUP) sets `stopped` and returns nullopt at once.
std::optional<int> wait_until(pid_t pid, Nanos deadline, const sigset_t& signals, bool& stopped) {
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return shell_exit_code(status);
    const Nanos now = monotonic_now();
    if (now >= deadline) return std::nullopt;
    const Nanos wait = std::min<Nanos>(deadline - now, 100 * kNanosPerMs);
    const timespec timeout{static_cast<time_t>(wait / kNanosPerSec), static_cast<long>(wait % kNanosPerSec)};
    const int signal = ::sigtimedwait(&signals, nullptr, &timeout);
    if (signal == SIGTERM || signal == SIGINT || signal == SIGHUP) {
      stopped = true;
      return std::nullopt;
    }
  }
}

// Ends `pid` (SIGTERM, SIGKILL after `grace_s`; to its whole process group when it leads one of
// its own, as the server does: what sh started goes too) and returns how it ended.
int end_process(pid_t pid, double grace_s, bool group) {
  const pid_t target = group ? -pid : pid;
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) {
    if (group) ::kill(target, SIGKILL);  // what it left in its group
    return shell_exit_code(status);
  }
  ::kill(target, SIGTERM);
  const Nanos deadline = monotonic_now() + seconds_to_nanos(grace_s);
  while (monotonic_now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (group) ::kill(target, SIGKILL);
      return shell_exit_code(status);
    }
    const timespec pause{0, 10'000'000};
    ::nanosleep(&pause, nullptr);
  }
  ::kill(target, SIGKILL);
  return wait_for_exit(pid);
}

FileDescriptor create_log(const fs::path& path) {
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) throw SystemError("creating " + path.string());
  return fd;
}

std::optional<FlowFigures> read_flow(const fs::path& log, double propagation_ms, std::string& problem) {
  std::error_code error;
  if (!fs::exists(log, error)) return std::nullopt;
  try {
    return flow_figures(LinkLog::read(log.string()), propagation_ms);
  } catch (const UserError& e) {
    problem = e.what();
    return std::nullopt;
  }
}
}  // namespace

uint16_t free_port() {
  for (int attempt = 0; attempt < 50; attempt++) {
    FileDescriptor tcp(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!tcp.valid()) throw SystemError("socket");
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    socklen_t length = sizeof address;
    if (::bind(tcp.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(tcp.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0)
      throw SystemError("finding a free port");
    FileDescriptor udp(::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (udp.valid() && ::bind(udp.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0)
      return ntohs(address.sin6_port);
  }
  throw UserError("no port is free for a run's server (TCP and UDP) after 50 tries");
}

int run_command_once(const CommandRun& r) {
  // The sweep's stop signals are waited for here, as SIGCHLD is.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&signals, s);
  ::sigprocmask(SIG_BLOCK, &signals, nullptr);
  set_run_environment(r);
  nlohmann::json result = {{"configuration", r.config.id()}, {"run", r.run}, {"host", host_facts()}};
  const Nanos started = monotonic_now();
  const FileDescriptor null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const FileDescriptor log = create_log(r.files.log);
  SpawnOptions options;
  options.stdin_fd = null_fd.get();
  options.close_other_fds = true;
  options.default_signals = true;
  bool stopped = false;

  pid_t server = -1;  // its process group's too
  std::string status;
  if (!r.settings.server.empty()) {
    const FileDescriptor server_log = create_log(r.files.server_log);
    write_all(server_log.get(),
              "# port " + std::to_string(r.port) + ": sh -c " + shell_quote(r.settings.server) + "\n");
    options.stdout_fd = options.stderr_fd = server_log.get();
    // A group of its own: ending it ends whatever it started (sh's children, a daemon's), and
    // the sweep's stop signal reaches it through this process, which ends it.
    options.new_process_group = true;
    server = spawn_program("/bin/sh", {"-c", r.settings.server}, options);
    options.new_process_group = false;
    const Nanos deadline = monotonic_now() + seconds_to_nanos(kServerListenSeconds);
    while (!port_in_use(r.port)) {
      int wait_status = 0;
      if (::waitpid(server, &wait_status, WNOHANG) == server) {
        result["server_exit_status"] = shell_exit_code(wait_status);
        ::kill(-server, SIGKILL);  // what it left in its group
        server = -1;
        status = "server-failed";
        break;
      }
      if (monotonic_now() > deadline) {
        status = "server-failed";
        break;
      }
      const timespec pause{0, 10'000'000};
      ::nanosleep(&pause, nullptr);
      sigset_t pending;
      ::sigpending(&pending);
      if (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT) || sigismember(&pending, SIGHUP)) {
        stopped = true;
        break;
      }
    }
  }
  if (status.empty() && !stopped) {
    const std::vector<std::string> argv =
        command_run_argv(r.settings, r.config, r.programs, r.files.uplink_log.string(), r.files.downlink_log.string());
    std::string text;
    for (const std::string& word : argv) text += (text.empty() ? "" : " ") + shell_quote(word);
    write_all(log.get(), "# " + text + "\n");
    options.stdout_fd = options.stderr_fd = log.get();
    const pid_t shells = spawn_program(argv.front(), std::vector<std::string>(argv.begin() + 1, argv.end()), options);
    std::optional<int> exit_code =
        wait_until(shells, started + seconds_to_nanos(r.settings.timeout_s), signals, stopped);
    if (!exit_code) {
      exit_code = end_process(shells, 10, false);
      if (!stopped) status = "timeout";
    }
    result["exit_status"] = *exit_code;
    if (status.empty()) status = *exit_code == 0 ? "ok" : "failed";
  }
  if (server > 0) result["server_exit_status"] = end_process(server, kServerStopSeconds, true);
  if (stopped) return 1;
  result["status"] = status;
  result["seconds"] = nanos_to_ms(monotonic_now() - started) / 1000;
  std::string problem;
  const double propagation = r.config.rtt_ms / 2;
  const std::optional<FlowFigures> up = read_flow(r.files.uplink_log, propagation, problem),
                                   down = read_flow(r.files.downlink_log, propagation, problem);
  if (status != "server-failed" && (!up || !down)) {
    // The shells never ran the link: a failure of the harness (its log says why), not a run.
    if (!problem.empty()) write_all(log.get(), "mm-sweep: " + problem + "\n");
    return 1;
  }
  if (up) result["uplink"] = flow_json(*up);
  if (down) result["downlink"] = flow_json(*down);
  if (up && down) result["direction"] = down->delivered_bytes > up->delivered_bytes ? "downlink" : "uplink";
  if (!r.keep_link_logs) {
    std::error_code ignored;
    fs::remove(r.files.uplink_log, ignored);
    fs::remove(r.files.downlink_log, ignored);
  }
  write_file_atomically(r.files.result, result.dump(1) + "\n");
  return 0;
}

std::string command_run_outcome(const nlohmann::json& result) {
  std::string text = result.value("status", "?");
  const std::string direction = result.value("direction", "");
  if (!direction.empty() && result.contains(direction)) {
    const nlohmann::json& flow = result.at(direction);
    char line[160];
    std::snprintf(line, sizeof line, ", %s %.2f Mbit/s", direction.c_str(), flow.value("throughput_mbps", 0.0));
    text += line;
    if (flow.contains("delay_p95_ms") && flow.at("delay_p95_ms").is_number()) {
      std::snprintf(line, sizeof line, ", p95 one-way delay %.1f ms", flow.at("delay_p95_ms").get<double>());
      text += line;
    }
  }
  if (result.contains("exit_status") && result.at("exit_status") != 0)
    text += " (exit status " + result.at("exit_status").dump() + ")";
  return text;
}
