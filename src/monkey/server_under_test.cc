// SPDX-License-Identifier: GPL-3.0-or-later
// The server under test of a Monkey Do replay, started and stopped (server_under_test.hh).
#include "monkey/server_under_test.hh"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>

#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"
#include "util/text.hh"

namespace {
int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return 128 + WTERMSIG(wait_status);
}

std::string how(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  return std::string("was killed by ") + ::strsignal(WTERMSIG(wait_status));
}

// Ends the server's process group: SIGTERM, then SIGKILL after kStopGrace. Returns whether the
// server had to be killed.
bool end_server(pid_t pid, bool reaped, const SignalFd& signals) {
  ::kill(-pid, SIGTERM);
  const Nanos deadline = monotonic_now() + kStopGrace;
  while (!reaped) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    const Nanos left = deadline - monotonic_now();
    if (left <= 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return true;
    }
    pollfd p{signals.fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left / kNanosPerMs) + 1) > 0) (void)signals.read_signal();
  }
  ::kill(-pid, SIGKILL);  // what the server left behind in its group
  return false;
}
}  // namespace

int run_server_under_test(const std::string& stop_fifo, const std::vector<std::string>& command) {
  // Read and write, so that the FIFO never reads as ended while no writer has it open.
  FileDescriptor fifo(::open(stop_fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fifo.valid() || ::fstat(fifo.get(), &st) != 0 || !S_ISFIFO(st.st_mode))
    throw UserError("--stop-fifo " + stop_fifo + " is not a FIFO to read (mm-monkey do makes it and starts serve so)");
  if (command.empty()) throw UserError("serve --stop-fifo needs the server's COMMAND after --");
  const std::string name = printable(command[0], 100);
  const SignalSet handled{SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  const sigset_t original = handled.block();
  SignalFd signals(handled);
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork");
  if (pid == 0) {
    ::setpgid(0, 0);
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    std::vector<char*> argv;
    for (const std::string& w : command) argv.push_back(const_cast<char*>(w.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::cerr << "mm-monkey serve: cannot run the server under test " << name << ": " << std::strerror(errno)
              << std::endl;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // as the child does: whichever runs first
  bool reaped = false;
  std::string line;
  for (;;) {
    pollfd p[2] = {{fifo.get(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll");
    }
    if (p[1].revents & POLLIN) {
      const signalfd_siginfo s = signals.read_signal();
      if (s.ssi_signo == SIGCHLD) {
        int status = 0;
        if (!reaped && ::waitpid(pid, &status, WNOHANG) == pid) {
          reaped = true;
          if (exit_status_of(status) != 0) {
            std::cerr << "mm-monkey serve: the server under test " << name << " " << how(status)
                      << " before the replay ended" << std::endl;
            ::kill(-pid, SIGKILL);
            return exit_status_of(status);
          }
          // 0: it went into the background; its processes are ended with the shell.
        }
      } else {
        // The shell is being ended: the server goes with it.
        end_server(pid, reaped, signals);
        return 128 + static_cast<int>(s.ssi_signo);
      }
    }
    if (p[0].revents & POLLIN) {
      char buffer[32];
      const ssize_t n = ::read(fifo.get(), buffer, sizeof buffer);
      if (n > 0) line.append(buffer, static_cast<size_t>(n));
      const size_t newline = line.find('\n');
      if (newline == std::string::npos) {
        if (line.size() > 16) throw UserError("--stop-fifo " + stop_fifo + ": not a status line");
        continue;
      }
      const std::optional<uint64_t> status = decimal_value(std::string_view(line).substr(0, newline));
      if (!status || *status > 255) throw UserError("--stop-fifo " + stop_fifo + ": not a status line");
      if (end_server(pid, reaped, signals))
        std::cerr << "mm-monkey serve: the server under test " << name << " did not end within "
                  << kStopGrace / kNanosPerSec << " s of SIGTERM: killed" << std::endl;
      return static_cast<int>(*status);
    }
  }
}

bool stop_server_under_test(const std::string& stop_fifo, int status) {
  FileDescriptor fifo(::open(stop_fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fifo.valid()) return false;
  const std::string line = std::to_string(status) + "\n";
  return ::write(fifo.get(), line.data(), line.size()) == static_cast<ssize_t>(line.size());
}
