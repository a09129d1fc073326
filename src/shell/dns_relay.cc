// SPDX-License-Identifier: GPL-3.0-or-later
// The DNS relay for loopback resolvers, run by the ferry after the drop (see dns_relay.hh).
#include "shell/dns_relay.hh"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <thread>

namespace {
constexpr size_t kHeader = 2;           // inward queries: transport ('U' or 'T') and resolver index
constexpr size_t kMinimumMessage = 12;  // a DNS header

uint16_t message_id(const uint8_t* m) { return static_cast<uint16_t>((m[0] << 8) | m[1]); }
void set_message_id(uint8_t* m, uint16_t id) {
  m[0] = static_cast<uint8_t>(id >> 8);
  m[1] = static_cast<uint8_t>(id);
}

void set_timeouts(int fd, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool send_all(int fd, const uint8_t* data, size_t length) {
  while (length > 0) {
    const ssize_t n = ::send(fd, data, length, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    length -= static_cast<size_t>(n);
  }
  return true;
}

bool receive_all(int fd, uint8_t* data, size_t length) {
  while (length > 0) {
    const ssize_t n = ::recv(fd, data, length, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    length -= static_cast<size_t>(n);
  }
  return true;
}

// Asks the resolver over TCP, as the client did (answers too big for UDP), and sends the answer
// inward. Runs in its own short-lived thread: TCP to a local resolver takes a moment at most.
void ask_over_tcp(Ipv4 resolver, std::vector<uint8_t> query, int outer_relay) {
  FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return;
  set_timeouts(fd.get(), 5);
  const sockaddr_in to = socket_address(resolver, 53);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0) return;
  const uint8_t length[2] = {static_cast<uint8_t>(query.size() >> 8), static_cast<uint8_t>(query.size())};
  if (!send_all(fd.get(), length, 2) || !send_all(fd.get(), query.data(), query.size())) return;
  uint8_t answer_length[2];
  if (!receive_all(fd.get(), answer_length, 2)) return;
  std::vector<uint8_t> answer((answer_length[0] << 8) | answer_length[1]);
  if (answer.size() < kMinimumMessage || !receive_all(fd.get(), answer.data(), answer.size())) return;
  (void)!::send(outer_relay, answer.data(), answer.size(), 0);
}
}  // namespace

DnsRelay::DnsRelay(DnsRelaySockets sockets) : sockets_(std::move(sockets)) {
  upstream_.resize(sockets_.nameservers.size());
}

void DnsRelay::register_with(Epoll& epoll, uint64_t base_tag) {
  epoll_ = &epoll;
  base_tag_ = base_tag;
  epoll.add(sockets_.inner_forward.get(), EPOLLIN, tag(kForward, 0));
  epoll.add(sockets_.outer_relay.get(), EPOLLIN, tag(kOuter, 0));
  for (size_t i = 0; i < sockets_.nameservers.size(); i++) {
    epoll.add(sockets_.inner_udp[i].get(), EPOLLIN, tag(kUdp, i));
    epoll.add(sockets_.inner_tcp[i].get(), EPOLLIN, tag(kTcpListen, i));
  }
}

void DnsRelay::handle(uint64_t event_tag) {
  const uint64_t t = event_tag - base_tag_;
  const uint64_t index = t >> 3;
  switch (static_cast<Kind>(t & 7)) {
    case kForward:
      answer_from_outside();
      break;
    case kOuter:
      query_from_inside();
      break;
    case kUdp:
      query_from_udp_client(index);
      break;
    case kTcpListen:
      accept_tcp_client(index);
      break;
    case kTcpConnection:
      read_tcp_client(static_cast<int>(index));
      break;
    case kUpstream:
      answer_from_upstream(index);
      break;
  }
}

// Inside: a client's query over UDP.
void DnsRelay::query_from_udp_client(size_t server) {
  sockaddr_in client{};
  socklen_t client_length = sizeof client;
  uint8_t* message = buffer_.data() + kHeader;
  const ssize_t n = ::recvfrom(sockets_.inner_udp[server].get(), message, buffer_.size() - kHeader, MSG_DONTWAIT,
                               reinterpret_cast<sockaddr*>(&client), &client_length);
  if (n < static_cast<ssize_t>(kMinimumMessage)) return;
  send_inward_query(false, server, message, static_cast<size_t>(n), &client, -1);
}

void DnsRelay::accept_tcp_client(size_t server) {
  const int fd = ::accept4(sockets_.inner_tcp[server].get(), nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  set_timeouts(fd, 2);
  Connection& c = connections_[fd];
  c.fd = FileDescriptor(fd);
  c.buffer.clear();
  c.buffer.push_back(static_cast<uint8_t>(server));  // first byte: which resolver
  epoll_->add(fd, EPOLLIN, tag(kTcpConnection, static_cast<uint64_t>(fd)));
}

void DnsRelay::read_tcp_client(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  uint8_t chunk[4096];
  const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    close_connection(fd);
    return;
  }
  if (n < 0) return;
  c.buffer.insert(c.buffer.end(), chunk, chunk + n);
  // buffer: [resolver index] then length-prefixed messages
  while (c.buffer.size() >= 3) {
    const size_t length = (c.buffer[1] << 8) | c.buffer[2];
    if (c.buffer.size() < 3 + length) break;
    if (length >= kMinimumMessage) {
      std::memcpy(buffer_.data() + kHeader, c.buffer.data() + 3, length);
      send_inward_query(true, c.buffer[0], buffer_.data() + kHeader, length, nullptr, fd);
    }
    c.buffer.erase(c.buffer.begin() + 1, c.buffer.begin() + 3 + static_cast<long>(length));
  }
}

void DnsRelay::close_connection(int fd) {
  for (auto& p : pending_) {
    if (p.used && p.tcp && p.connection == fd) p.used = false;
  }
  connections_.erase(fd);  // closes it, which also removes it from epoll
}

// Inside: tag the query with a relay id and send it through the link. `message` must sit at
// buffer_ + kHeader.
void DnsRelay::send_inward_query(bool tcp, size_t server, const uint8_t* message, size_t length,
                                 const sockaddr_in* client, int connection) {
  const uint16_t id = next_id_++;
  Pending& p = pending_[id % kSlots];
  p.used = true;
  p.relay_id = id;
  p.tcp = tcp;
  p.server = static_cast<uint8_t>(server);
  p.client_id = message_id(message);
  if (client) p.client = *client;
  p.connection = connection;
  buffer_[0] = tcp ? 'T' : 'U';
  buffer_[1] = static_cast<uint8_t>(server);
  set_message_id(buffer_.data() + kHeader, id);
  (void)!::send(sockets_.inner_forward.get(), buffer_.data(), kHeader + length, MSG_DONTWAIT);
}

// Outside: a query arrived through the link; ask the real resolver.
void DnsRelay::query_from_inside() {
  const ssize_t n = ::recv(sockets_.outer_relay.get(), buffer_.data(), buffer_.size(), MSG_DONTWAIT);
  if (n < static_cast<ssize_t>(kHeader + kMinimumMessage)) return;
  const size_t server = buffer_[1];
  if (server >= sockets_.nameservers.size()) return;
  const uint8_t* message = buffer_.data() + kHeader;
  const size_t length = static_cast<size_t>(n) - kHeader;
  if (buffer_[0] == 'T') {
    std::thread(ask_over_tcp, sockets_.upstreams[server], std::vector<uint8_t>(message, message + length),
                sockets_.outer_relay.get())
        .detach();
    return;
  }
  const int fd = upstream_udp(server);
  if (fd >= 0) (void)!::send(fd, message, length, MSG_DONTWAIT);
}

int DnsRelay::upstream_udp(size_t server) {
  if (!upstream_[server].valid()) {
    FileDescriptor fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    const sockaddr_in to = socket_address(sockets_.upstreams[server], 53);
    if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0) return -1;
    epoll_->add(fd.get(), EPOLLIN, tag(kUpstream, server));
    upstream_[server] = std::move(fd);
  }
  return upstream_[server].get();
}

// Outside: the resolver answered; send the answer back through the link.
void DnsRelay::answer_from_upstream(size_t server) {
  const ssize_t n = ::recv(upstream_[server].get(), buffer_.data(), buffer_.size(), MSG_DONTWAIT);
  if (n < static_cast<ssize_t>(kMinimumMessage)) return;
  (void)!::send(sockets_.outer_relay.get(), buffer_.data(), static_cast<size_t>(n), MSG_DONTWAIT);
}

// Inside: an answer came through the link; give it to the client who asked.
void DnsRelay::answer_from_outside() {
  uint8_t* message = buffer_.data() + kHeader;
  const ssize_t n = ::recv(sockets_.inner_forward.get(), message, buffer_.size() - kHeader, MSG_DONTWAIT);
  if (n < static_cast<ssize_t>(kMinimumMessage)) return;
  const uint16_t id = message_id(message);
  Pending& p = pending_[id % kSlots];
  if (!p.used || p.relay_id != id) return;
  p.used = false;
  set_message_id(message, p.client_id);
  if (p.tcp) {
    message[-2] = static_cast<uint8_t>(n >> 8);
    message[-1] = static_cast<uint8_t>(n);
    if (connections_.count(p.connection) && !send_all(p.connection, message - 2, static_cast<size_t>(n) + 2))
      close_connection(p.connection);
  } else {
    (void)!::sendto(sockets_.inner_udp[p.server].get(), message, static_cast<size_t>(n), MSG_DONTWAIT,
                    reinterpret_cast<const sockaddr*>(&p.client), sizeof p.client);
  }
}
