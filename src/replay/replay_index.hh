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
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "http/host_header.hh"  // normalize_host(), the Host as the index compares it
#include "replay/replay_request.hh"
#include "replay/replay_server_spec.hh"

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

  using Entry = ReplayEntry;  // one valid recorded pair (replay_request.hh)

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

  // Per identical request: how many times it has been served (the lookup's; in replay_lookup.cc).
  struct Counters {
    std::mutex mutex;
    std::unordered_map<std::string, size_t> served;
  };
  std::unique_ptr<Counters> counters_;
  // The prepared bodies, one after the other, in an unlinked temporary file (in $TMPDIR, else
  // /tmp): the index keeps only where each one is, so a recording's bodies take disk and page
  // cache, not the matcher's memory. Read back with pread (safe from several threads).
  struct BodyStore;
  std::unique_ptr<BodyStore> bodies_;
  ReplayResponse response_of(const Entry& entry) const;  // the entry's response with its body
};
