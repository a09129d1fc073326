// SPDX-License-Identifier: GPL-3.0-or-later
// Monkey Do's client emulator (monkey_clients.hh).
#include "monkey/monkey_clients.hh"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>

#include "http/http_parser.hh"
#include "http/start_line.hh"
#include "util/epoll.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/timerfd.hh"

namespace {
constexpr uint64_t kTimerTag = UINT64_MAX, kStopTag = UINT64_MAX - 1;
constexpr size_t kMaxErrors = 10;

enum class Phase { Waiting, Connecting, Thinking, Sending, Receiving, Finished };

struct Connection {
  const ClientConnectionPlan* plan = nullptr;
  size_t first_result = 0;  // its exchanges' place in the results
  FileDescriptor fd;
  Phase phase = Phase::Waiting;
  size_t exchange = 0;
  std::string head;
  uint64_t head_sent = 0, padding_left = 0, to_receive = 0;
  std::unique_ptr<HttpParser> response;  // against a real server: its responses' framing
};

class Clients {
 public:
  Clients(const std::vector<ClientConnectionPlan>& plan, Ipv4 server, uint16_t port, const ClientOptions& options)
      : plan_(plan), server_(socket_address(server, port)), options_(options), padding_(1 << 16, 'x') {
    connections_.resize(plan.size());
    for (size_t i = 0; i < plan.size(); i++) {
      connections_[i].plan = &plan[i];
      connections_[i].first_result = result_.exchanges.size();
      for (const ClientExchangePlan& e : plan[i].exchanges)
        result_.exchanges.push_back({plan[i].id, e.request.index, 0, 0, false});
    }
    result_.connections = plan.size();
    result_.local_ports.assign(plan.size(), 0);
  }

