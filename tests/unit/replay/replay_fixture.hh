// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Recordings for the replay unit tests: pairs described in a few fields, written to a temporary
// directory and loaded into a ReplayIndex; requests as Apache would hand them over; small
// assertions helpers on responses.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "recording/record_file.hh"
#include "replay/replay_index.hh"
#include "temp_files.hh"
#include "util/text.hh"

namespace replay_test {
namespace fs = std::filesystem;

struct PairSpec {
  std::string ip = "10.0.0.1";
  uint16_t port = 80;
  bool https = false;
  std::string request_line = "GET / HTTP/1.1";
  std::vector<HttpHeader> request_headers = {{"Host", "example.com"}, {"User-Agent", "UA"}};
  std::string status_line = "HTTP/1.1 200 OK";
  std::vector<HttpHeader> response_headers = {{"Content-Type", "text/plain"}};
  std::string body = "hello";
  uint64_t start_us = 0;
  std::string server_name, protocol;
  std::optional<uint64_t> rtt_us, think_us;    // the server's timing (fields 106, 108)
  std::vector<std::string> certificate_names;  // field 109
  std::string tls_version;                     // field 110
  std::string request_body;
};

inline RecordedPair make_pair(const PairSpec& s) {
  RecordedPair p;
  p.ip = s.ip;
  p.port = s.port;
  p.https = s.https;
  p.request.first_line = s.request_line;
  p.request.headers = s.request_headers;
  p.request.body = s.request_body;
  p.response.first_line = s.status_line;
  p.response.headers = s.response_headers;
  p.response.body = s.body;
  p.request_start_us = s.start_us;
  p.server_name = s.server_name;
  p.protocol = s.protocol;
  p.server_rtt_us = s.rtt_us;
  p.server_think_us = s.think_us;
  p.server_certificate_names = s.certificate_names;
  p.server_tls_version = s.tls_version;
  return p;
}

inline void write_file(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

inline void write_pair(const fs::path& dir, const std::string& name, const PairSpec& spec) {
  write_file(dir / name, serialize_pair(make_pair(spec)));
}

inline ReplayRequest get(std::string target, std::string host = "example.com", bool https = false,
                         std::optional<std::string> ua = std::string("UA"), std::string method = "GET") {
  ReplayRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.host = std::move(host);
  r.has_host = true;
  r.https = https;
  if (ua) {
    r.user_agent = *ua;
    r.has_user_agent = true;
  }
  return r;
}

inline std::optional<std::string> header(const ReplayResponse& r, std::string_view key) {
  for (const HttpHeader& h : r.headers) {
    if (equals_ignoring_case(h.key, key)) return h.value;
  }
  return std::nullopt;
}

inline size_t count_headers(const ReplayResponse& r, std::string_view key) {
  size_t n = 0;
  for (const HttpHeader& h : r.headers) n += equals_ignoring_case(h.key, key);
  return n;
}

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// One recording with one pair per spec, files named in order, loaded.
struct Recording {
  TempDir dir;
  std::vector<std::string> warnings;
  std::optional<ReplayIndex> index;
  explicit Recording(const std::vector<PairSpec>& specs, bool deterministic = false) {
    for (size_t i = 0; i < specs.size(); i++) write_pair(dir.path, "save." + std::to_string(100 + i), specs[i]);
    index.emplace(ReplayIndex::load(dir.path, &warnings, deterministic));
  }
  ReplayMatch match(const ReplayRequest& r, ReplayOptions options = {}) { return index->match(r, options); }
};

inline PairSpec at(std::string request_line, std::string body, std::string host = "example.com") {
  PairSpec s;
  s.request_line = std::move(request_line);
  s.body = std::move(body);
  s.request_headers = {{"Host", std::move(host)}, {"User-Agent", "UA"}};
  return s;
}
}  // namespace replay_test
