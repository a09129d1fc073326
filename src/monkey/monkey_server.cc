// SPDX-License-Identifier: GPL-3.0-or-later
// Monkey Do's server emulator (monkey_server.hh).
#include "monkey/monkey_server.hh"

#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "monkey/monkey_wire.hh"
#include "util/epoll.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/timerfd.hh"

namespace {
constexpr uint64_t kListenTag = 0, kTimerTag = 1, kFirstConnection = 2;
constexpr int kSendingLowWater = 256 * 1024;  // refill the socket while this much is still unsent
constexpr size_t kMaxPending = 64 * 1024;     // bytes read past a request before its answer

enum class Phase { Head, Body, Waiting, Sending, Draining };

struct Connection {
  FileDescriptor fd;
  Phase phase = Phase::Head;
  std::string head;     // the head line so far
  std::string pending;  // bytes read past the current request
  MonkeyRequest request;
  std::vector<ServerPart> parts;  // the current response's
  size_t part = 0;
  bool planned = false;  // its Nagle setting made, from the plan, at its first request
  uint64_t body_left = 0, to_send = 0;
  Nanos first_byte = 0;
};

class Server {
 public:
  explicit Server(const MonkeyServerOptions& options) : options_(options), zeros_(1 << 20, 'y') {}

  int run(const std::function<void()>& listening) {
    listener_ =
        FileDescriptor(check_syscall("socket", ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
    const int one = 1;
    (void)::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const sockaddr_in address = socket_address(options_.address, options_.port);
    if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
      throw SystemError("binding the server emulator to " + options_.address.str() + ":" +
                        std::to_string(options_.port));
    check_syscall("listen", ::listen(listener_.get(), 4096));
    epoll_.add(listener_.get(), EPOLLIN, kListenTag);
    epoll_.add(timer_.fd(), EPOLLIN, kTimerTag);
    listening();
    epoll_event events[256];
    while (!stopped_) {
      timer_.arm(due_.next());
      const int n = epoll_.wait(events, 256, kNever);
      for (int i = 0; i < n && !stopped_; i++) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kListenTag) {
          accept_all();
        } else if (tag == kTimerTag) {
          timer_.fired();
          answer_due();
        } else if (const auto it = connections_.find(tag); it != connections_.end()) {
          handle(tag, *it->second, events[i].events);
        }
      }
    }
    return status_;
  }

