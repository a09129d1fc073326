// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Local Proxy's own parts (local_proxy.cc: the loop, the accepted connections and their
// bookkeeping; local_connection.cc: a browser connection's phases, from the sniff and its TLS to
// its requests answered, waiting or forwarded, and its tunnel; local_bulk.cc: the bulk connection
// to the Remote Proxy and the one opened ahead): its epoll keys, bounds, a browser connection, a
// bulk, and the connections' helpers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "cumulus/bulk.hh"
#include "cumulus/local_proxy.hh"
#include "http/http_parser.hh"
#include "tls/tls_stream.hh"
#include "util/clock.hh"
#include "util/file_descriptor.hh"

namespace local_proxy {
constexpr uint64_t kListenerKey = 0, kStopKey = 1, kBulkKey = 2, kReadyKey = 3;
constexpr uint64_t kUpstreamBit = 1;  // key = id << 1 | 1 for a client's upstream connection
constexpr size_t kReadSize = 64 * 1024;
constexpr size_t kHighWater = 256 * 1024;
constexpr Nanos kConnectTimeout = 10 * kNanosPerSec;
constexpr Nanos kStopWait = 10 * kNanosPerSec;
// What one browser connection may have sent that is not answered yet: requests are held whole.
constexpr size_t kMaxQueuedRequests = 64;
constexpr size_t kMaxHeldRequests = 64u << 20;  // the most the shell's end waits for a bulk response
// The browser's connections at once, and what all of them may hold unanswered.
constexpr size_t kMaxClients = 512;
constexpr size_t kMaxHeldTotal = 256u << 20;

inline std::string address_text(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// A non-blocking TCP connection on its way to `to`; an invalid descriptor with errno if it failed at once.
inline FileDescriptor connect_to(const sockaddr_in& to) {
  FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  const int one = 1;
  (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS) {
    const int saved = errno;
    fd = FileDescriptor();
    errno = saved;
  }
  return fd;
}

// The error a non-blocking connect ended with (0: connected).
inline int connect_error(int fd) {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}
}  // namespace local_proxy

struct LocalProxy::Client {
  enum class Phase { Sniffing, ClientTls, Http, Tunnel };
  enum class Head { Idle, Waiting, Forwarding };
  uint64_t id = 0;
  TlsStream client, upstream;
  uint32_t client_interest = 0, upstream_interest = 0;
  Phase phase = Phase::Sniffing;
  sockaddr_in destination{};
  std::string server_name;  // SNI
  bool https = false;
  HttpParser requests{HttpParser::Direction::Request};
  std::unique_ptr<HttpParser> responses;  // of the current upstream connection
  std::deque<HttpMessage> queue;          // requests not answered yet; the front is being answered
  Head head = Head::Idle;
  bool upstream_open = false, upstream_connected = false, upstream_tls_done = false;
  Nanos upstream_deadline = 0;
  std::string upstream_waiting;  // bytes for the origin, sent once its connection is ready
  bool client_read_closed = false;
  bool close_when_flushed = false;
  size_t unanswered_bytes = 0;  // of the requests in the queue and the one being parsed (bounded)
  bool dead = false;

  std::string where() const {
    return local_proxy::address_text(destination) + (server_name.empty() ? "" : " (" + server_name + ")");
  }
};

struct LocalProxy::Bulk {
  FileDescriptor fd;
  bool connected = false;
  std::string url;
  std::string request;  // sent once connected
  size_t request_sent = 0;
  BulkDecoder decoder;
  Nanos started = 0, last_activity = 0;
  uint64_t pairs = 0;
};
