// SPDX-License-Identifier: GPL-3.0-or-later
// The reapers of a shell's processes (reaper.hh): the guard's and the supervisor's loop.
#include "shell/reaper.hh"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>

#include "shell/startup_channel.hh"
#include "util/child_process.hh"
#include "util/text.hh"

namespace {
class Reaper {
 public:
  using Ferry = ReapedFerry;
  // `supervisor_fd`: the guard's end of a pipe the supervisor holds open (-1 for the supervisor).
  // `spared`: a child that is not the command's and ends on its own after the reaper (a rootless
  // shell's way out), or -1.
  Reaper(const std::string& program, const std::string& command_name, pid_t command, Ferry ferry, int supervisor_fd,
         Nanos grace, std::vector<pid_t> spared = {})
      : program_(program),
        command_name_(command_name),
        command_(command),
        ferry_(ferry.pid),
        ferry_status_fd_(ferry.status_fd),
        supervisor_fd_(supervisor_fd),
        grace_(grace),
        spared_(std::move(spared)) {}

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
      if (pid <= 0 || pid == ferry_ || std::find(spared_.begin(), spared_.end(), pid) != spared_.end()) continue;
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
    if (n != 1 || byte != kFerryStopped) {
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
  std::vector<pid_t> spared_;
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
}  // namespace

Nanos ending_grace(const std::string& outer_prefix) {
  const auto depth = std::count(outer_prefix.begin(), outer_prefix.end(), '[');
  return std::max<Nanos>(300, 2000 - 150 * depth) * kNanosPerMs;
}

int run_reaper(const std::string& program, const std::string& command_name, pid_t main_child, ReapedFerry ferry,
               int supervisor_fd, Nanos grace, const std::vector<pid_t>& spared, const SignalFd& signals) {
  return Reaper(program, command_name, main_child, ferry, supervisor_fd, grace, spared).run(signals);
}
