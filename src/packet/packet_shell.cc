#include "packet_shell.hh"

#include <fcntl.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <optional>

#include "child_process.hh"
#include "environment.hh"
#include "exception.hh"
#include "privileged.hh"
#include "signals.hh"

namespace {

const SignalSet kSupervisorSignals{SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT};

std::vector<std::string> login_shell(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  std::string shell = (pw && pw->pw_shell && *pw->pw_shell) ? pw->pw_shell : "/bin/sh";
  return {shell};
}

// The tag as it may go into a prompt: bash expands $(...), `...` and \ escapes in PS1, and a
// tag carries names the user did not necessarily choose (a recording's directory).
std::string prompt_safe(const std::string& tag) {
  std::string safe;
  for (unsigned char c : tag) safe += (c < 0x20 || c == 0x7f || c == '$' || c == '`' || c == '\\') ? '?' : static_cast<char>(c);
  return safe;
}

void prepare_environment(UserEnvironment& env, const ShellSpec& spec, const ShellNetwork& net) {
  if (!env.get("MAHIMAHI_BASE") && !spec.isolated_addresses) env.set("MAHIMAHI_BASE", net.addresses.outer.str());
  const char* prefix = env.get("MAHIMAHI_SHELL_PREFIX");
  env.set("MAHIMAHI_SHELL_PREFIX", prompt_safe(std::string(prefix ? prefix : "") + spec.tag));
  env.set("PROMPT_COMMAND", "PS1=\"$MAHIMAHI_SHELL_PREFIX$PS1\"; unset PROMPT_COMMAND");
}

[[noreturn]] void exec_command(const std::string& program, std::vector<std::string> command) {
  std::vector<char*> argv;
  for (auto& word : command) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int err = errno;
  std::cerr << program << ": cannot run " << command[0] << ": " << std::strerror(err) << std::endl;
  ::_exit(err == ENOENT ? 127 : 126);
}

// Waits for the ferry to report that it carries packets. False if it died first (it has then
// printed why).
bool wait_until_ready(int ready_fd) {
  char byte;
  for (;;) {
    ssize_t n = ::read(ready_fd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    return n == 1 && byte == 'R';  // 'S': it stopped without ever being ready
  }
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return shell_exit_code(status);
}

class Supervisor {
 public:
  Supervisor(const std::string& program, pid_t command, pid_t ferry, int ferry_status_fd)
      : program_(program), command_(command), ferry_(ferry), ferry_status_fd_(ferry_status_fd) {}

  // Runs until the command has ended; returns the shell's exit status.
  int run(const SignalFd& signals) {
    while (!command_status_) {
      const signalfd_siginfo info = signals.read_signal();
      const int signo = static_cast<int>(info.ssi_signo);
      if (signo == SIGCHLD) {
        reap();
      } else if (signo == SIGCONT) {
        ::kill(command_, SIGCONT);
      } else if (info.ssi_code != SI_KERNEL) {
        // Sent by a process (kill), not by the terminal: the command has not seen it yet.
        ::kill(command_, signo);
      }
    }
    stop_ferry();
    if (ferry_failed_) return 1;
    return once_finished_ ? 0 : *command_status_;
  }

 private:
  void reap() {
    int status;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
      if (pid == command_) {
        if (WIFSTOPPED(status)) {
          // Job control: stop with the command so that the caller's shell sees us stopped;
          // when continued (fg), continue it too.
          ::raise(SIGSTOP);
          ::kill(command_, SIGCONT);
        } else if (WIFEXITED(status) || WIFSIGNALED(status)) {
          command_status_ = shell_exit_code(status);
        }
      } else if (pid == ferry_ && (WIFEXITED(status) || WIFSIGNALED(status))) {
        ferry_ = -1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == kFerryFinished) {
          once_finished_ = true;
        } else {
          ferry_failed_ = true;
          std::cerr << program_ << ": the packet ferry ended unexpectedly (status " << shell_exit_code(status)
                    << "); ending the shell" << std::endl;
        }
        if (!command_status_) ::kill(command_, SIGHUP);  // never signal a reaped pid: it may be reused
      }
    }
  }

  // Waits until the ferry has stopped carrying packets and flushed what it writes, not until
  // its process is gone: closing a TUN device waits for an RCU grace period (~20 ms each), which
  // the kernel completes on its own as the ferry exits.
  void stop_ferry() {
    if (ferry_ <= 0) return;
    ::kill(ferry_, SIGTERM);
    char byte;
    while (::read(ferry_status_fd_, &byte, 1) < 0 && errno == EINTR) {
    }
  }

