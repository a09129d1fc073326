// SPDX-License-Identifier: GPL-3.0-or-later
// The HTTP/3 server: ngtcp2 (QUIC), nghttp3 (HTTP/3, QPACK), GnuTLS (TLS 1.3), one thread.
//
// The loop: epoll over the endpoints' UDP sockets and a stop eventfd, with a timeout at the
// earliest connection expiry. A datagram is routed by its Destination Connection ID to a
// connection (every ID the server issued, and the client's original one while the handshake
// lasts, are keys of one map); an unknown ID carrying a valid Initial makes a new connection.
// Each connection that read something, or whose timer expired, then writes what it can. Every
// library call takes the same `now`, read once per wake-up. A connection is in
// http3_connection.cc, the libraries' callbacks into it in http3_callbacks.cc.
#include "quic/http3_server.hh"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "quic/http3_server_parts.hh"
#include "util/address.hh"
#include "util/clock.hh"
#include "util/epoll.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace fs = std::filesystem;
using namespace http3;

namespace {
FileDescriptor bind_udp(const sockaddr_in& address, const std::string& name) {
  FileDescriptor fd(check_syscall("socket(UDP)", ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
  const int buffer = 4 << 20;  // as much as net.core.[rw]mem_max lets an ordinary user have
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
  const int pmtu = IP_PMTUDISC_DO;  // QUIC's path MTU discovery needs unfragmented datagrams
  (void)::setsockopt(fd.get(), IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    throw UserError(
        "cannot serve HTTP/3 on UDP " + name + ": " + std::strerror(err) +
        (err == EADDRINUSE ? " (another program has that UDP port; stop it, or replay without --http3)" : ""));
  }
  return fd;
}
}  // namespace

const std::string* Http3Request::header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (h.key == name) return &h.value;
  }
  return nullptr;
}

Http3Server::Impl::~Impl() {
  connections.clear();  // before the endpoints whose credentials the sessions use
}

void Http3Server::Impl::send(Endpoint& endpoint, const ngtcp2_addr& to, const uint8_t* data, size_t length) {
  // A datagram the socket cannot take now is lost, as on any path: QUIC's recovery resends it.
  (void)::sendto(endpoint.socket.get(), data, length, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(to.addr),
                 to.addrlen);
}

void Http3Server::Impl::remove(Connection* connection) {
  for (const std::string& key : connection->keys()) {
    auto it = by_cid.find(key);
    if (it != by_cid.end() && it->second == connection) by_cid.erase(it);
  }
  touched.erase(std::remove(touched.begin(), touched.end(), connection), touched.end());
  connections.erase(connection);
}

void Http3Server::Impl::send_version_negotiation(Endpoint& endpoint, const sockaddr_in& to,
                                                 const ngtcp2_version_cid& vc) {
  std::array<uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> packet;
  const uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
  const ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(packet.data(), packet.size(), static_cast<uint8_t>(rng()),
                                                              vc.scid, vc.scidlen, vc.dcid, vc.dcidlen, versions, 1);
  if (n <= 0) return;
  sockaddr_in remote = to;
  ngtcp2_addr address{reinterpret_cast<ngtcp2_sockaddr*>(&remote), sizeof remote};
  send(endpoint, address, packet.data(), static_cast<size_t>(n));
}

void Http3Server::Impl::on_datagram(Endpoint& endpoint, const sockaddr_in& from, const uint8_t* data, size_t length,
                                    Nanos now) {
  auto drop = [&] {
    std::lock_guard lock(stats_mutex);
    stats.dropped_datagrams++;
  };
  // An empty datagram is legal UDP, and ngtcp2 asserts on it (Debian builds keep assertions).
  if (length == 0) return drop();
  ngtcp2_version_cid vc;
  const int rv = ngtcp2_pkt_decode_version_cid(&vc, data, length, kCidLength);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    // Only to a datagram as large as a client's first one must be: never an amplifier.
    if (length >= NGTCP2_MAX_UDP_PAYLOAD_SIZE) send_version_negotiation(endpoint, from, vc);
    return;
  }
  if (rv != 0) return drop();
  auto it = by_cid.find(cid_key(vc.dcid, vc.dcidlen));
  if (it != by_cid.end()) return it->second->read(from, data, length, now);

  ngtcp2_pkt_hd hd;
  if (ngtcp2_accept(&hd, data, length) != 0) return drop();
  if (connections.size() >= options.max_connections) {
    std::lock_guard lock(stats_mutex);
    stats.refused++;
    return;
  }
  auto connection = std::make_unique<Connection>(*this, endpoint);
  Connection* c = connection.get();
  connections.emplace(c, std::move(connection));
  if (!c->accept(hd, from, now)) {
    remove(c);
    return drop();
  }
  g_decrypted = false;
  c->read(from, data, length, now);
  if (!connections.count(c)) return drop();  // its first datagram ended it
  if (!g_decrypted) {
    remove(c);
    return drop();
  }
  std::lock_guard lock(stats_mutex);
  stats.connections++;
}

