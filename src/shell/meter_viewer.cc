// SPDX-License-Identifier: GPL-3.0-or-later
#include "shell/meter_viewer.hh"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "util/child_process.hh"
#include "util/exception.hh"

#ifndef MAHIMAHI_LIBEXEC_DIR
#define MAHIMAHI_LIBEXEC_DIR ""
#endif

RemoteMeters::RemoteMeters(const char* program, const MeterOptions& options, Nanos origin)
    : program_(program), options_(options), origin_(origin) {
  message_.resize(meter_view::kMaxMessage);
}

void RemoteMeters::start() {
  const std::string path = viewer_path();
  int pair[2];
  check_syscall("socketpair", ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair));
  FileDescriptor ours(pair[0]), theirs(pair[1]);
  const std::string graphs = std::string(options_.uplink ? "1" : "0") + (options_.downlink ? "1" : "0") +
                             (options_.uplink_delay ? "1" : "0") + (options_.downlink_delay ? "1" : "0");
  const std::vector<std::string> args = {path,
                                         program_,
                                         graphs,
                                         options_.output,
                                         std::to_string(options_.snapshot_interval_s),
                                         options_.stats ? "1" : "0",
                                         std::to_string(origin_),
                                         titles_[0],
                                         titles_[1]};
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw SystemError("fork", errno);
  if (pid_ == 0) {
    // The viewer: descriptor 3 is its socket, nothing else of the ferry's (its TUN devices);
    // none of the ferry's blocked signals (its signalfd's) and not its raised priority (the
    // packets come first). It ends when the ferry does: end of file, or SIGTERM if the ferry
    // dies; a terminal's signals are not for it (the shell decides when the graphs end).
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(sig, SIG_IGN);
    for (int sig : {SIGTERM, SIGPIPE, SIGCHLD}) ::signal(sig, SIG_DFL);
    if (::getpriority(PRIO_PROCESS, 0) < 0) ::setpriority(PRIO_PROCESS, 0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
    if (::dup2(theirs.get(), meter_view::kSocketFd) < 0 || ::fcntl(meter_view::kSocketFd, F_SETFD, 0) < 0) ::_exit(127);
    ::close_range(meter_view::kSocketFd + 1, ~0U, 0);
    ::execv(path.c_str(), argv.data());
    const std::string error = "E" + std::string("cannot run the meter viewer ") + path + ": " + std::strerror(errno);
    (void)!::send(meter_view::kSocketFd, error.data(), error.size(), MSG_NOSIGNAL);
    ::_exit(127);
  }
  theirs = FileDescriptor();
  socket_ = std::move(ours);
  // Its answer: the windows or files are open, or why not.
  pollfd p{socket_.get(), POLLIN, 0};
  int ready = 0;
  while ((ready = ::poll(&p, 1, meter_view::kStartSeconds * 1000)) < 0 && errno == EINTR) {
  }
  std::string answer(4096, '\0');
  const ssize_t n = ready > 0 ? ::recv(socket_.get(), answer.data(), answer.size(), 0) : -1;
  if (n > 0 && answer[0] == 'K') return;
  stop();
  if (n > 1 && answer[0] == 'E') throw UserError(answer.substr(1, static_cast<size_t>(n) - 1));
  throw UserError("the meter viewer " + path +
                  (ready == 0 ? " did not open the graphs within " + std::to_string(meter_view::kStartSeconds) + " s"
                              : " ended before opening the graphs"));
}

void RemoteMeters::feed(int d, std::span<const LinkEvent> events, Nanos now) {
  if (!socket_.valid()) return;
  size_t done = 0;
  do {  // at least one message: the time goes on even without events (a live graph scrolls)
    const size_t count = std::min(events.size() - done, meter_view::kMaxEventsPerMessage);
    std::memset(message_.data(), 0, meter_view::kHeaderBytes);
    message_[0] = 'F';
    message_[1] = static_cast<char>(d);
    std::memcpy(message_.data() + 8, &now, sizeof now);
    if (count) std::memcpy(message_.data() + meter_view::kHeaderBytes, events.data() + done, count * sizeof(LinkEvent));
    send(meter_view::kHeaderBytes + count * sizeof(LinkEvent));
    done += count;
  } while (done < events.size() && socket_.valid());
}

void RemoteMeters::finish(Nanos end) {
  if (!socket_.valid()) return;
  std::memset(message_.data(), 0, meter_view::kHeaderBytes);
  message_[0] = 'X';
  std::memcpy(message_.data() + 8, &end, sizeof end);
  // The last message waits for room: the final files need every figure.
  const int flags = ::fcntl(socket_.get(), F_GETFL);
  if (flags >= 0) ::fcntl(socket_.get(), F_SETFL, flags & ~O_NONBLOCK);
  (void)!::send(socket_.get(), message_.data(), meter_view::kHeaderBytes, MSG_NOSIGNAL);
  socket_ = FileDescriptor();  // end of file: the viewer ends after the final files
  wait();
}

std::string RemoteMeters::viewer_path() {
  const std::string installed = std::string(MAHIMAHI_LIBEXEC_DIR) + "/mm-meter-view";
  if (MAHIMAHI_LIBEXEC_DIR[0] && ::access(installed.c_str(), X_OK) == 0) return installed;
  if (const std::optional<std::string> self = own_executable()) {
    const std::string beside = self->substr(0, self->find_last_of('/') + 1) + "mm-meter-view";
    if (::access(beside.c_str(), X_OK) == 0) return beside;
  }
  throw UserError("the live graphs of this shell are drawn by mm-meter-view, which is not installed in " + installed +
                  ": install mahimahi (make install), or use mm-link's or mm-meter's graphs");
}

void RemoteMeters::send(size_t bytes) {
  const ssize_t n = ::send(socket_.get(), message_.data(), bytes, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return;  // full: a gap in the graph
  socket_ = FileDescriptor();  // the viewer is gone (its windows closed and it failed): the shell goes on
}

void RemoteMeters::wait() {
  if (pid_ <= 0) return;
  int status;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void RemoteMeters::stop() {
  socket_ = FileDescriptor();
  if (pid_ > 0) ::kill(pid_, SIGKILL);
  wait();
}
