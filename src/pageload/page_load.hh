// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One page load in a fresh headless Chromium (pageload/chromium.hh), measured over DevTools:
// Navigation Timing's page-load time, paint timings, the network's counts and protocols, and
// the speed index of screencast frames. What the page or the browser does (a timeout, a DNS
// failure, a certificate error, a hung or crashed browser) is a row of the result, not an
// exception.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pageload/chromium.hh"
#include "pageload/load_report.hh"
#include "pageload/speed_index.hh"
#include "util/clock.hh"

struct LoadOptions {
  std::string url;
  int run = 1;
  Nanos timeout = 60 * kNanosPerSec;  // from the navigation to the load event
  BrowserOptions browser;
  // HTTP/3 found as on the web: a first load in the profile (forced QUIC, not measured) learns
  // the origins' Alt-Svc; its HTTP cache is emptied; a second browser on that profile, which
  // accepts the local CA over QUIC for the hosts the first load met but forces nothing, makes the
  // measured load, going to QUIC where an Alt-Svc said so (mm-replay --advertise-h3, or recorded).
  bool http3_discovery = false;
  // The URL comes on standard input once the browser is ready (mm-pageload --wait-for-url, the
  // ready loader of mm-cumulus-remote): one line, "URL" or "URL<TAB>User-Agent<TAB>Accept-Language",
  // the last two (if not empty) presented by the browser for this load. `url` is ignored.
  bool wait_for_url = false;
  // Capture the screencast's frames for the speed index (false: mm-pageload --no-speed-index,
  // no frames and no speed index, and none of the PNG work; mm-cumulus-remote's loads).
  bool screencast = true;
};

inline constexpr size_t kMaxWaitedLine = 8192;  // each field of the line

// A line of --wait-for-url's input: URL, User-Agent, Accept-Language (the last two may be empty).
struct WaitedUrl {
  std::string url, user_agent, accept_language;
};
// Splits it (a UsageError naming what is wrong: no URL, bad URL, too long).
WaitedUrl parse_waited_url(const std::string& line);

// The hosts of the https origins among `origins` ("https://a.test:443" -> "a.test"), once each.
std::vector<std::string> https_hosts(const std::map<std::string, std::string>& origins);

// Loads options.url once. Throws Interrupted (a signal on interrupt_fd: the browser is closed
// first) and UserError (the browser cannot be run at all); everything else is in the result.
LoadResult load_page(const LoadOptions& options, BrowserProfileTemplate& profiles, int interrupt_fd);

// ---- The pure parts, for the tests

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
