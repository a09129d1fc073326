// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Recorded pairs for the recording tests: sample_pair(n) varies address, scheme and times with
// n; varied_entries() covers what HAR conversion must keep (chunked, binary, non-UTF-8 header
// bytes, POST forms, binary uploads, 304, an original Mahimahi record without our fields).
#include <initializer_list>
#include <string>
#include <vector>

#include "recording/record_file.hh"

inline std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}

inline RecordedPair sample_pair(int n) {
  RecordedPair p;
  p.ip = "10.0.0." + std::to_string(n % 250 + 1);
  p.port = static_cast<uint16_t>(n % 2 ? 443 : 8080);
  p.https = n % 2;
  p.request.first_line = "GET /item/" + std::to_string(n) + "?a=1&b=two HTTP/1.1";
  p.request.headers = {{"Host", "example.com"}, {"User-Agent", "test"}, {"x-lower", "v"}};
  p.response.first_line = "HTTP/1.1 200 OK";
  p.response.headers = {{"Content-Type", "application/octet-stream"}, {"Content-Length", "9"}};
  p.response.body = std::string("bin\0ary", 7) + static_cast<char>(0xff) + std::to_string(n % 10);
  p.request_start_us = 1700000000000000ULL + static_cast<uint64_t>(n) * 1000;
  p.request_end_us = p.request_start_us + 150;
  p.response_first_byte_us = p.request_start_us + 20000;
  p.response_last_byte_us = p.request_start_us + 25000;
  p.server_name = p.https ? "example.com" : "";
  p.protocol = "http/1.1";
  if (n % 3 != 0) {  // the server's timing (fields 106-108), a think time of 0 included
    p.server_rtt_us = 4000 + static_cast<uint64_t>(n);
    p.server_connect_us = 4200 + static_cast<uint64_t>(n);
    p.server_think_us = n % 3 == 1 ? 0 : 15850 - static_cast<uint64_t>(n);
    if (p.https) p.server_certificate_names = {"example.com", "*.example.com"}, p.server_tls_version = "TLSv1.3";
  }
  return p;
}

inline std::vector<RecordingEntry> varied_entries() {
  std::vector<RecordingEntry> entries;
  RecordedPair chunked = sample_pair(1);
  chunked.response.headers = {{"Content-Type", "text/html; charset=utf-8"}, {"Transfer-Encoding", "chunked"}};
  chunked.response.body = "4;ext=1\r\n<h1>\r\n6\r\nhéllo\r\n0\r\nX-Trailer: yes\r\n\r\n";
  entries.push_back({"save.chunked", chunked});

  RecordedPair binary = sample_pair(2);
  binary.response.headers = {{"Content-Type", "image/png"}, {"Content-Length", "8"}};
  binary.response.body = bytes_of({0x89, 'P', 'N', 'G', 0, 0, 0xff, 0x0a});
  binary.request.headers.push_back({"X-Latin1", bytes_of({'c', 0xe9})});  // not UTF-8
  entries.push_back({"save.binary", binary});

  RecordedPair post = sample_pair(3);
  post.request.first_line = "POST /form?x=%41+b&y HTTP/1.1";
  post.request.headers = {
      {"Host", "example.com:8443"}, {"Content-Type", "application/x-www-form-urlencoded"}, {"Content-Length", "7"}};
  post.request.body = "a=1&b=2";
  post.port = 8443;
  post.https = false;
  entries.push_back({"save.post", post});

  RecordedPair binary_post = sample_pair(4);
  binary_post.request.first_line = "PUT /blob HTTP/1.1";
  binary_post.request.body = bytes_of({0, 0xc3, 0x28, 0xff});
  entries.push_back({"save.binpost", binary_post});

  RecordedPair not_modified = sample_pair(5);
  not_modified.response.first_line = "HTTP/1.1 304 Not Modified";
  not_modified.response.headers = {{"ETag", "\"abc\""}};
  not_modified.response.body = "";
  entries.push_back({"save.304", not_modified});

  RecordedPair old;  // as the original records: no timestamps, no server name
  old.ip = "172.16.0.9";
  old.port = 80;
  old.request = {"GET / HTTP/1.0", {}, ""};
  old.response = {std::string("HTTP/1.0 200 Fine \xff", 19), {{"Server", "x"}}, "body"};
  entries.push_back({"save.old", old});
  return entries;
}
