// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The replay matcher: every recorded pair of a directory is loaded once into an index keyed by
// (scheme, normalised Host, method, path), with each response prepared for serving (hop-by-hop
// fields dropped, body de-chunked, Content-Length right), so that answering a request costs a
// hash lookup and a few string comparisons instead of the original's per-request directory scan.
// Matching follows the original heuristic with its flaws fixed: Host is compared
// case-insensitively with default ports dropped, the HTTP version is ignored, the closest query
// wins by longest common substring, repeated identical requests get the recorded responses in
// recorded order, and a miss explains which field differed from the nearest recorded requests.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "http/http_message.hh"
#include "replay/replay_server_spec.hh"

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

// One server the replay must run: a recorded IP:port.
struct ReplayOrigin {
  std::string ip;
  uint16_t port = 0;
  bool https = false;
  std::vector<std::string> names;  // host names recorded there (Host without port, SNI), lower case, sorted, unique;
                                   // IP literals are left out (the origin's own ip is always known)
  bool h2 = false;                 // a pair recorded there says protocol "h2"
  std::optional<uint64_t> rtt_us;  // the smallest round trip mm-record measured to it (field 106)
  // Its certificates as recorded (field 109; see ReplayCertificate), empty if none was.
  std::vector<ReplayCertificate> certificates;
  // "TLSv1.2" if every recorded handshake with it chose TLS 1.2 (field 110), else empty.
  std::string tls_max;
};

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

// Host as compared by the matcher: lower case, trailing dot of the name dropped, the scheme's
// default port dropped ("Example.COM.:443" over https -> "example.com"). Empty stays empty.
std::string normalize_host(std::string_view host, bool https);

// Length of the longest common substring of a and b (bytes).
size_t longest_common_substring(std::string_view a, std::string_view b);

class ReplayIndex {
 public:
  // Loads every pair of DIR once (corrupt files, pairs without Host, with an invalid ip/port or
  // an unparsable request or status line are skipped with a warning each; warnings may be null).
  // UserError if DIR is missing/unreadable or holds no valid pair. With `deterministic`
  // (mm-replay --deterministic), every HTML page gets the script of http/deterministic_page.hh
  // for the time its request was recorded (kUnrecordedPageTimeMs for a pair without times).
  static ReplayIndex load(const std::filesystem::path& dir, std::vector<std::string>* warnings,
                          bool deterministic = false);
  const std::vector<ReplayOrigin>& origins() const;
  // host name (lower case, no port) -> recorded IPs, for DNS.
  const std::map<std::string, std::vector<std::string>>& names() const;
  size_t pairs() const;
  // Thread-safe. Repeated identical requests get the recorded responses in recorded order, then
  // the last again (unless options.repeats_in_order is false: then always the first).
  // A GET with a Range gets the part it asks for; a request without one never gets a 206
  // (replay_range.hh).
  ReplayMatch match(const ReplayRequest& request, const ReplayOptions& options);

  ReplayIndex(ReplayIndex&&) noexcept;
  ReplayIndex& operator=(ReplayIndex&&) noexcept;
  ~ReplayIndex();

  // "N of M responses with a think time, median X ms, p90 Y ms" (or that none has one).
  std::string think_time_summary() const;

  // One valid recorded pair, its request split for matching and its response ready to serve.
  struct Entry {
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

 private:
  ReplayMatch match_recorded(const ReplayRequest& request, const ReplayOptions& options);
  ReplayIndex();
  void build_lookup_tables();  // by_key_, by_host_, by_path_ from entries_

  std::vector<Entry> entries_;  // in recorded order: request_start_us, then file name
  // "s|p" + '\n' + host + '\n' + method + '\n' + path -> entries, in recorded order
  std::unordered_map<std::string, std::vector<uint32_t>> by_key_;
  std::unordered_map<std::string, std::vector<uint32_t>> by_host_;  // for explaining misses
  std::unordered_map<std::string, std::vector<uint32_t>> by_path_;
  std::vector<ReplayOrigin> origins_;
  std::map<std::string, std::vector<std::string>> names_;

  struct Counters;  // per identical request: how many times it has been served
  std::unique_ptr<Counters> counters_;
  // The prepared bodies, one after the other, in an unlinked temporary file (in $TMPDIR, else
  // /tmp): the index keeps only where each one is, so a recording's bodies take disk and page
  // cache, not the matcher's memory. Read back with pread (safe from several threads).
  struct BodyStore;
  std::unique_ptr<BodyStore> bodies_;
  ReplayResponse response_of(const Entry& entry) const;  // the entry's response with its body
};
