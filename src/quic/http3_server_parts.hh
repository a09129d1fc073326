// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The HTTP/3 server's own parts, shared by its files (http3_server.cc: the loop and the
// endpoints; http3_connection.cc: a connection; http3_callbacks.cc: ngtcp2's and nghttp3's
// callbacks): its bounds, an endpoint, a request's stream, the server's state. Only quic/ sees
// this header, so the libraries' types may show here.
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2.h>

#include <array>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "quic/http3_server.hh"
#include "util/clock.hh"
#include "util/epoll.hh"
#include "util/file_descriptor.hh"

namespace http3 {
constexpr size_t kCidLength = 18;
constexpr uint64_t kMaxStreamsBidi = 100;
constexpr size_t kMaxHeaderBytes = 64 * 1024;  // per request: beyond, a 431
constexpr size_t kMaxServiceSamples = 1 << 20;
constexpr size_t kMaxPacketsPerWrite = 64;  // then the loop turns to the others
constexpr size_t kMaxDatagramsPerRead = 64;
constexpr Nanos kHandshakeTimeout = 10 * kNanosPerSec;
constexpr Nanos kIdleTimeout = 30 * kNanosPerSec;
// TLS 1.3 only, the AEADs QUIC defines, the usual groups (ngtcp2's own example uses the same set).
constexpr const char* kPriorities =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1";

inline ngtcp2_tstamp stamp(Nanos now) { return static_cast<ngtcp2_tstamp>(now); }

inline std::string cid_key(const uint8_t* data, size_t length) {
  return std::string(reinterpret_cast<const char*>(data), length);
}

struct Endpoint {
  FileDescriptor socket;
  sockaddr_in address{};
  std::string name;  // "ip:port"
  gnutls_certificate_credentials_t credentials = nullptr;
  ~Endpoint() {
    if (credentials) gnutls_certificate_free_credentials(credentials);
  }
};

struct Stream {
  int64_t id = 0;
  Http3Request request;
  size_t header_bytes = 0;
  bool too_large = false;
  Http3Response response;
  bool body_handed = false;
  uint64_t unacked = 0;  // bytes handed to QUIC and not yet acknowledged
};

class Connection;

// Whether anything in a new connection's first datagram decrypted (see on_decrypt).
extern thread_local bool g_decrypted;
}  // namespace http3

// The server: its endpoints, its connections by ID, its statistics (guarded by stats_mutex).
struct Http3Server::Impl {
  Impl(Handler h, Http3ServerOptions o) : handler(std::move(h)), options(std::move(o)) {}
  ~Impl();

  void run();
  void after_reads(Nanos now);  // expired timers, then the writes of the connections that read
  void on_datagram(http3::Endpoint& endpoint, const sockaddr_in& from, const uint8_t* data, size_t length, Nanos now);
  void send_version_negotiation(http3::Endpoint& endpoint, const sockaddr_in& to, const ngtcp2_version_cid& vc);
  void remove(http3::Connection* connection);
  void send(http3::Endpoint& endpoint, const ngtcp2_addr& to, const uint8_t* data, size_t length);
  void random_bytes(uint8_t* out, size_t length) {
    for (size_t i = 0; i < length; i++) out[i] = static_cast<uint8_t>(rng());
  }

  Handler handler;
  Http3ServerOptions options;
  std::vector<std::unique_ptr<http3::Endpoint>> endpoints;
  Epoll epoll;
  FileDescriptor stop_fd;
  std::thread thread;
  std::mutex lifecycle;
  bool started = false, stopped = false;

  std::mt19937_64 rng{std::random_device{}()};
  std::array<uint8_t, 32> reset_secret{};
  std::unordered_map<std::string, http3::Connection*> by_cid;
  std::unordered_map<http3::Connection*, std::unique_ptr<http3::Connection>> connections;
  std::vector<http3::Connection*> touched;  // read something since the last writes

  mutable std::mutex stats_mutex;
  Http3Stats stats;
};
