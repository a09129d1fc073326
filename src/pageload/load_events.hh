// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a page load (page_load.hh) makes of DevTools' messages and of its input, apart from the
// browser: --wait-for-url's line, origins and protocols, a failed navigation's reason, the
// network's tally, HTTP/3's shortfall, and the screencast's frames on the load's time axis.
#include <cstddef>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pageload/speed_index.hh"

// A DevTools message's member at `path` (objects' keys, in order): nullptr, "" or nullopt when
// it is missing or not of that type.
const nlohmann::json* find_path(const nlohmann::json& value, std::initializer_list<const char*> path);
std::string string_at(const nlohmann::json& value, std::initializer_list<const char*> path);
std::optional<double> number_at(const nlohmann::json& value, std::initializer_list<const char*> path);

inline constexpr size_t kMaxWaitedLine = 8192;  // each field of the line

// A line of --wait-for-url's input: URL, User-Agent, Accept-Language (the last two may be empty).
struct WaitedUrl {
  std::string url, user_agent, accept_language;
};
// Splits it (a UsageError naming what is wrong: no URL, bad URL, too long).
WaitedUrl parse_waited_url(const std::string& line);

// The hosts of the https origins among `origins` ("https://a.test:443" -> "a.test"), once each.
std::vector<std::string> https_hosts(const std::map<std::string, std::string>& origins);

// "scheme://host:port" of an http, https, ws or wss URL, the port explicit (80, 443 by
// default); nullopt for other schemes (data:, blob:, chrome:), which never reach the network.
std::optional<std::string> url_origin(const std::string& url);

// "h1", "h2" or "h3" for DevTools' response.protocol ("http/1.1", "h2", "h3", "quic", ...);
// nullopt when it names no network protocol.
std::optional<std::string> protocol_short_name(const std::string& protocol);

// A readable reason for a failed navigation from Chromium's net error text
// ("net::ERR_NAME_NOT_RESOLVED" -> "DNS failure (net::ERR_NAME_NOT_RESOLVED)").
std::string navigation_error_reason(const std::string& error_text);

// The network side of a load from the page's Network events: bytes received, requests that got
// a response or failed, their origins and each origin's protocol.
class NetworkTally {
 public:
  // One DevTools event (the whole message: method and params).
  void add(const nlohmann::json& event);
  double bytes() const { return bytes_; }
  double requests() const { return static_cast<double>(requests_); }
  double origins() const { return static_cast<double>(origins_.size()); }
  const std::map<std::string, std::string>& protocols() const { return protocols_; }
  // The error text of a failed request with this id ("" if it did not fail).
  std::string failure_of(const std::string& request_id) const;
  // The https responses that came over another protocol than HTTP/3: origin -> protocol -> count.
  const std::map<std::string, std::map<std::string, size_t>>& https_not_h3() const { return https_not_h3_; }

 private:
  void response(const nlohmann::json& response);
  struct Request {
    bool network = false;  // an http(s)/ws(s) URL
    bool responded = false;
    double received = 0;  // bytes so far (headers and data), for a failure
    std::string origin;
  };
  std::map<std::string, Request> requests_by_id_;
  std::map<std::string, std::string> failures_;
  double bytes_ = 0;
  size_t requests_ = 0;
  std::set<std::string> origins_;
  std::map<std::string, std::string> protocols_;
  std::map<std::string, std::map<std::string, size_t>> https_not_h3_;
};

// The reason of a load that asked for HTTP/3 and got something else, naming the origins (at most
// three, then how many more) and what they answered over; empty if every https response was h3.
std::string http3_shortfall(const std::map<std::string, std::map<std::string, size_t>>& https_not_h3);

// A screencast frame as it arrived: its wall-clock time (ms since the Unix epoch, DevTools'
// metadata.timestamp) and its PNG bytes.
struct ScreencastFrame {
  double wall_ms;
  std::string png;
};

// The frames on the load's time axis: ms since the navigation started (`time_origin_ms`,
// performance.timeOrigin, the same wall clock). Frames before it show the page before the
// navigation: the last of them is kept, at 0 ms, as the blank start; the others are dropped.
std::vector<CapturedFrame> frames_since_navigation(std::vector<ScreencastFrame> frames, double time_origin_ms);
