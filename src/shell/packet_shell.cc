// SPDX-License-Identifier: GPL-3.0-or-later
// The frame of every shell: the supervisor's checks and set-up, the ferry and command processes,
// the start-up protocol with the ferry, and the wait (see packet_shell.hh and README.md).
#include "shell/packet_shell.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>

#include "shell/address_pool.hh"
#include "shell/command_lookup.hh"
#include "shell/environment.hh"
#include "shell/forwarding.hh"
#include "shell/privileged.hh"
#include "shell/resolv_conf.hh"
#include "shell/rootless.hh"
#include "shell/route_table.hh"
#include "util/child_process.hh"
#include "util/clock.hh"
#include "util/exception.hh"
#include "util/signals.hh"
#include "util/text.hh"

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
  for (unsigned char c : tag)
    safe += (c < 0x20 || c == 0x7f || c == '$' || c == '`' || c == '\\') ? '?' : static_cast<char>(c);
  return safe;
}

void prepare_environment(UserEnvironment& env, const ShellSpec& spec, const ShellNetwork& net) {
  if (!env.get("MAHIMAHI_BASE") && !spec.isolated) env.set("MAHIMAHI_BASE", net.addresses.outer.str());
  // Which namespace is an isolated shell's (mm-replay's, which nothing outside reaches): its
  // inode, so that a program can tell it runs there (mm-cumulus-remote's defaults). A hint to
  // ordinary programs, never read with root's rights.
  struct stat st {};
  if (spec.isolated && net.inner_namespace.valid() && ::fstat(net.inner_namespace.get(), &st) == 0)
    env.set(kIsolatedNamespaceVariable, std::to_string(st.st_ino));
  const char* prefix = env.get("MAHIMAHI_SHELL_PREFIX");
  env.set("MAHIMAHI_SHELL_PREFIX", prompt_safe(std::string(prefix ? prefix : "") + spec.tag));
  env.set("PROMPT_COMMAND", "PS1=\"$MAHIMAHI_SHELL_PREFIX$PS1\"; unset PROMPT_COMMAND");
}

// Runs the command found before set-up (resolve_command); exec can still fail if the file changed
// since, and says why as bash would.
[[noreturn]] void exec_command(const std::string& program, const std::string& path, std::vector<std::string> command) {
  std::vector<char*> argv;
  for (auto& word : command) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(path.c_str(), argv.data());
  const int err = errno;
  std::cerr << program << ": cannot run " << command[0] << ": " << std::strerror(err) << std::endl;
  ::_exit(err == ENOENT ? 127 : 126);
}

// The start-up channel, a socketpair between the supervisor and its ferry. The ferry sends:
//   'A' count(u32, host order) count*addr(4 bytes, network order)   isolated shells: add addresses
//                                                   (the addresses only if count <= kMaxIsolatedAddresses)
//   'R'   it carries packets: the command may start
//   'S'   it stopped (before being ready, or when asked to): nothing more will come
//   'F'   it stopped after failing, and has said why (kStoppedFailed, below)
// and the supervisor answers 'A' with 'K' (added) or 'E' length(u16) text (refused: why).
// The ferry may be hostile (a bug exploited in what it parsed): the supervisor reads at most
// what the cap allows, answers one request, and never blocks on it.
constexpr char kAddAddresses = 'A', kReady = 'R', kStopped = 'S', kAdded = 'K', kRefused = 'E';
// The ferry's last word when it stopped because it failed (and said why): a log it could not
// finish writing, after the command had ended. The shell's status is then 1.
constexpr char kStoppedFailed = 'F';
constexpr size_t kMaxRefusal = 2000;

bool interrupting(int signo) { return signo == SIGINT || signo == SIGTERM || signo == SIGHUP || signo == SIGQUIT; }

// Reads exactly size bytes from the channel, or stops at an interrupting signal (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT: returned) or at end-of-file (*eof). Other signals (SIGCHLD, SIGTSTP, SIGCONT:
// no command exists yet) are consumed and ignored; a dead ferry shows as end-of-file.
int read_or_signal(int channel, const SignalFd& signals, char* buffer, size_t size, bool* eof) {
  size_t got = 0;
  *eof = false;
  while (got < size) {
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {channel, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll");
    }
    if (fds[0].revents & POLLIN) {
      const int signo = static_cast<int>(signals.read_signal().ssi_signo);
      if (interrupting(signo)) return signo;
      continue;
    }
    if (!fds[1].revents) continue;
    const ssize_t n = ::read(channel, buffer + got, size - got);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      *eof = true;
      return 0;
    }
    got += static_cast<size_t>(n);
  }
  return 0;
}

