// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Local Proxy's cache: the responses one bulk response brought, for one page load (a new
// navigation empties it). A request is answered from it only by a pair the Remote Proxy's
// browser made with the same scheme, host (compared as the replay compares it: case and default
// port aside), method and request-target, byte for byte: a request the remote browser made
// differently (a query built from the clock, another User-Agent's variant) is not guessed at but
// forwarded to its origin. Only GET and HEAD are answered from it: any other method has effects
// at the origin, which must see the user's own request. Repeated identical requests get the
// recorded responses in the order the remote browser got them, then the last again.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "recording/record_file.hh"

// A response as the Local Proxy sends it to the browser.
struct CachedResponse {
  std::string bytes;         // as the origin sent it: status line, fields, body (chunked if it was)
  bool close_after = false;  // its end is the end of the connection (Connection: close, or no framing)
};

// The absolute request a redirect's Location leads to from the request it answered: (https,
// host, origin-form target); nullopt for what a browser would not follow as a navigation here
// (another scheme, an unparsable value).
struct RedirectTarget {
  bool https;
  std::string host, target;
};
std::optional<RedirectTarget> redirect_target(std::string_view location, bool https, std::string_view host,
                                              std::string_view request_target);

// Whether a response to `method` ends only where its connection does (HTTP/1.0 without
// Content-Length, or "Connection: close"): then the proxy closes after sending it.
bool response_closes_connection(const HttpMessage& response, std::string_view method);

class BulkCache {
 public:
  explicit BulkCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // Keeps the pair for requests to come; false when it was not kept: not a GET or HEAD, no
  // Host, or the cache's bound would be passed (counted in refused_bytes()).
  bool add(RecordedPair&& pair);
  // The response for this request, if a pair matched (each call takes the next of repeats).
  std::optional<CachedResponse> take(bool https, std::string_view host, std::string_view method,
                                     std::string_view target);
  // Whether a redirect among the kept pairs leads to this URL (the page's own redirects, which
  // the remote browser followed: a navigation there belongs to the same page load).
  bool redirects_to(bool https, std::string_view host, std::string_view target) const;
  void clear();

  size_t entries() const { return entries_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t refused_bytes() const { return refused_bytes_; }

 private:
  struct Slot {
    std::vector<CachedResponse> responses;
    size_t served = 0;
  };
  static std::string key(bool https, std::string_view host, std::string_view method, std::string_view target);
  std::unordered_map<std::string, Slot> slots_;
  std::unordered_set<std::string> redirect_targets_;  // key()s of GETs that a kept 3xx points to
  uint64_t max_bytes_;
  uint64_t bytes_ = 0, refused_bytes_ = 0;
  size_t entries_ = 0;
};
