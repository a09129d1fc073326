// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An HTTP/3 server (RFC 9114 over QUIC v1, RFC 9000) on UDP sockets, in one event-loop thread,
// answering every request with a handler called on that thread. Built on ngtcp2, nghttp3 and
// GnuTLS; those libraries' APIs change before 1.0, so nothing of them shows here: this header is
// the whole interface the rest of the project sees.
//
// Each endpoint is one UDP IP:port with its own certificate (PEM files: leaf then chain; the
// key), ALPN "h3" only, TLS 1.3. Every bound is fixed here: connections in total (new ones are
// refused beyond it), streams per connection, request header bytes per stream, the time a
// handshake may take; QUIC's anti-amplification limit holds for unvalidated addresses, and a
// datagram that is not QUIC is dropped. A connection keeps going when the client's address or
// port changes (path migration).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/http_message.hh"

struct Http3Request {
  std::string method, scheme, authority, path;  // the pseudo-header fields
  std::vector<HttpHeader> headers;              // every other field as received (lower-case names)
  std::string body;                             // its body, up to kMaxHttp3RequestBody bytes
  bool body_truncated = false;                  // there was more
  // The first field named `name` (lower case), or nullptr.
  const std::string* header(std::string_view name) const;
};

constexpr size_t kMaxHttp3RequestBody = 64 << 10;

struct Http3Response {
  int status = 200;
  // Names in any case (sent in lower case); connection-specific fields (Connection, Keep-Alive,
  // Transfer-Encoding, Upgrade, Proxy-Connection, TE) and pseudo-header names are left out, as
  // HTTP/3 forbids them.
  std::vector<HttpHeader> headers;
  std::string body;
  bool omit_body = false;  // a HEAD: headers only, Content-Length as it would be
  // Sent this long after the request was complete (a replayed server's think time): the stream
  // waits; the connection's other streams and every other connection go on.
  int64_t delay_ns = 0;
  // No response at all: the stream is reset (H3_REQUEST_CANCELLED) instead, the connection's
  // other streams go on (a replay's unmatched request under mm-replay --unmatched=close).
  bool reset = false;
};

struct Http3Endpoint {
  std::string ip;  // IPv4 literal
  uint16_t port = 0;
  std::filesystem::path certificate, key;
  // More certificates (and keys): a client's server name (SNI) picks the one that names it;
  // `certificate` answers any other.
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> more_certificates = {};
};

struct Http3ServerOptions {
  std::filesystem::path qlog_dir;  // empty: no qlog; else one <original DCID>.sqlog per connection
  size_t max_connections = 1024;   // in total; Initials beyond are dropped
};

struct Http3Stats {
  uint64_t connections = 0;        // accepted
  uint64_t handshakes = 0;         // completed
  uint64_t requests = 0;           // answered
  uint64_t refused = 0;            // Initials dropped at max_connections
  uint64_t dropped_datagrams = 0;  // not QUIC, or for no connection
  std::vector<int64_t>
      service_ns;  // per request (at most the last 1<<20): request complete -> response made (its delay not included)
};

class Http3Server {
 public:
  // Called on the server's thread; what it throws becomes a 500 naming the error.
  using Handler = std::function<Http3Response(const Http3Request&)>;

  // Binds every endpoint's UDP socket and loads its certificate. A port in use, an unreadable
  // certificate or key: UserError naming the endpoint and the fix; nothing stays bound.
  Http3Server(const std::vector<Http3Endpoint>& endpoints, Handler handler, const Http3ServerOptions& options);
  ~Http3Server();  // stop()
  Http3Server(const Http3Server&) = delete;
  Http3Server& operator=(const Http3Server&) = delete;

  void start();  // the event loop's thread (once)
  void stop();   // ends the thread and every connection; idempotent
  Http3Stats stats() const;
  size_t connections() const;  // open now (only while not start()ed, or after stop())

  // For the fuzz target: hands `datagram` to the first endpoint as if it had come from
  // 127.0.0.1:from_port at `now_ns` (CLOCK_MONOTONIC), then runs what the loop runs after a
  // read (expired timers, writes), on the caller's thread. Only on a server never start()ed.
  void receive_for_testing(uint16_t from_port, const uint8_t* datagram, size_t length, int64_t now_ns);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The versions of the QUIC and HTTP/3 libraries in use: "ngtcp2 0.12.1, nghttp3 0.8.0, GnuTLS 3.7.9".
std::string http3_library_versions();