void send_reply(int channel, const std::string& reply) {
  // One reply ever, far smaller than the socket's buffer: never blocks, never raises SIGPIPE.
  (void)::send(channel, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

// The ferry's side of an address request (see above).
void request_addresses(int channel, const std::vector<Ipv4>& addresses) {
  const uint32_t count = static_cast<uint32_t>(std::min<size_t>(addresses.size(), UINT32_MAX));
  std::string message(1, kAddAddresses);
  message.append(reinterpret_cast<const char*>(&count), sizeof count);
  if (addresses.size() <= kMaxIsolatedAddresses) {
    for (Ipv4 a : addresses) {
      const uint32_t network = htonl(a.value);
      message.append(reinterpret_cast<const char*>(&network), sizeof network);
    }
  }
  write_all(channel, message);
  auto read_exactly = [channel](char* buffer, size_t size) {
    size_t got = 0;
    while (got < size) {
      const ssize_t n = ::read(channel, buffer + got, size - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("the shell's supervisor did not answer the request for addresses");
      got += static_cast<size_t>(n);
    }
  };
  char status = 0;
  read_exactly(&status, 1);
  if (status == kAdded) return;
  uint16_t length = 0;
  read_exactly(reinterpret_cast<char*>(&length), sizeof length);
  std::string reason(std::min<size_t>(length, kMaxRefusal), '\0');
  read_exactly(reason.data(), reason.size());
  throw UserError(reason);
}

// Runs the ferry's start-up: answers its request for addresses (isolated shells: isolated_ns is
// the namespace) until it reports that it is ready (run() returns nullopt; the command may
// start). Otherwise run() returns the shell's exit status: 1 if the ferry stopped or died (it
// has printed why), 128+N if signal N interrupted the start (the ferry is then stopped; one line
// says so).
class Startup {
 public:
  Startup(const std::string& program, pid_t ferry, int channel, const SignalFd& signals,
          const ShellNetwork* isolated_ns)
      : program_(program), ferry_(ferry), channel_(channel), signals_(signals), isolated_ns_(isolated_ns) {}

  std::optional<int> run() {
    for (;;) {
      char type = 0;
      bool eof = false;
      if (const int signo = read_or_signal(channel_, signals_, &type, 1, &eof)) return interrupted(signo);
      if (eof || type == kStopped) return ferry_ended();
      if (refused_) continue;  // whatever it still sends: wait for it to end
      if (type == kReady) return std::nullopt;
      if (type == kAddAddresses && isolated_ns_ && !asked_) {
        asked_ = true;
        if (const auto status = answer_address_request()) return status;
        continue;
      }
      // Anything else breaks the protocol: a ferry that does is not to be trusted further.
      std::cerr << program_ << ": the shell's ferry sent an invalid start-up message; ending the shell" << std::endl;
      ::kill(ferry_, SIGKILL);
      int status;
      while (::waitpid(ferry_, &status, 0) < 0 && errno == EINTR) {
      }
      return 1;
    }
  }

 private:
  // Reads the rest of an 'A' request and answers it: the addresses are added, or refused with
  // the reason. Returns the shell's exit status if a signal or the ferry's end came first.
  std::optional<int> answer_address_request() {
    bool eof = false;
    uint32_t count = 0;
    if (const int signo = read_or_signal(channel_, signals_, reinterpret_cast<char*>(&count), sizeof count, &eof))
      return interrupted(signo);
    if (eof) return ferry_ended();
    std::string reply(1, kAdded);
    try {
      check_isolated_address_count(count);  // before reading anything more
      std::string bytes(size_t{count} * 4, '\0');
      if (const int signo = read_or_signal(channel_, signals_, bytes.data(), bytes.size(), &eof))
        return interrupted(signo);
      if (eof) return ferry_ended();
      std::vector<Ipv4> addresses(count);
      for (size_t i = 0; i < count; i++) {
        uint32_t network;
        std::memcpy(&network, bytes.data() + 4 * i, 4);
        addresses[i].value = ntohl(network);
      }
      add_isolated_addresses(*isolated_ns_, addresses);
      added_ = true;
    } catch (const std::exception& e) {
      std::string reason = std::string(e.what()).substr(0, kMaxRefusal);
      const uint16_t length = static_cast<uint16_t>(reason.size());
      reply = std::string(1, kRefused);
      reply.append(reinterpret_cast<const char*>(&length), sizeof length);
      reply += reason;
      refused_ = true;  // the ferry prints the reason and ends
    }
    send_reply(channel_, reply);
    return std::nullopt;
  }

  int ferry_ended() {
    int status = 0;
    while (::waitpid(ferry_, &status, 0) < 0) {
      if (errno != EINTR) return 1;
    }
    if (WIFSIGNALED(status)) {
      std::cerr << program_ << ": the shell's ferry " << how_it_ended(shell_exit_code(status)) << " while starting"
                << std::endl;
      return 1;
    }
    if (isolated_ns_) return 1;  // it has printed why
    const int code = shell_exit_code(status);
    return code != 0 ? code : 1;
  }

  int interrupted(int signo) {
    std::cerr << program_ << ": start interrupted by SIG" << sigabbrev_np(signo) << "; nothing was left running"
              << std::endl;
    if (!added_) {
      ::kill(ferry_, SIGKILL);  // it holds nothing that needs cleaning up
    } else {
      // It may be starting daemons and hold temporary files: it stops them once started, then
      // says 'S' (or dies). A second signal makes it SIGKILL.
      ::kill(ferry_, SIGTERM);
      for (;;) {
        char byte;
        bool eof = false;
        const int again = read_or_signal(channel_, signals_, &byte, 1, &eof);
        if (again) {
          ::kill(ferry_, SIGKILL);
          break;
        }
        if (eof || byte == kStopped) break;
      }
    }
    int status;
    while (::waitpid(ferry_, &status, 0) < 0 && errno == EINTR) {
    }
    return 128 + signo;
  }

  const std::string& program_;
  pid_t ferry_;
  int channel_;
  const SignalFd& signals_;
  const ShellNetwork* isolated_ns_;
  bool asked_ = false;    // one request only
  bool added_ = false;    // the ferry has its addresses: it may be starting daemons, stop it gently
  bool refused_ = false;  // the ferry was refused: it prints why and ends
};

// How long the processes of a shell that is ending get after the polite signal (SIGHUP for the
// command, SIGTERM for the others) before SIGKILL. A shell inside another gets a little less than
// the one around it, so that the outer shell's SIGKILL does not cut short the inner one's own
// clean-up (its stragglers, its ferry, its daemons).
Nanos ending_grace(const std::string& outer_prefix) {
  const auto depth = std::count(outer_prefix.begin(), outer_prefix.end(), '[');
  return std::max<Nanos>(300, 2000 - 150 * depth) * kNanosPerMs;
}

// A reaper is the subreaper of everything its main child starts: a process whose parent ends
// (a pipeline's members when bash is killed, a background job, a daemon) becomes its child. When
// it ends, for whatever reason, it ends them all (politely, then for good), so that nothing keeps
// running in a namespace whose link is gone. It signals only its own children, whose pids stay
// theirs until it reaps them. There are two, one inside the other (see run_shell):
//  - the guard, with the user's rights, whose main child is the command. It also ends everything
//    when the supervisor vanishes (killed with SIGKILL): it notices as end-of-file on a pipe.
//  - the supervisor, whose main child is the guard, and which also watches the ferry. If the
//    guard is killed, the command's processes come to the supervisor, which ends them.
class Reaper {
 public:
  struct Ferry {
    pid_t pid = -1;
    int status_fd = -1;  // the ferry writes a byte (or dies) when it has stopped
  };
  // `supervisor_fd`: the guard's end of a pipe the supervisor holds open (-1 for the supervisor).
  // `spared`: a child that is not the command's and ends on its own after the reaper (a rootless
  // shell's way out), or -1.
  Reaper(const std::string& program, const std::string& command_name, pid_t command, Ferry ferry, int supervisor_fd,
         Nanos grace, pid_t spared = -1)
      : program_(program),
        command_name_(command_name),
        command_(command),
        ferry_(ferry.pid),
        ferry_status_fd_(ferry.status_fd),
        supervisor_fd_(supervisor_fd),
        grace_(grace),
        spared_(spared) {}

  // Runs until the main child and everything it started have ended; returns the exit status.
  int run(const SignalFd& signals) {
    for (;;) {
      if (ending_since_ && sweep() == 0 && command_status_) break;
      if (!ending_since_ && forwarded_deadline_ && monotonic_now() >= *forwarded_deadline_) force_end();
      pollfd events[2] = {{signals.fd(), POLLIN, 0}, {supervisor_fd_, POLLIN, 0}};
      // While ending, look again now and then: a process whose parent (not this one) ends
      // becomes a child without a SIGCHLD here.
      int timeout = -1;
      if (ending_since_) {
        timeout = kSweepIntervalMs;
      } else if (forwarded_deadline_) {
        timeout = static_cast<int>(std::max<Nanos>(0, *forwarded_deadline_ - monotonic_now()) / kNanosPerMs) + 1;
      }
      if (::poll(events, supervisor_fd_ >= 0 ? 2 : 1, timeout) <= 0) continue;
      if (events[1].revents) supervisor_vanished();
      if (events[0].revents) handle(signals.read_signal());
    }
    report_stragglers();
    stop_ferry();
    if (ferry_failed_) return 1;
    if (ended_by_once_) {
      std::cerr << program_ << ": the traces ran out (--once): the shell ended " << command_name_ << "; exit status "
                << kOnceEndedStatus << std::endl;
      return kOnceEndedStatus;
    }
    return *command_status_;
  }

 private:
  static constexpr int kSweepIntervalMs = 20;

  // The supervisor never writes to the pipe: it is readable only once the supervisor is gone,
  // which only SIGKILL does without the guard having ended first.
  void supervisor_vanished() {
    ::close(supervisor_fd_);
    supervisor_fd_ = -1;
    std::cerr << program_ << ": the shell's supervisor was killed; ending " << command_name_
              << " and everything it started" << std::endl;
    begin_ending();
  }

  void handle(const signalfd_siginfo& info) {
    const int signo = static_cast<int>(info.ssi_signo);
    if (signo == SIGCHLD) {
      reap();
    } else if (ending_since_ || command_ <= 0) {             // never kill(-1): that would signal every process
      if (interrupting(signo)) deadline_ = monotonic_now();  // asked again: end everything now
    } else if (signo == SIGCONT) {
      ::kill(command_, SIGCONT);
    } else if (info.ssi_code != SI_KERNEL) {
      // Sent by a process (kill), not by the terminal: the command has not seen it yet.
      ::kill(command_, signo);
      // A request to end (SIGTERM, or SIGHUP: the terminal is gone): a command that ignores it
      // is ended anyway after the grace period. SIGINT and SIGQUIT ask for less (an interrupt,
      // a thread dump) and are only passed on.
      if ((signo == SIGTERM || signo == SIGHUP) && !forwarded_deadline_) {
        forwarded_deadline_ = monotonic_now() + grace_;
        forwarded_signal_ = signo;
      }
    }
  }

  // The command outlived the grace period after a forwarded SIGTERM (SIGHUP, ...): SIGKILL to it
  // and to everything it started, at once.
  void force_end() {
    std::cerr << program_ << ": " << command_name_ << " did not end within " << grace_ / kNanosPerMs << " ms of SIG"
              << sigabbrev_np(forwarded_signal_) << "; ending it and everything it started with SIGKILL" << std::endl;
    begin_ending();
    deadline_ = monotonic_now();
  }

  void begin_ending() {
    if (ending_since_) return;
    ending_since_ = monotonic_now();
    deadline_ = *ending_since_ + grace_;
  }

  // Signals every child but the ferry that has not been signalled yet (SIGHUP for the command,
  // SIGTERM for the others, each with SIGCONT in case it is stopped), or, past the deadline,
  // SIGKILLs them. Returns how many there were.
  size_t sweep() {
    const bool for_good = monotonic_now() >= deadline_;
    size_t count = 0;
    for (const pid_t pid : list_children()) {
      if (pid <= 0 || pid == ferry_ || pid == spared_) continue;
      count++;
      if (for_good) {
        ::kill(pid, SIGKILL);
      } else if (signalled_.insert(pid).second) {
        // Not reported: the command, and processes already ending on their own (the ferry of a
        // shell nested in this one outlives its supervisor by the moment its exit takes).
        if (pid != command_ && !process_is_ending(pid)) stragglers_.push_back(process_name(pid));
        ::kill(pid, pid == command_ ? SIGHUP : SIGTERM);
        ::kill(pid, SIGCONT);
      }
    }
    return count;
  }

  void reap() {
    int status;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
      const bool ended = WIFEXITED(status) || WIFSIGNALED(status);
      if (ended) signalled_.erase(pid);
      if (pid == command_) {
        if (WIFSTOPPED(status) && !ending_since_) {
          // Job control: stop with the command so that the caller's shell sees us stopped;
          // when continued (fg), continue it too.
          const Nanos stopped_at = monotonic_now();
          ::raise(SIGSTOP);
          // Time spent stopped does not count against a command asked to end.
          if (forwarded_deadline_) *forwarded_deadline_ += monotonic_now() - stopped_at;
          ::kill(command_, SIGCONT);
        } else if (ended) {
          command_status_ = shell_exit_code(status);
          command_ = -1;  // never signal a reaped pid: it may be reused
          begin_ending();
        }
      } else if (pid == ferry_ && ended) {
        ferry_ = -1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == kFerryFinished) {
          ended_by_once_ = !command_status_;
        } else {
          ferry_failed_ = true;
          if (!WIFEXITED(status) || WEXITSTATUS(status) != kFerryFailedSaidWhy) {
            std::cerr << program_ << ": the packet ferry (pid " << pid << ") " << how_it_ended(shell_exit_code(status))
                      << "; ending the shell" << std::endl;
          }
        }
        begin_ending();
      }
    }
  }

  // One line naming what the command left running and the shell ended (not the command itself).
  void report_stragglers() const {
    if (stragglers_.empty()) return;
    std::string names;
    for (size_t i = 0; i < stragglers_.size() && i < 4; i++) names += (i ? ", " : "") + stragglers_[i];
    if (stragglers_.size() > 4) names += ", ...";
    std::cerr << program_ << ": ended " << count_of(stragglers_.size(), "process", "processes")
              << " that the command left running (" << names << ")" << std::endl;
  }

  // A child's name as the kernel reports it, safe to print.
  static std::string process_name(pid_t pid) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    return name.empty() ? "pid " + std::to_string(pid) : printable(name, 16);
  }

  // Waits until the ferry has stopped carrying packets and flushed what it writes, not until
  // its process is gone: closing a TUN device waits for an RCU grace period (~20 ms each), which
  // the kernel completes on its own as the ferry exits.
  void stop_ferry() {
    if (ferry_ <= 0) return;
    ::kill(ferry_, SIGTERM);
    char byte = 0;
    ssize_t n;
    while ((n = ::read(ferry_status_fd_, &byte, 1)) < 0 && errno == EINTR) {
    }
    // Anything but "stopped" (it failed while finishing its logs, or died without a word): the
    // shell's work is incomplete, whatever the command's status.
    if (n != 1 || byte != kStopped) {
      if (n != 1) std::cerr << program_ << ": the packet ferry ended without finishing its work" << std::endl;
      ferry_failed_ = true;
    }
  }

  std::string program_;
  std::string command_name_;
  pid_t command_;        // -1 once reaped
  pid_t ferry_;          // -1 once reaped (and for the guard, which has none)
  int ferry_status_fd_;  // the ferry writes a byte (or dies) when it has stopped
  int supervisor_fd_;    // the guard's: readable (end-of-file) once the supervisor is gone
  Nanos grace_;
  pid_t spared_;
  std::optional<int> command_status_;
  std::optional<Nanos> ending_since_;        // set when the command or the ferry ended
  Nanos deadline_ = kNever;                  // from then on, SIGKILL
  std::optional<Nanos> forwarded_deadline_;  // a forwarded SIGTERM (...) ends everything from then on
  int forwarded_signal_ = 0;
  std::set<pid_t> signalled_;  // children already asked politely (not yet reaped)
  std::vector<std::string> stragglers_;
  bool ferry_failed_ = false;
  bool ended_by_once_ = false;  // the ferry's traces ran out while the command was running
};