void Http3Server::Impl::run() {
  std::array<epoll_event, 64> events;
  std::array<uint8_t, 65536> datagram;
  for (;;) {
    Nanos next = kNever;
    for (auto& [c, owned] : connections) next = std::min(next, c->expiry());
    const Nanos before = monotonic_now();
    Nanos timeout = next == kNever ? kNever : std::max<Nanos>(next - before, 0);
    if (!touched.empty()) timeout = 0;  // connections with more to write
    const int n = epoll.wait(events.data(), events.size(), timeout);
    const Nanos now = monotonic_now();
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == UINT64_MAX) return;  // stop
      Endpoint& endpoint = *endpoints[events[i].data.u64];
      for (size_t k = 0; k < kMaxDatagramsPerRead; k++) {
        sockaddr_in from{};
        socklen_t from_length = sizeof from;
        const ssize_t got = ::recvfrom(endpoint.socket.get(), datagram.data(), datagram.size(), MSG_DONTWAIT,
                                       reinterpret_cast<sockaddr*>(&from), &from_length);
        if (got < 0) break;  // EAGAIN, or an ICMP error reported on the socket: nothing to do with it
        if (from.sin_family != AF_INET) continue;
        on_datagram(endpoint, from, datagram.data(), static_cast<size_t>(got), now);
      }
    }
    after_reads(now);
  }
}

void Http3Server::Impl::after_reads(Nanos now) {
  // Expired timers first (they may remove connections), then everyone that read something writes.
  std::vector<Connection*> expired;
  for (auto& [c, owned] : connections) {
    if (c->expiry() <= now) expired.push_back(c);
  }
  for (Connection* c : expired) {
    if (connections.count(c)) c->on_expiry(now);
  }
  std::vector<Connection*> writers;
  writers.swap(touched);
  for (Connection* c : writers) {
    if (connections.count(c)) c->write(now);
  }
}

Http3Server::Http3Server(const std::vector<Http3Endpoint>& endpoints, Handler handler,
                         const Http3ServerOptions& options)
    : impl_(std::make_unique<Impl>(std::move(handler), options)) {
  Impl& s = *impl_;
  for (uint8_t& b : s.reset_secret) b = static_cast<uint8_t>(s.rng());
  s.stop_fd = FileDescriptor(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)));
  s.epoll.add(s.stop_fd.get(), EPOLLIN, UINT64_MAX);
  for (const Http3Endpoint& e : endpoints) {
    auto endpoint = std::make_unique<Endpoint>();
    endpoint->name = e.ip + ":" + std::to_string(e.port);
    const auto ip = Ipv4::parse(e.ip);
    if (!ip) throw UserError("HTTP/3: " + e.ip + " is not an IPv4 address");
    endpoint->address = socket_address(*ip, e.port);
    if (gnutls_certificate_allocate_credentials(&endpoint->credentials) != 0) throw std::bad_alloc();
    // GnuTLS presents the first certificate whose names match the client's SNI, else the first.
    std::vector<std::pair<fs::path, fs::path>> files{{e.certificate, e.key}};
    files.insert(files.end(), e.more_certificates.begin(), e.more_certificates.end());
    for (const auto& [certificate, key] : files) {
      const int rv = gnutls_certificate_set_x509_key_file(endpoint->credentials, certificate.c_str(), key.c_str(),
                                                          GNUTLS_X509_FMT_PEM);
      if (rv < 0) {
        throw UserError("HTTP/3 on " + endpoint->name + ": cannot load the certificate " + certificate.string() +
                        " and key " + key.string() + ": " + gnutls_strerror(rv));
      }
    }
    endpoint->socket = bind_udp(endpoint->address, endpoint->name);
    s.epoll.add(endpoint->socket.get(), EPOLLIN, s.endpoints.size());
    s.endpoints.push_back(std::move(endpoint));
  }
}

Http3Server::~Http3Server() { stop(); }

void Http3Server::start() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->started || impl_->stopped) return;
  impl_->started = true;
  impl_->thread = std::thread([this] { impl_->run(); });
}

void Http3Server::stop() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->stopped) return;
  impl_->stopped = true;
  const uint64_t one = 1;
  if (::write(impl_->stop_fd.get(), &one, sizeof one) < 0) {
    // Only EAGAIN is possible (the counter is full), and then it is readable already.
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->connections.clear();
  impl_->by_cid.clear();
}

size_t Http3Server::connections() const { return impl_->connections.size(); }

void Http3Server::receive_for_testing(uint16_t from_port, const uint8_t* datagram, size_t length, int64_t now_ns) {
  if (impl_->started || impl_->endpoints.empty()) return;
  const sockaddr_in from = socket_address(Ipv4{0x7f000001}, from_port);
  impl_->on_datagram(*impl_->endpoints.front(), from, datagram, length, now_ns);
  impl_->after_reads(now_ns);
}

Http3Stats Http3Server::stats() const {
  std::lock_guard lock(impl_->stats_mutex);
  return impl_->stats;
}

std::string http3_library_versions() {
  return std::string("ngtcp2 ") + ngtcp2_version(0)->version_str + ", nghttp3 " + nghttp3_version(0)->version_str +
         ", GnuTLS " + gnutls_check_version(nullptr);
}
