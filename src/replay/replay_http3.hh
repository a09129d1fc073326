// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The replay's HTTP/3 front (mm-replay --http3): every recorded HTTPS IP:port also answers
// HTTP/3 on UDP at the same address and port, with the certificate its Apache presents there,
// from the same matcher as the TCP servers. The server itself is quic/http3_server.hh.
//
// Also where replay decides what Alt-Svc tells a browser: a recorded advertisement of HTTP/3
// leads the browser to QUIC only if something answers there, so without --http3 it is removed,
// and with it, it names the port actually served.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "quic/http3_server.hh"
#include "replay/replay_index.hh"
#include "replay/replay_server_spec.hh"

// What Alt-Svc replayed responses carry.
enum class AltSvcPolicy {
  kNone,      // no HTTP/3 served: every Alt-Svc field is removed (an h2 baseline advertises nothing)
  kRecorded,  // --http3: a recorded advertisement of h3 becomes h3=":PORT"; ma=86400, other fields go
  kAll,       // --advertise-h3: every HTTPS response advertises h3=":PORT"; ma=86400
};

// Applies `policy` to a response for a request over HTTPS or not (plain HTTP never advertises) whose
// Host header was `host` (its port, or 443, is the port advertised).
void apply_alt_svc_policy(ReplayResponse& response, AltSvcPolicy policy, bool https, const std::string& host);

// The matcher's view of an HTTP/3 request: :path as the target, :authority (else Host) as the host.
ReplayRequest replay_request_of(const Http3Request& request);
// A match as an HTTP/3 response (a HEAD gets the headers only).
Http3Response http3_response_of(const ReplayMatch& match, const std::string& method);

// The endpoints for the HTTPS servers among `servers`: their certificates and keys as the Apache
// instances' files in `work` (ApacheServer writes them: start this after them).
std::vector<Http3Endpoint> http3_endpoints(const std::vector<ReplayServerSpec>& servers,
                                           const std::filesystem::path& work);

// mm-replay --verbose's line about the QUIC side: "3 connections (3 handshakes), 32 requests,
// 0 refused at the connection limit, 0 datagrams dropped".
std::string http3_summary(const Http3Stats& stats);

class ReplayHttp3 {
 public:
  using Matcher = std::function<ReplayMatch(const ReplayRequest&)>;
  // Binds every endpoint (UserError naming the one that failed) and starts serving.
  // log: one line per miss, from the server's thread.
  ReplayHttp3(const std::vector<Http3Endpoint>& endpoints, Matcher match, std::function<void(const std::string&)> log,
              const std::filesystem::path& qlog_dir);
  ~ReplayHttp3();
  void stop();
  uint64_t served() const { return served_; }
  uint64_t missed() const { return missed_; }
  Http3Stats stats() const { return server_->stats(); }

 private:
  std::unique_ptr<Http3Server> server_;
  uint64_t served_ = 0, missed_ = 0;  // written on the server's thread, read after stop()
};