// --verbose's line on the TUN offloads (ShellNetwork::offload).
std::string offload_summary(bool asked, const ShellNetwork& net) {
  if (!asked) return std::string("TUN offloads off (") + kOffloadVariable + "=0): one packet per read and write";
  if (!net.offload) return "TUN offloads not used (" + net.offload_refused + "): one packet per read and write";
  if (!net.offload_refused.empty())
    return "TUN offloads only in part (" + net.offload_refused + "): super-packets leave the shell, none enter";
  return "TUN offloads on (" + net.offload_features +
         "): super-packets of up to 64 KiB cross the ferry, the emulation still acts per wire packet";
}

// What the supervisor decides before any set-up, from the command line, the caller's identity,
// the administrator's file and the captured environment; every check of them is made here.
struct ShellPlan {
  ShellSpec spec;
  UserIdentity user;
  Ipv4Net pool;
  std::optional<Ipv4> base;     // MAHIMAHI_BASE: must stay reachable
  std::string program_path;     // the command's file, found with the caller's rights
  int nice;                     // the ferry's priority (kNoPriorityChange: inherited)
  bool offload;                 // TUN offloads where the kernel has them (MAHIMAHI_OFFLOAD)
  bool offload_asked;           // MAHIMAHI_OFFLOAD=1: say why, if the kernel refuses
  std::string state_directory;  // rootless: the user's (rootless_state_directory)
  bool own_outside;             // rootless, where the caller's network is not the user's: make one
  std::string pasta;            // with own_outside, unless MAHIMAHI_WAY_OUT=none: pasta's file; else empty
};

