// SPDX-License-Identifier: GPL-3.0-or-later
// The start-up channel's two sides (startup_channel.hh): the ferry's request for addresses, and
// the supervisor's reading of the channel until the ferry is ready.
#include "shell/startup_channel.hh"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "shell/root_helper.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {
constexpr char kAddAddresses = 'A', kAdded = 'K', kRefused = 'E';
constexpr size_t kMaxRefusal = 2000;

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
      if (eof || type == kFerryStopped) return ferry_ended();
      if (refused_) continue;  // whatever it still sends: wait for it to end
      if (type == kFerryReady) return std::nullopt;
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
        if (eof || byte == kFerryStopped) break;
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
}  // namespace

bool interrupting(int signo) { return signo == SIGINT || signo == SIGTERM || signo == SIGHUP || signo == SIGQUIT; }

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

std::optional<int> run_startup(const std::string& program, pid_t ferry, int channel, const SignalFd& signals,
                               const ShellNetwork* isolated_ns) {
  return Startup(program, ferry, channel, signals, isolated_ns).run();
}
