// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The replay matcher's vocabulary, below the index and its helpers (misses, ranges) so that each
// of them includes it and none includes another's user: a request as it arrives and as it was
// recorded, the options of matching, the response ready to serve and the match, and the few
// functions on requests that loading and matching share.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/http_message.hh"

// A request as Apache hands it to the matcher (FastCGI parameters).
struct ReplayRequest {
  std::string method;
  std::string target;  // the request-target as received, query included (REQUEST_URI)
  std::string host;    // the Host header as received (may carry a port); empty if absent
  bool has_host = false;
  std::string user_agent;  // empty if absent
  bool has_user_agent = false;
  bool https = false;
  std::optional<std::string> range;     // the Range header, if any (see replay_range.hh)
  std::optional<std::string> if_range;  // the If-Range header, if any
  // The request's body, when it has one of at most kMaxMatchedBody bytes: among recorded
  // requests that match otherwise, one with the same body wins (POST APIs, GraphQL).
  std::optional<std::string> body;
};
constexpr size_t kMaxMatchedBody = 64 << 10;

// The hash by which request bodies are compared (64-bit FNV-1a).
uint64_t request_body_hash(std::string_view body);

struct ReplayOptions {
  bool ignore_user_agent = false;
  // Query parameters left out when requests are compared (cache busters: "_", "t", "cb"):
  // a request then matches a recorded one that differs only in their values, or in having them.
  std::vector<std::string> ignored_query_parameters = {};
  // Repeated identical requests: the recorded responses in recorded order, then the last again
  // (true, the default: a page that asks twice expects what the server sent the second time),
  // or always the first recorded one, the best match (false: mm-replay --repeats=first, as the
  // original mahimahi answers).
  bool repeats_in_order = true;
  // A request nothing matches: the explained 404 (false, the default), or no response at all
  // (true: mm-replay --unmatched=close; the match says close, and the servers close the TCP
  // connection it came on, over HTTP/1.1 or HTTP/2, or reset its HTTP/3 stream).
  bool close_unmatched = false;
};
// The most --ignore-query-param names, and their longest.
constexpr size_t kMaxIgnoredQueryParameters = 64, kMaxQueryParameterName = 256;

// `query` (after '?') without the parameters named in `names` (compared as written, before '=';
// a parameter with no '=' is named by all of it), the others in their order.
std::string without_query_parameters(std::string_view query, const std::vector<std::string>& names);

// A recorded think time is the recording's word: bounded, so that no file can hold a request
// (and a server thread) for longer than a browser would wait for a slow server.
constexpr uint64_t kMaxThinkUs = 30'000'000;

// The clock a deterministic page starts from when its pair has no recorded time (recordings of
// the original mahimahi): 2026-01-01T00:00:00Z, the same at every replay.
constexpr uint64_t kUnrecordedPageTimeMs = 1'767'225'600'000;

// A response ready for the CGI interface: hop-by-hop fields removed, body de-chunked.
struct ReplayResponse {
  // The recorded server's think time before its first byte (field 108, at most kMaxThinkUs):
  // with mm-replay --timing=recorded the fronts wait it before answering.
  uint64_t think_us = 0;
  int status = 0;
  std::string reason;
  std::vector<HttpHeader> headers;
  std::string body;
};

struct ReplayMatch {
  bool found = false;
  ReplayResponse response;  // when found: the recorded one; else a 404 whose body explains the miss
  std::string log_line;     // when not found: one line naming the request, nearest candidates, the field that differed
  bool close = false;       // not found, and to be answered with no response (ReplayOptions::close_unmatched)
};

// Length of the longest common substring of a and b (bytes).
size_t longest_common_substring(std::string_view a, std::string_view b);

// One valid recorded pair, its request split for matching and its response ready to serve.
struct ReplayEntry {
  bool https = false;
  std::string host;  // normalize_host() of the Host header
  std::string method;
  std::string target;  // origin-form request-target
  std::string path;    // target up to the first '?'
  std::string query;   // after the first '?', empty if none
  bool has_user_agent = false;
  std::string user_agent;
  std::optional<std::string> range;  // the recorded request's Range header, if any
  // Its body (de-chunked), by hash and size: nullopt when it had none.
  std::optional<std::pair<uint64_t, size_t>> request_body;
  std::string ip;
  uint16_t port = 0;
  uint64_t request_start_us = 0;
  std::string file;         // file name, for ordering and messages
  ReplayResponse response;  // its body left empty: the body is in the body store
  uint64_t body_offset = 0, body_size = 0;
};

// "http://host/p?q" -> "/p?q"; origin-form and anything else unchanged.
std::string origin_form(std::string_view target);

// `target` split at its first '?': the path before it, the query after it (empty if none).
void split_target(const std::string& target, std::string* path, std::string* query);