ShellPlan plan_shell(int argc, char** argv, const ProgramInfo& info, const std::function<ShellSpec(int, char**)>& parse,
                     const UserEnvironment& env) {
  ShellSpec spec = parse(argc, argv);
  if (!spec.display_needed.empty()) {
    const char* display = env.get("DISPLAY");
    if (!display || !*display) throw UsageError(spec.display_needed);
  }
  const UserIdentity user = acquire_privileges(info.name, env.get(kRootlessVariable));
  const bool rootless = user.mode == PrivilegeMode::Rootless;
  std::string state_directory, pasta;
  // Rootless, where this process may not configure the network it is in (the outermost shell:
  // the host's), an outside of its own stands for it (rootless.hh).
  const bool own_outside = rootless && !spec.isolated && !can_configure_current_network();
  if (rootless) {
    check_rootless_support(!spec.isolated);
    state_directory = rootless_state_directory(env.get("XDG_RUNTIME_DIR"), env.get("HOME"), env.get("TMPDIR"));
    use_rootless_state_directory(state_directory);
    remove_unused_lock_files();
    const char* way_out = env.get(kWayOutVariable);
    const std::string_view way = way_out ? way_out : "";
    if (way != "" && way != "pasta" && way != "none")
      throw UsageError(std::string(kWayOutVariable) +
                       " must be pasta (the default: the host's network through pasta) " +
                       "or none (no way out), not \"" + printable(way, 40) + "\"");
    // The outermost shell (which makes an outside of its own) reaches the host through pasta,
    // which needs a route out: on a machine with none, the shell starts without a way out (it
    // needs none to reach MAHIMAHI_BASE or to replay), and says so.
    if (own_outside && way == "" && !has_default_route()) {
      std::cerr << info.name << ": this machine has no route out (no IPv4 default route), so the shell has no way "
                << "out either (as with " << kWayOutVariable << "=none)" << std::endl;
    } else if (own_outside && way != "none") {
      try {
        pasta = resolve_command("pasta", env.get("PATH"));
      } catch (const std::exception&) {
        throw UserError(std::string("this shell runs rootless (no setuid bit, not root), and reaches the network ") +
                        "outside through pasta, which is not installed (not in PATH); install it (apt install " +
                        "passt), or set " + kWayOutVariable + "=none for a shell with no way out");
      }
    }
  }
  const AdministratorConfig config = AdministratorConfig::load();
  const Ipv4Net pool = address_pool_from(env.get(kAddressPoolVariable));
  // Rootless, the addresses go only into namespaces of the user's own: any pool a root may use.
  if (!spec.isolated)
    check_address_pool(pool, user.uid == 0 || rootless, config.allowed_pools, kAdministratorConfigPath);
  std::optional<Ipv4> base;
  if (const char* b = env.get("MAHIMAHI_BASE")) base = Ipv4::parse(b);
  if (spec.command.empty()) spec.command = login_shell(user.uid);
  // Before any set-up: a mistyped command builds no network, and is reported as bash would.
  std::string program_path = resolve_program(spec.command[0], env.get("PATH"));

  const char* realtime_env = env.get(kRealtimeVariable);
  const int nice =
      (realtime_env && std::string_view(realtime_env) == "0") ? kNoPriorityChange : ferry_nice(user, config);
  // Offloads only change how many packets one system call moves, never what root does.
  const char* offload_env = env.get(kOffloadVariable);
  const std::string_view offload_value = offload_env ? offload_env : "";
  if (offload_env && offload_value != "0" && offload_value != "1")
    throw UsageError(std::string(kOffloadVariable) + " must be 0 (no TUN offloads) or 1 (offloads), not \"" +
                     printable(offload_value, 40) + "\"");
  return ShellPlan{std::move(spec),
                   user,
                   pool,
                   base,
                   std::move(program_path),
                   nice,
                   offload_value != "0",
                   offload_value == "1",
                   state_directory,
                   own_outside,
                   pasta};
}

