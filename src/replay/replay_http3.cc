// SPDX-License-Identifier: GPL-3.0-or-later
#include "replay/replay_http3.hh"

#include <algorithm>

#include "http/alt_svc.hh"
#include "replay/apache_config.hh"
#include "util/csv.hh"
#include "util/statistics.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

void apply_alt_svc_policy(ReplayResponse& response, AltSvcPolicy policy, bool https, const std::string& host) {
  bool recorded_h3 = false;
  auto& headers = response.headers;
  headers.erase(std::remove_if(headers.begin(), headers.end(),
                               [&](const HttpHeader& h) {
                                 if (!equals_ignoring_case(h.key, "Alt-Svc")) return false;
                                 recorded_h3 = recorded_h3 || alt_svc_advertises_h3(h.value);
                                 return true;
                               }),
                headers.end());
  if (!https || policy == AltSvcPolicy::kNone || (policy == AltSvcPolicy::kRecorded && !recorded_h3)) return;
  std::string port = "443";
  const size_t colon = host.rfind(':');
  if (colon != std::string::npos && host.find(']', colon) == std::string::npos && colon + 1 < host.size() &&
      host.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    port = host.substr(colon + 1);
  }
  headers.push_back({"Alt-Svc", "h3=\":" + port + "\"; ma=86400"});
}

ReplayRequest replay_request_of(const Http3Request& request) {
  ReplayRequest r;
  r.method = request.method;
  r.target = request.path;
  r.https = true;
  if (!request.authority.empty()) {
    r.host = request.authority;
    r.has_host = true;
  } else if (const std::string* host = request.header("host")) {
    r.host = *host;
    r.has_host = true;
  }
  if (const std::string* agent = request.header("user-agent")) {
    r.user_agent = *agent;
    r.has_user_agent = true;
  }
  if (const std::string* range = request.header("range")) r.range = *range;
  if (const std::string* if_range = request.header("if-range")) r.if_range = *if_range;
  if (!request.body_truncated && !request.body.empty()) r.body = request.body;
  return r;
}

Http3Response http3_response_of(const ReplayMatch& match, const std::string& method) {
  Http3Response r;
  r.status = match.response.status;
  r.headers = match.response.headers;
  r.body = match.response.body;
  r.omit_body = method == "HEAD";
  r.delay_ns = static_cast<int64_t>(match.response.think_us) * 1000;
  r.reset = match.close;
  return r;
}

std::vector<Http3Endpoint> http3_endpoints(const std::vector<ReplayServerSpec>& servers, const fs::path& work) {
  std::vector<Http3Endpoint> endpoints;
  for (const ReplayServerSpec& s : servers) {
    if (!s.https) continue;
    // The certificates Apache presents on TCP, in the same order.
    const std::vector<ServerCertificate> certificates = server_certificates(s);
    Http3Endpoint e{s.ip, s.port, work / (certificates[0].stem + ".pem"), work / (certificates[0].stem + ".key"), {}};
    for (size_t i = 1; i < certificates.size(); i++)
      e.more_certificates.emplace_back(work / (certificates[i].stem + ".pem"), work / (certificates[i].stem + ".key"));
    endpoints.push_back(std::move(e));
  }
  return endpoints;
}

std::string http3_summary(const Http3Stats& s) {
  std::string text = count_of(s.connections, "connection") + " (" + count_of(s.handshakes, "handshake") + "), " +
                     count_of(s.requests, "request") + ", " + std::to_string(s.refused) +
                     " refused at the connection limit, " + count_of(s.dropped_datagrams, "datagram") + " dropped";
  if (!s.service_ns.empty()) {
    std::vector<double> ms;
    ms.reserve(s.service_ns.size());
    for (int64_t ns : s.service_ns) ms.push_back(static_cast<double>(ns) / 1e6);
    text += "; server time per request (headers in to response handed to QUIC) p50 " +
            csv_number(*percentile(ms, 50), 3) + " ms, p99 " + csv_number(*percentile(ms, 99), 3) + " ms";
  }
  return text;
}

ReplayHttp3::ReplayHttp3(const std::vector<Http3Endpoint>& endpoints, Matcher match,
                         std::function<void(const std::string&)> log, const fs::path& qlog_dir) {
  Http3ServerOptions options;
  options.qlog_dir = qlog_dir;
  server_ = std::make_unique<Http3Server>(
      endpoints,
      [this, match = std::move(match), log = std::move(log)](const Http3Request& request) {
        const ReplayMatch m = match(replay_request_of(request));
        if (m.found) {
          served_++;
        } else {
          missed_++;
          if (log) log(m.log_line);
        }
        return http3_response_of(m, request.method);
      },
      options);
  server_->start();
}

ReplayHttp3::~ReplayHttp3() { stop(); }

void ReplayHttp3::stop() { server_->stop(); }