  ClientRunResult run() {
    const Nanos origin = monotonic_now() + 50 * kNanosPerMs;
    for (size_t i = 0; i < plan_.size(); i++) due_.push(origin + plan_[i].start, i);
    epoll_.add(timer_.fd(), EPOLLIN, kTimerTag);
    if (options_.stop_fd >= 0) epoll_.add(options_.stop_fd, EPOLLIN, kStopTag);
    Nanos last_progress = monotonic_now();
    epoll_event events[256];
    while (finished_ < plan_.size()) {
      timer_.arm(due_.next());
      const Nanos now = monotonic_now();
      const Nanos wait = options_.stall - (now - last_progress);
      if (wait <= 0) return abandon("no progress for " + std::to_string(options_.stall / kNanosPerSec) + " s");
      const int n = epoll_.wait(events, 256, wait);
      if (n > 0) last_progress = monotonic_now();
      for (int i = 0; i < n; i++) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kStopTag) return abandon("ended by a signal");
        if (tag == kTimerTag) {
          timer_.fired();
          run_due();
        } else {
          step(connections_[tag], events[i].events);
        }
      }
    }
    return std::move(result_);
  }

 private:
  ClientRunResult abandon(const std::string& why) {
    for (Connection& c : connections_)
      if (c.phase != Phase::Finished) fail(c, why);
    return std::move(result_);
  }

  void fail(Connection& c, const std::string& why) {
    if (c.phase == Phase::Finished) return;
    result_.failed++;
    if (result_.errors.size() < kMaxErrors)
      result_.errors.push_back("connection " + std::to_string(c.plan->id) + " (from " + c.plan->client.str() +
                               "): " + why);
    finish(c);
  }

  void finish(Connection& c) {
    if (c.fd.valid()) {
      epoll_.remove(c.fd.get());
      c.fd = FileDescriptor();
      open_--;
    }
    c.phase = Phase::Finished;
    finished_++;
    while (!waiting_.empty() && open_ < options_.max_open) {
      const size_t next = waiting_.front();
      waiting_.pop_front();
      open(connections_[next]);
    }
  }

  size_t index_of(const Connection& c) const { return static_cast<size_t>(&c - connections_.data()); }

  void run_due() {
    const Nanos now = monotonic_now();
    while (!due_.empty() && due_.next() <= now) {
      Connection& c = connections_[due_.pop()];
      if (c.phase == Phase::Waiting) {
        if (open_ >= options_.max_open) {
          waiting_.push_back(index_of(c));
        } else {
          open(c);
        }
      } else if (c.phase == Phase::Thinking) {
        start_request(c);
      }
    }
  }

  void open(Connection& c) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(c, std::string("socket: ") + std::strerror(errno));
    c.fd = FileDescriptor(fd);
    open_++;
    const sockaddr_in local = socket_address(c.plan->client, 0);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
      return fail(c, std::string("binding to its address: ") + std::strerror(errno));
    sockaddr_in bound{};
    socklen_t bound_length = sizeof bound;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length) == 0)
      result_.local_ports[index_of(c)] = ntohs(bound.sin_port);
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&server_), sizeof server_) != 0 && errno != EINPROGRESS)
      return fail(c, std::string("connect: ") + std::strerror(errno));
    c.phase = Phase::Connecting;
    epoll_.add(fd, EPOLLOUT, index_of(c));
  }

  void next_exchange(Connection& c, Nanos now) {
    if (c.exchange >= c.plan->exchanges.size()) {
      ::shutdown(c.fd.get(), SHUT_WR);
      return finish(c);
    }
    c.phase = Phase::Thinking;
    epoll_.modify(c.fd.get(), 0, index_of(c));
    due_.push(now + c.plan->exchanges[c.exchange].think, index_of(c));
  }

  void start_request(Connection& c) {
    const ClientExchangePlan& plan = c.plan->exchanges[c.exchange];
    const MonkeyRequest& r = plan.request;
    if (plan.http) {
      c.head = plan.http->head;
      c.padding_left = plan.http->body;
      if (!c.response) {
        c.response = std::make_unique<HttpParser>(HttpParser::Direction::Response);
        c.response->set_body_limit(1);  // counted, not kept
      }
      c.response->expect_response_to(plan.http->method);
      c.to_receive = 1;  // until the parser says the response is complete
    } else {
      c.head = encode_request_head(r);
      c.padding_left = r.request_bytes > c.head.size() ? r.request_bytes - c.head.size() : 0;
      c.to_receive = r.response_bytes;
    }
    c.head_sent = 0;
    c.phase = Phase::Sending;
    result_.exchanges[c.first_result + c.exchange].sent = monotonic_now();
    send_more(c);
  }

  void send_more(Connection& c) {
    while (c.head_sent < c.head.size() || c.padding_left > 0) {
      ssize_t n;
      if (c.head_sent < c.head.size()) {
        // The head and its padding leave together, in the segments the traced request filled
        // (Nagle's algorithm is off: without MSG_MORE the head would go alone, and the request's
        // last byte reach the server a packet's serialisation later).
        n = ::send(c.fd.get(), c.head.data() + c.head_sent, c.head.size() - c.head_sent,
                   MSG_NOSIGNAL | (c.padding_left ? MSG_MORE : 0));
        if (n > 0) c.head_sent += static_cast<uint64_t>(n);
      } else {
        n = ::send(c.fd.get(), padding_.data(), std::min<uint64_t>(c.padding_left, padding_.size()), MSG_NOSIGNAL);
        if (n > 0) c.padding_left -= static_cast<uint64_t>(n);
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return epoll_.modify(c.fd.get(), EPOLLOUT, index_of(c));
      if (n < 0) return fail(c, std::string("sending: ") + std::strerror(errno));
    }
    c.phase = Phase::Receiving;
    epoll_.modify(c.fd.get(), EPOLLIN, index_of(c));
    if (c.to_receive == 0) response_done(c);
  }

  void response_done(Connection& c) {
    const Nanos now = monotonic_now();
    ClientExchangeResult& r = result_.exchanges[c.first_result + c.exchange];
    r.received = now;
    r.done = true;
    c.exchange++;
    next_exchange(c, now);
  }

  // Whether the real server's response to the current request is complete (then the exchange is
  // done); interim responses (100 Continue) are passed over. Bytes after it (a response sent
  // unasked) fail the connection when they come, as the parser then has one for no request.
  bool http_response_done(Connection& c) {
    while (c.response->has_completed()) {
      HttpParser::Completed m = c.response->pop_completed();
      if (m.interim) continue;
      result_.exchanges[c.first_result + c.exchange].status =
          three_digit_status(split_status_line(m.message.first_line).code).value_or(0);
      response_done(c);
      return true;
    }
    return false;
  }

  void step(Connection& c, uint32_t events) {
    if (c.phase == Phase::Connecting) {
      int error = 0;
      socklen_t length = sizeof error;
      (void)::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) return fail(c, std::string("connect: ") + std::strerror(error));
      return next_exchange(c, monotonic_now());
    }
    if (c.phase == Phase::Sending && (events & EPOLLOUT)) return send_more(c);
    if (c.phase == Phase::Receiving) {
      char buffer[64 * 1024];
      for (;;) {
        const ssize_t n = ::read(c.fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (c.response) {
          if (n < 0) return fail(c, std::strerror(errno));
          if (n == 0) {
            // A response that ends with the connection (no length given) is whole now.
            if (c.response->finish() && http_response_done(c)) return;
            return fail(c, "the server closed the connection during exchange " + std::to_string(c.exchange + 1));
          }
          result_.exchanges[c.first_result + c.exchange].response_bytes += static_cast<uint64_t>(n);
          c.response->feed(std::string_view(buffer, static_cast<size_t>(n)));
          if (c.response->state() == HttpParser::State::Error)
            return fail(c, "the server's response is not HTTP/1.x: " + c.response->error());
          if (http_response_done(c)) return;
          continue;
        }
        if (n <= 0) return fail(c, n == 0 ? "the server closed the connection" : std::strerror(errno));
        if (static_cast<uint64_t>(n) > c.to_receive) return fail(c, "the server sent more than the response");
        c.to_receive -= static_cast<uint64_t>(n);
        result_.exchanges[c.first_result + c.exchange].response_bytes += static_cast<uint64_t>(n);
        if (c.to_receive == 0) return response_done(c);
      }
    }
    if (events & (EPOLLERR | EPOLLHUP)) fail(c, "the connection broke");
  }

  const std::vector<ClientConnectionPlan>& plan_;
  sockaddr_in server_;
  ClientOptions options_;
  std::string padding_;
  std::vector<Connection> connections_;
  std::deque<size_t> waiting_;
  ClientRunResult result_;
  Epoll epoll_;
  TimerFd timer_;
  DueQueue due_;
  size_t open_ = 0, finished_ = 0;
};
}  // namespace

ClientRunResult run_clients(const std::vector<ClientConnectionPlan>& plan, Ipv4 server, uint16_t port,
                            const ClientOptions& options) {
  Clients clients(plan, server, port, options);
  return clients.run();
}