// The guard's process, forked by the supervisor: into the shell's namespace (as root), then the
// drop, for good. It forks the command (the caller's signal mask and environment, exec) and
// reaps it and everything it leaves, also when the supervisor is killed.
// `signals` is the supervisor's signalfd, inherited: read in the guard, it gives the guard's own.
int guard_process(const ProgramInfo& info, const ShellPlan& plan, ShellNetwork& net, UserEnvironment& env,
                  const sigset_t& original_mask, const SignalFd& signals, pid_t supervisor,
                  FileDescriptor supervisor_alive, Nanos grace) {
  enter_shell_namespace(net);
  net.inner_namespace.close();
  net.command_userns.close();
  net.slot_claim.close();  // a writable root-owned file: not for the user's processes
  drop_privileges(plan.user);
  check_syscall("prctl(PR_SET_CHILD_SUBREAPER)", ::prctl(PR_SET_CHILD_SUBREAPER, 1));
  if (::getppid() != supervisor) return 1;
  const pid_t guard = ::getpid();
  const pid_t command = fork_child(info.name, [&]() -> int {
    ::prctl(PR_SET_PDEATHSIG, SIGHUP);
    if (::getppid() != guard) return 1;
    check_syscall("sigprocmask", ::sigprocmask(SIG_SETMASK, &original_mask, nullptr));
    env.restore_withheld();
    env.install();
    exec_command(info.name, plan.program_path, plan.spec.command);
  });
  Reaper guard_loop(info.name, printable(plan.spec.command[0], 200), command, {}, supervisor_alive.get(), grace);
  return guard_loop.run(signals);
}