 private:
  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a connection gone before it was accepted
      auto c = std::make_unique<Connection>();
      c->fd = FileDescriptor(fd);
      if (connections_.size() >= options_.max_connections) continue;  // closed: bounded
      (void)::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &kSendingLowWater, sizeof kSendingLowWater);
      if (!options_.congestion_control.empty() &&
          ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, options_.congestion_control.data(),
                       static_cast<socklen_t>(options_.congestion_control.size())) != 0)
        throw SystemError("setting the congestion control " + options_.congestion_control);
      const uint64_t tag = next_tag_++;
      epoll_.add(fd, EPOLLIN, tag);
      connections_[tag] = std::move(c);
    }
  }

  void close(uint64_t tag) {
    const auto it = connections_.find(tag);
    if (it == connections_.end()) return;
    epoll_.remove(it->second->fd.get());
    connections_.erase(it);
  }

  void handle(uint64_t tag, Connection& c, uint32_t events) {
    if (c.phase == Phase::Sending || c.phase == Phase::Draining) {
      if (events & (EPOLLERR | EPOLLHUP)) return close(tag);
      if (events & EPOLLOUT) send_more(tag, c);
      return;
    }
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP))) return;
    char buffer[64 * 1024];
    const ssize_t n = ::read(c.fd.get(), buffer, sizeof buffer);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return close(tag);
    if (n < 0) return;
    consume(tag, c, std::string_view(buffer, static_cast<size_t>(n)), monotonic_now());
  }

  // Bytes of requests, as they come; stops at a request's end (the rest waits for its answer).
  void consume(uint64_t tag, Connection& c, std::string_view bytes, Nanos now) {
    while (!bytes.empty()) {
      if (c.phase == Phase::Waiting || c.phase == Phase::Sending || c.phase == Phase::Draining) {
        if (c.pending.size() + bytes.size() > kMaxPending) return close(tag);
        c.pending.append(bytes);
        return;
      }
      if (c.phase == Phase::Head) {
        if (c.head.empty()) c.first_byte = now;
        const size_t newline = bytes.find('\n');
        const size_t take = newline == std::string_view::npos ? bytes.size() : newline + 1;
        c.head.append(bytes.substr(0, take));
        bytes.remove_prefix(take);
        if (c.head.size() > kMaxRequestHead) return close(tag);
        if (newline == std::string_view::npos) return;
        const ParsedHead head = parse_request_head(std::string_view(c.head).substr(0, c.head.size() - 1));
        if (head.stop) return stop(c, head.stop->status);
        if (!head.request) return close(tag);
        c.request = *head.request;
        if (!c.planned) {
          c.planned = true;
          const int nodelay = options_.plan.nodelay.count(c.request.connection) ? 1 : 0;
          (void)::setsockopt(c.fd.get(), IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
        }
        const auto planned = options_.plan.parts.find({c.request.connection, c.request.index});
        uint64_t planned_bytes = 0;
        if (planned != options_.plan.parts.end())
          for (const ServerPart& p : planned->second) planned_bytes += p.bytes;
        // The plan's parts if they add up to what the request asks for, else one part.
        if (planned != options_.plan.parts.end() && planned_bytes == c.request.response_bytes) {
          c.parts = planned->second;
        } else {
          c.parts = {{c.request.response_bytes, 0}};
        }
        c.part = 0;
        c.body_left = c.request.request_bytes > c.head.size() ? c.request.request_bytes - c.head.size() : 0;
        c.head.clear();
        c.phase = Phase::Body;
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(c.body_left, bytes.size()));
      c.body_left -= take;
      bytes.remove_prefix(take);
      if (c.body_left == 0) {
        c.phase = Phase::Waiting;
        due_.push(now + static_cast<Nanos>(c.request.delay_us) * 1000, tag);
        epoll_.modify(c.fd.get(), 0, tag);  // nothing read until it is answered
      }
    }
  }

  void answer_due() {
    const Nanos now = monotonic_now();
    while (!due_.empty() && due_.next() <= now) {
      const uint64_t tag = due_.pop();
      const auto it = connections_.find(tag);
      if (it == connections_.end()) continue;
      Connection& c = *it->second;
      c.phase = Phase::Sending;
      c.to_send = c.parts[c.part].bytes;
      send_more(tag, c);
    }
  }

  void send_more(uint64_t tag, Connection& c) {
    while (c.phase == Phase::Sending && c.to_send > 0) {
      const ssize_t n = ::send(c.fd.get(), zeros_.data(), std::min<uint64_t>(c.to_send, zeros_.size()), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return epoll_.modify(c.fd.get(), EPOLLOUT, tag);
      if (n < 0) return close(tag);
      c.to_send -= static_cast<uint64_t>(n);
    }
    if (c.phase == Phase::Sending) {
      // All written: wait for the socket to have sent it all (writable below a low-water mark of 1).
      c.phase = Phase::Draining;
      const int one = 1;
      (void)::setsockopt(c.fd.get(), IPPROTO_TCP, TCP_NOTSENT_LOWAT, &one, sizeof one);
    }
    int unsent = 0;
    if (::ioctl(c.fd.get(), SIOCOUTQNSD, &unsent) != 0) return close(tag);
    if (unsent > 0) return epoll_.modify(c.fd.get(), EPOLLOUT, tag);
    (void)::setsockopt(c.fd.get(), IPPROTO_TCP, TCP_NOTSENT_LOWAT, &kSendingLowWater, sizeof kSendingLowWater);
    if (++c.part < c.parts.size()) {  // the next part, after the application's pause
      c.phase = Phase::Waiting;
      epoll_.modify(c.fd.get(), 0, tag);
      due_.push(monotonic_now() + c.parts[c.part].pause, tag);
      return;
    }
    served_ +=
        served_line({c.request.connection, c.request.index, c.first_byte, monotonic_now(), c.request.response_bytes});
    c.phase = Phase::Head;
    epoll_.modify(c.fd.get(), EPOLLIN, tag);
    if (!c.pending.empty()) {
      const std::string pending = std::move(c.pending);
      c.pending.clear();
      consume(tag, c, pending, monotonic_now());
    }
  }

  // The log of what was served, on the stopping connection, then the end.
  void stop(Connection& c, int status) {
    const int flags = ::fcntl(c.fd.get(), F_GETFL);
    (void)::fcntl(c.fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    write_all(c.fd.get(), served_);
    ::shutdown(c.fd.get(), SHUT_WR);
    status_ = status;
    stopped_ = true;
  }

  MonkeyServerOptions options_;
  std::string zeros_;
  FileDescriptor listener_;
  Epoll epoll_;
  TimerFd timer_;
  DueQueue due_;
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;
  uint64_t next_tag_ = kFirstConnection;
  std::string served_;
  bool stopped_ = false;
  int status_ = 0;
};
}  // namespace

int run_monkey_server(const MonkeyServerOptions& options, const std::function<void()>& listening) {
  Server server(options);
  return server.run(listening);
}
