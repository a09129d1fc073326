// SPDX-License-Identifier: GPL-3.0-or-later
// What a page load makes of DevTools' messages and of its input (see load_events.hh).
#include "pageload/load_events.hh"

#include <algorithm>
#include <cstring>

#include "util/exception.hh"
#include "util/text.hh"

using nlohmann::json;

const json* find_path(const json& value, std::initializer_list<const char*> path) {
  const json* at = &value;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    const auto found = at->find(key);
    if (found == at->end()) return nullptr;
    at = &*found;
  }
  return at;
}

std::string string_at(const json& value, std::initializer_list<const char*> path) {
  const json* found = find_path(value, path);
  return found && found->is_string() ? found->get<std::string>() : std::string();
}

std::optional<double> number_at(const json& value, std::initializer_list<const char*> path) {
  const json* found = find_path(value, path);
  if (!found || !found->is_number()) return std::nullopt;
  return found->get<double>();
}

WaitedUrl parse_waited_url(const std::string& line) {
  WaitedUrl waited;
  std::string* fields[] = {&waited.url, &waited.user_agent, &waited.accept_language};
  size_t field = 0;
  for (const char c : line) {
    if (c == '\t') {
      if (++field == 3) throw UsageError("--wait-for-url: more than three tab-separated fields on standard input");
      continue;
    }
    if (c == '\r') continue;
    fields[field]->push_back(c);
  }
  if (waited.url.empty()) throw UsageError("--wait-for-url: no URL on standard input");
  if (waited.url.size() > kMaxWaitedLine || waited.user_agent.size() > kMaxWaitedLine ||
      waited.accept_language.size() > kMaxWaitedLine)
    throw UsageError("--wait-for-url: a field on standard input is longer than " + std::to_string(kMaxWaitedLine) +
                     " bytes");
  for (const std::string* f : fields)
    for (const char c : *f)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw UsageError("--wait-for-url: control bytes on standard input");
  const std::string lower = ascii_lowercase(waited.url.substr(0, 8));
  if (!lower.starts_with("http://") && !lower.starts_with("https://"))
    throw UsageError("--wait-for-url: " + printable(waited.url, 200) + " is not an http:// or https:// URL");
  return waited;
}

std::optional<std::string> url_origin(const std::string& url) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos) return std::nullopt;
  const std::string scheme = ascii_lowercase(url.substr(0, colon));
  std::string port;
  if (scheme == "http" || scheme == "ws") {
    port = "80";
  } else if (scheme == "https" || scheme == "wss") {
    port = "443";
  } else {
    return std::nullopt;
  }
  const size_t host_start = colon + 3;
  size_t host_end = url.find_first_of("/?#", host_start);
  if (host_end == std::string::npos) host_end = url.size();
  std::string authority = url.substr(host_start, host_end - host_start);
  if (const size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  std::string host = authority;
  // The port follows the last ':' unless it is inside an IPv6 literal's brackets.
  if (const size_t last = authority.rfind(':');
      last != std::string::npos && authority.find(']', last) == std::string::npos) {
    host = authority.substr(0, last);
    if (last + 1 < authority.size()) port = authority.substr(last + 1);
  }
  if (host.empty()) return std::nullopt;
  return scheme + "://" + ascii_lowercase(host) + ":" + port;
}

std::optional<std::string> protocol_short_name(const std::string& protocol) {
  const std::string p = ascii_lowercase(protocol);
  if (p.starts_with("http/1") || p == "http/0.9") return "h1";
  if (p == "h2" || p == "h2c" || p == "spdy" || p.starts_with("spdy/")) return "h2";
  if (p.starts_with("h3") || p.starts_with("quic") || p.starts_with("http/2+quic")) return "h3";
  return std::nullopt;
}

std::string navigation_error_reason(const std::string& error_text) {
  struct Known {
    const char* code;
    const char* meaning;
  };
  static const Known known[] = {
      {"net::ERR_NAME_NOT_RESOLVED", "DNS failure"},
      {"net::ERR_NAME_RESOLUTION_FAILED", "DNS failure"},
      {"net::ERR_CONNECTION_REFUSED", "connection refused"},
      {"net::ERR_CONNECTION_RESET", "connection reset"},
      {"net::ERR_CONNECTION_CLOSED", "connection closed"},
      {"net::ERR_CONNECTION_TIMED_OUT", "connection timed out"},
      {"net::ERR_TIMED_OUT", "timed out"},
      {"net::ERR_ADDRESS_UNREACHABLE", "address unreachable"},
      {"net::ERR_NETWORK_UNREACHABLE", "network unreachable"},
      {"net::ERR_INTERNET_DISCONNECTED", "no network"},
      {"net::ERR_EMPTY_RESPONSE", "empty response"},
      {"net::ERR_SSL_PROTOCOL_ERROR", "TLS error"},
      {"net::ERR_ABORTED", "navigation aborted"},
  };
  for (const Known& k : known) {
    if (error_text == k.code) return std::string(k.meaning) + " (" + error_text + ")";
  }
  if (error_text.starts_with("net::ERR_CERT_")) return "certificate error (" + error_text + ")";
  if (error_text.starts_with("net::ERR_SSL_")) return "TLS error (" + error_text + ")";
  if (error_text.starts_with("net::ERR_QUIC_") || error_text == "net::ERR_HTTP3_PROTOCOL_ERROR") {
    return "QUIC or HTTP/3 failed (" + error_text + "; with --http3, is the replay running with --http3?)";
  }
  return "navigation failed (" + error_text + ")";
}