int run_shell(int argc, char** argv, const ProgramInfo& info, const std::function<ShellSpec(int, char**)>& parse,
              UserEnvironment& env) {
  ShellPlan plan = plan_shell(argc, argv, info, parse, env);
  const ShellSpec& spec = plan.spec;
  const UserIdentity user = plan.user;
  const int nice = plan.nice;
  const sigset_t original_mask = kSupervisorSignals.block();
  SignalFd signals(kSupervisorSignals);
  const pid_t supervisor = ::getpid();
  // Orphans of the command's processes come to the supervisor, which ends them with the shell.
  check_syscall("prctl(PR_SET_CHILD_SUBREAPER)", ::prctl(PR_SET_CHILD_SUBREAPER, 1));

  const bool isolated = spec.isolated;
  WayOut way_out;  // destroyed after net: the outside's way out ends last
  ShellNetwork net;
  if (isolated) {
    ServerTcpSettings tcp = spec.isolated_tcp;  // the servers' and the command's: one namespace
    if (spec.tcp_ecn) tcp.ecn = spec.tcp_ecn;
    net = create_isolated_namespace(tcp);  // empty: the ferry asks for its addresses
  } else {
    // A rootless outermost shell's outside, reaching the host's network through pasta unless
    // MAHIMAHI_WAY_OUT=none.
    std::optional<Ipv4> dns_upstream;
    std::vector<Ipv4> host_resolvers;
    if (plan.own_outside) {
      const std::string resolv_conf = read_resolv_conf();
      const bool loopback_dns = !loopback_nameservers(resolv_conf).empty();
      // Resolvers at the host's own addresses: pasta gives the outside those addresses, where
      // they would answer themselves; their DNS goes to pasta's forwarder instead.
      if (!plan.pasta.empty()) host_resolvers = own_address_nameservers(resolv_conf);
      if (!plan.pasta.empty())
        way_out = WayOut(info.name, plan.pasta, plan.state_directory, loopback_dns || !host_resolvers.empty());
      enter_own_outside(user.uid, user.gid);
      if (!plan.pasta.empty()) {
        way_out.start();
        if (loopback_dns) dns_upstream = Ipv4::parse(kWayOutResolver);
      }
    }
    net = create_shell_network(spec.device_kind, plan.pool, plan.base,
                               {.offload = plan.offload,
                                .intercept = spec.intercept_tcp,
                                .refuse_quic = spec.refuse_quic,
                                .dns_upstream = dns_upstream,
                                // Through the way out, MAHIMAHI_BASE leads to the host's servers,
                                // as it does in the setuid mode.
                                .base_to_host = way_out.monitor() > 0,
                                .host_resolvers = host_resolvers,
                                .host_dns_forward = *Ipv4::parse(kWayOutResolver),
                                .tcp_ecn = spec.tcp_ecn});
    if (spec.verbose || (plan.offload_asked && !net.offload_refused.empty()))
      std::cerr << info.name << ": " << offload_summary(plan.offload, net) << "\n";
  }

  int startup[2];
  check_syscall("socketpair", ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, startup));
  FileDescriptor channel(startup[0]), ferry_channel(startup[1]);

  const char* prefix = env.get("MAHIMAHI_SHELL_PREFIX");
  const std::string outer_prefix = prefix ? prefix : "";
  // The clock of stacked shells' traces: passed on as the user gave it (the ferry parses it,
  // without root), or set here by the outermost shell that follows a trace.
  const char* outer_clock = env.get("MAHIMAHI_CLOCK_BASE");
  std::string clock_base = outer_clock ? outer_clock : "";
  const bool sets_clock = spec.follows_trace && clock_base.empty();
  if (sets_clock) clock_base = std::to_string(monotonic_now());
  // The set-up's freed heap back to the system before the ferry is forked: the supervisor then
  // waits, and both stay small for the shell's whole life.
  ::malloc_trim(0);
  const pid_t ferry = fork_child(info.name, [&] {
    raise_priority(nice);
    // A process group of its own: a `kill 0` by the command, or the caller's `kill %1`, reaches
    // the supervisor, which ends the shell in order, and not the ferry, which would stop early.
    ::setpgid(0, 0);
    if (isolated) enter_shell_namespace(net);  // its servers live there
    drop_privileges(user);
    env.install();  // the user's own variables (HOME, the CA's location), for the user's rights only
    // Dies with the supervisor, even on SIGKILL, so that the TUN devices vanish with it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != supervisor) return 1;
    channel.close();
    net.inner_namespace.close();
    net.command_userns.close();
    net.slot_claim.close();  // a writable root-owned file: not for the user's process
    const int channel_fd = ferry_channel.get();
    FerryEndpoints endpoints{
        net.outer_tun.get(), net.inner_tun.get(), &net.dns,           outer_prefix, net.intercepted.get(), {},
        net.offload,         clock_base,          net.addresses.inner};
    if (isolated) {
      endpoints.add_addresses = [channel_fd](const std::vector<Ipv4>& addresses) {
        request_addresses(channel_fd, addresses);
      };
    } else {
      endpoints.add_addresses = [](const std::vector<Ipv4>&) {
        throw std::logic_error("add_addresses is only for isolated shells");
      };
    }
    bool started = false;
    int status;
    try {
      status = spec.ferry(endpoints, [channel_fd, &started] {
        write_all(channel_fd, std::string_view(&kReady, 1));
        started = true;
      });
    } catch (const UserError& e) {
      if (!started) throw;  // the start-up's failure: reported as such by Startup
      // Once running (a log on a full disk): its words, and the shell ends with status 1.
      std::cerr << info.name << ": " << e.what() << std::endl;
      status = kFerryFailedSaidWhy;
    }
    // Any other failure once running: the ferries print their reason before returning one.
    if (started && status != 0 && status != kFerryFinished) status = kFerryFailedSaidWhy;
    // The supervisor may finish without waiting for our exit.
    write_all(channel_fd, std::string_view(status == kFerryFailedSaidWhy ? &kStoppedFailed : &kStopped, 1));
    return status;
  });
  net.outer_tun.close();  // the ferry holds the only copies now
  net.inner_tun.close();
  net.dns = DnsRelaySockets{};
  net.intercepted.close();
  ferry_channel.close();
  if (const auto status = Startup(info.name, ferry, channel.get(), signals, isolated ? &net : nullptr).run())
    return *status;

  prepare_environment(env, spec, net);
  if (sets_clock) env.set("MAHIMAHI_CLOCK_BASE", clock_base);
  // Only the supervisor holds the pipe's write end, and never writes: the guard sees end-of-file
  // when the supervisor is gone (the command gets the read end only until its exec).
  int alive[2];
  check_syscall("pipe2", ::pipe2(alive, O_CLOEXEC));
  FileDescriptor alive_read(alive[0]), alive_write(alive[1]);
  const Nanos grace = ending_grace(outer_prefix);
  const pid_t guard = fork_child(info.name, [&]() -> int {
    alive_write.close();
    channel.close();
    return guard_process(info, plan, net, env, original_mask, signals, supervisor, std::move(alive_read), grace);
  });
  alive_read.close();
  net.inner_namespace.close();
  net.command_userns.close();

  // A little more time than the guard's, so that it ends the command's processes itself (and
  // names those it had to end) before the supervisor would.
  Reaper supervisor_loop(info.name, printable(spec.command[0], 200), guard, {ferry, channel.get()}, -1,
                         grace + 200 * kNanosPerMs, way_out.monitor());
  return supervisor_loop.run(signals);
  // net's destructor removes the NAT table; the TUN devices went with the ferry.
}

}  // namespace

int run_packet_shell(int argc, char** argv, const ProgramInfo& info,
                     const std::function<ShellSpec(int, char**)>& parse) {
  // An ignored SIGCHLD, inherited from the caller, would make the kernel reap every child at
  // once: the supervisor could then neither wait for its helpers nor learn the command's status
  // ("waitpid: No child processes"). The command gets the default too.
  ::signal(SIGCHLD, SIG_DFL);
  UserEnvironment env = UserEnvironment::capture_and_clear();
  return run_tool(info.name, usage_line(info) + "\n", [&] { return run_shell(argc, argv, info, parse, env); });
}

Nanos trace_start(const FerryEndpoints& endpoints) {
  const Nanos now = monotonic_now();
  if (endpoints.clock_base.empty()) return now;
  const std::string& text = endpoints.clock_base;
  Nanos base = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), base);
  if (error != std::errc() || end != text.data() + text.size() || base <= 0 || base > now)
    throw UserError("MAHIMAHI_CLOCK_BASE=\"" + printable(text, 40) +
                    "\" is not an instant of this machine's monotonic clock (an outer shell sets it: unset it to "
                    "start this shell's traces at its own start)");
  return base;
}
