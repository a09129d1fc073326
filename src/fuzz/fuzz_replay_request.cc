// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the replay matcher's handling of a request (replay/replay_index.hh,
// replay_range.hh) with every field Apache passes over FastCGI chosen by the input: method,
// request-target, Host, User-Agent, HTTPS, Range and If-Range. The recording is a fixed set of
// pairs (queries, a recorded 206, two responses to one request, chunked and empty bodies)
// written once to a temporary directory. A match must be a well-formed response: a status, and
// a body no longer than the recorded one it comes from.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "recording/record_file.hh"
#include "replay/replay_index.hh"
#include "replay/replay_range.hh"
#include "util/private_directory.hh"

namespace {

RecordedPair pair_of(std::string request_line, std::vector<HttpHeader> request_headers, std::string status_line,
                     std::vector<HttpHeader> response_headers, std::string body, uint64_t start_us) {
  RecordedPair p;
  p.ip = "10.0.0.1";
  p.port = 80;
  p.request.first_line = std::move(request_line);
  p.request.headers = std::move(request_headers);
  p.response.first_line = std::move(status_line);
  p.response.headers = std::move(response_headers);
  p.response.body = std::move(body);
  p.request_start_us = start_us;
  return p;
}

constexpr size_t kLongestBody = 4096;

ReplayIndex& index() {
  static ReplayIndex* loaded = [] {
    const std::filesystem::path dir = temporary_directory() / ("mm-fuzz-replay." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string big(kLongestBody, 'b');
    const std::vector<RecordedPair> pairs = {
        pair_of("GET / HTTP/1.1", {{"Host", "example.com"}, {"User-Agent", "UA"}}, "HTTP/1.1 200 OK",
                {{"Content-Type", "text/html"}, {"ETag", "\"v1\""}}, "<html>hello</html>", 1),
        pair_of("GET /a?x=1&y=2 HTTP/1.1", {{"Host", "example.com"}}, "HTTP/1.1 200 OK", {}, "first", 2),
        pair_of("GET /a?x=1&y=2 HTTP/1.1", {{"Host", "example.com"}}, "HTTP/1.1 200 OK", {}, "second", 3),
        pair_of("GET /a?z=9 HTTP/1.1", {{"Host", "example.com"}}, "HTTP/1.1 404 Not Found", {}, "", 4),
        pair_of("GET /video HTTP/1.1", {{"Host", "media.example.com:8080"}, {"Range", "bytes=0-99"}},
                "HTTP/1.1 206 Partial Content", {{"Content-Range", "bytes 0-99/4096"}}, std::string(100, 'v'), 5),
        pair_of("GET /big HTTP/1.1", {{"Host", "example.com"}}, "HTTP/1.1 200 OK",
                {{"Last-Modified", "Tue, 24 Nov 2026 05:00:00 GMT"}}, big, 6),
        pair_of("POST /form HTTP/1.1", {{"Host", "example.com"}}, "HTTP/1.1 302 Found", {{"Location", "/"}}, "", 7),
        pair_of("GET /chunked HTTP/1.1", {{"Host", "example.com"}}, "HTTP/1.1 200 OK",
                {{"Transfer-Encoding", "chunked"}}, "5\r\nhello\r\n0\r\n\r\n", 8),
    };
    int n = 0;
    for (const RecordedPair& pair : pairs) {
      std::ofstream(dir / ("save." + std::to_string(n++)), std::ios::binary) << serialize_pair(pair);
    }
    auto* index = new ReplayIndex(ReplayIndex::load(dir, nullptr));
    std::filesystem::remove_all(dir);  // the index holds what it needs
    return index;
  }();
  return *loaded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  ReplayRequest request;
  request.method = input.ConsumeRandomLengthString(16);
  request.target = input.ConsumeRandomLengthString(256);
  request.has_host = input.ConsumeBool();
  if (request.has_host) request.host = input.ConsumeRandomLengthString(64);
  request.has_user_agent = input.ConsumeBool();
  if (request.has_user_agent) request.user_agent = input.ConsumeRandomLengthString(64);
  request.https = input.ConsumeBool();
  if (input.ConsumeBool()) request.range = input.ConsumeRandomLengthString(128);
  if (input.ConsumeBool()) request.if_range = input.ConsumeRandomLengthString(64);
  const ReplayOptions options{.ignore_user_agent = input.ConsumeBool()};

  const ReplayMatch match = index().match(request, options);
  FUZZ_CHECK(match.response.status >= 100 && match.response.status <= 599);
  if (match.found) {
    FUZZ_CHECK(match.response.body.size() <= kLongestBody);
  } else {
    FUZZ_CHECK(!match.log_line.empty());
  }
  if (request.range) {
    if (const auto specs = parse_range_header(*request.range)) {
      for (const ByteRange& r : merge_ranges(satisfiable_ranges(*specs, kLongestBody)))
        FUZZ_CHECK(r.first <= r.last && r.last < kLongestBody);
    }
    (void)parse_content_range(*request.range);
  }
  return 0;
}