void NetworkTally::response(const json& response) {
  const std::optional<std::string> origin = url_origin(string_at(response, {"url"}));
  if (!origin) return;
  requests_++;
  origins_.insert(*origin);
  if (const auto name = protocol_short_name(string_at(response, {"protocol"}))) {
    protocols_[*origin] = *name;
    if (*name != "h3" && origin->starts_with("https://")) https_not_h3_[*origin][*name]++;
  }
}

std::vector<std::string> https_hosts(const std::map<std::string, std::string>& origins) {
  std::set<std::string> hosts;
  for (const auto& [origin, protocol] : origins) {
    if (!origin.starts_with("https://")) continue;
    const std::string authority = origin.substr(8);
    const size_t colon = authority.rfind(':');
    hosts.insert(authority.substr(0, colon));
  }
  return {hosts.begin(), hosts.end()};
}

std::string http3_shortfall(const std::map<std::string, std::map<std::string, size_t>>& https_not_h3) {
  if (https_not_h3.empty()) return "";
  std::string text = "asked for HTTP/3, but ";
  size_t shown = 0;
  for (const auto& [origin, protocols] : https_not_h3) {
    if (shown == 3) {
      text += "; and " + std::to_string(https_not_h3.size() - shown) + " more origins";
      break;
    }
    if (shown++ > 0) text += "; ";
    text += origin + " answered";
    bool first = true;
    for (const auto& [protocol, count] : protocols) {
      text += (first ? " " : " and ") + std::to_string(count) + (count == 1 ? " request over " : " requests over ") +
              protocol;
      first = false;
    }
  }
  return text + " (is the replay running with --http3?)";
}

void NetworkTally::add(const json& event) {
  const std::string method = event.value("method", "");
  if (!event.contains("params") || !event["params"].is_object()) return;
  const json& params = event["params"];
  const std::string id = params.value("requestId", "");
  if (method == "Network.requestWillBeSent") {
    if (const json* redirect = find_path(params, {"redirectResponse"})) {
      // The redirect's response ends that hop: the same id goes on with the new URL.
      response(*redirect);
      bytes_ += number_at(*redirect, {"encodedDataLength"}).value_or(0);
    }
    Request& request = requests_by_id_[id];
    const std::optional<std::string> origin = url_origin(string_at(params, {"request", "url"}));
    request = Request{.network = origin.has_value(), .origin = origin.value_or("")};
  } else if (method == "Network.responseReceived") {
    Request& request = requests_by_id_[id];
    if (!request.network || request.responded) return;
    request.responded = true;
    request.received += number_at(params, {"response", "encodedDataLength"}).value_or(0);
    response(params["response"]);
  } else if (method == "Network.dataReceived") {
    requests_by_id_[id].received += number_at(params, {"encodedDataLength"}).value_or(0);
  } else if (method == "Network.loadingFinished") {
    const auto found = requests_by_id_.find(id);
    if (found == requests_by_id_.end() || !found->second.network) return;
    bytes_ += number_at(params, {"encodedDataLength"}).value_or(0);
    requests_by_id_.erase(found);
  } else if (method == "Network.loadingFailed") {
    failures_[id] = params.value("errorText", "failed");
    const auto found = requests_by_id_.find(id);
    if (found == requests_by_id_.end() || !found->second.network) return;
    bytes_ += found->second.received;
    if (!found->second.responded) {
      requests_++;
      origins_.insert(found->second.origin);
    }
    requests_by_id_.erase(found);
  }
}

std::string NetworkTally::failure_of(const std::string& request_id) const {
  const auto found = failures_.find(request_id);
  return found == failures_.end() ? "" : found->second;
}

std::vector<CapturedFrame> frames_since_navigation(std::vector<ScreencastFrame> frames, double time_origin_ms) {
  std::stable_sort(frames.begin(), frames.end(),
                   [](const ScreencastFrame& a, const ScreencastFrame& b) { return a.wall_ms < b.wall_ms; });
  std::vector<CapturedFrame> out;
  for (ScreencastFrame& frame : frames) {
    const double ms = frame.wall_ms - time_origin_ms;
    if (ms <= 0) {
      out.clear();  // only the last frame before the navigation is its blank start
      out.push_back(CapturedFrame{0, std::move(frame.png)});
    } else {
      out.push_back(CapturedFrame{ms, std::move(frame.png)});
    }
  }
  return out;
}
