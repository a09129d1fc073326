// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The recording proxy's own parts (record_proxy.cc: the loop, the accepted connections and their
// bookkeeping, the origins' probes; record_connection.cc: a connection's phases, from the sniff
// through the TLS handshakes to the relaying and the recording): a connection, and what both use.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "http/http_parser.hh"
#include "record/record_proxy.hh"
#include "tls/tls_stream.hh"

namespace record_proxy {
// What to do when a client does not finish TLS with the proxy: trust the local CA.
inline const std::string kTrustHint =
    " (does the program trust the local CA? curl: --cacert \"$(mm-ca path)\"; Chromium: mm-ca trust, or "
    "--ignore-certificate-errors-spki-list=\"$(mm-ca spki)\")";
// Stop reading a side while this much is waiting to be written to the other: memory stays
// bounded and the sender feels the receiver's pace, as it would without the proxy.
constexpr size_t kHighWater = 256 * 1024;
}  // namespace record_proxy

struct RecordProxy::Connection {
  enum class Phase { Connecting, Sniffing, ClientHello, UpstreamTls, ClientTls, Relaying };
  struct PendingRequest {
    HttpMessage request;
    uint64_t start_us, end_us;
    uint64_t dropped_body_bytes;  // its body passed --max-body: the pair is not recorded
  };

  uint64_t id = 0;
  TlsStream client, server;                           // the program's end, and the server's
  uint32_t client_interest = 0, server_interest = 0;  // the epoll events asked for
  Phase phase = Phase::Connecting;
  std::string ip;
  uint16_t port = 0;
  std::string server_name;  // SNI
  std::string alpn;
  bool https = false;
  bool upstream_ready = false;
  bool parsing_requests = false, parsing_responses = false;
  bool dead = false;
  HttpParser requests{HttpParser::Direction::Request};
  HttpParser responses{HttpParser::Direction::Response};
  std::deque<PendingRequest> pending;
  // --deterministic: the server's bytes of the response being parsed, held back from the client
  // until its header section shows whether it is an HTML page (Head), and then for a page until
  // it is whole (Page), when it goes to the client with the script in it.
  enum class Hold { None, Head, Page };
  Hold hold = Hold::None;
  std::string held;
  uint64_t page_start_ms = 0;  // the page's request's time: its clock starts there
  uint64_t request_start_us = 0, response_start_us = 0;
  uint64_t pairs = 0;
  std::vector<std::string> certificate_names;  // the server certificate's DNS names
  std::string tls_version;                     // the TLS version the server chose
  uint64_t connect_started_us = 0;             // monotonic
  std::optional<uint64_t> connect_us;          // the TCP handshake with the server took this long

  // The origin as the probes and the upstream sessions know it: address, port and server name.
  std::string origin() const { return ip + ":" + std::to_string(port) + "|" + server_name; }

  std::string where() const {
    return ip + ":" + std::to_string(port) + (server_name.empty() ? "" : " (" + server_name + ")");
  }
};