  std::string program_;
  pid_t command_;
  pid_t ferry_;
  int ferry_status_fd_;  // the ferry writes a byte (or dies) when it has stopped
  std::optional<int> command_status_;
  bool ferry_failed_ = false;
  bool once_finished_ = false;
};

int run_shell(int argc, char** argv, const ProgramInfo& info, const std::function<ShellSpec(int, char**)>& parse,
              UserEnvironment& env) {
  ShellSpec spec = parse(argc, argv);
  const UserIdentity user = check_privileges(info.name);
  const AdministratorConfig config = AdministratorConfig::load();
  const Ipv4Net pool = address_pool_from(env.get(kAddressPoolVariable));
  if (!spec.isolated_addresses) check_address_pool(pool, user.uid == 0, config.allowed_pools, kAdministratorConfigPath);
  std::optional<Ipv4> base;
  if (const char* b = env.get("MAHIMAHI_BASE")) base = Ipv4::parse(b);
  if (spec.command.empty()) spec.command = login_shell(user.uid);

  const char* realtime_env = env.get(kRealtimeVariable);
  const int nice = (realtime_env && std::string_view(realtime_env) == "0") ? kNoPriorityChange : ferry_nice(user, config);
  const sigset_t original_mask = kSupervisorSignals.block();
  SignalFd signals(kSupervisorSignals);
  const pid_t supervisor = ::getpid();

  const bool isolated = static_cast<bool>(spec.isolated_addresses);
  ShellNetwork net;
  FileDescriptor intercepted;
  if (isolated) {
    std::vector<Ipv4> addresses;
    with_user_rights(user, [&] { addresses = spec.isolated_addresses(); });
    net.inner_namespace = create_isolated_namespace(addresses);
  } else {
    net = create_shell_network(spec.device_kind, pool, base);
    if (spec.intercept_tcp) intercepted = intercept_tcp(net, spec.refuse_quic);
  }

  int ready[2];
  check_syscall("pipe2", ::pipe2(ready, O_CLOEXEC));
  FileDescriptor ready_read(ready[0]), ready_write(ready[1]);

  const char* prefix = env.get("MAHIMAHI_SHELL_PREFIX");
  const std::string outer_prefix = prefix ? prefix : "";
  const pid_t ferry = fork_child(info.name, [&] {
    raise_priority(nice);
    if (isolated) enter_namespace(net.inner_namespace);  // its servers live there
    drop_privileges(user);
    env.install();  // the user's own variables (HOME, the CA's location), for the user's rights only
    // Dies with the supervisor, even on SIGKILL, so that the TUN devices vanish with it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != supervisor) return 1;
    ready_read.close();
    net.inner_namespace.close();
    net.slot_claim.close();  // a writable root-owned file: not for the user's process
    const int write_end = ready_write.get();
    const int status =
        spec.ferry(FerryEndpoints{net.outer_tun.get(), net.inner_tun.get(), &net.dns, outer_prefix, intercepted.get()},
                   [write_end] { write_all(write_end, "R"); });
    write_all(write_end, "S");  // stopped: the supervisor may finish without waiting for our exit
    return status;
  });
  net.outer_tun.close();  // the ferry holds the only copies now
  net.inner_tun.close();
  net.dns = DnsRelaySockets{};
  intercepted.close();
  ready_write.close();
  if (!wait_until_ready(ready_read.get())) {
    const int status = wait_for(ferry);
    return status != 0 ? status : 1;
  }

  prepare_environment(env, spec, net);
  const pid_t command = fork_child(info.name, [&]() -> int {
    enter_namespace(net.inner_namespace);
    net.slot_claim.close();  // a writable root-owned file: not for the user's process
    drop_privileges(user);
    ::prctl(PR_SET_PDEATHSIG, SIGHUP);
    if (::getppid() != supervisor) return 1;
    check_syscall("sigprocmask", ::sigprocmask(SIG_SETMASK, &original_mask, nullptr));
    env.restore_withheld();
    env.install();
    exec_command(info.name, spec.command);
  });
  net.inner_namespace.close();

  Supervisor supervisor_loop(info.name, command, ferry, ready_read.get());
  return supervisor_loop.run(signals);
  // net's destructor removes the NAT table; the TUN devices went with the ferry.
}

}  // namespace

int run_packet_shell(int argc, char** argv, const ProgramInfo& info,
                     const std::function<ShellSpec(int, char**)>& parse) {
  UserEnvironment env = UserEnvironment::capture_and_clear();
  try {
    return run_shell(argc, argv, info, parse, env);
  } catch (const UsageError& e) {
    std::cerr << info.name << ": " << e.what() << "\n" << usage_line(info) << "\nTry '" << info.name
              << " --help' for more information.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << info.name << ": " << e.what() << std::endl;
    return 1;
  }
}
