// SPDX-License-Identifier: GPL-3.0-or-later
// mm-recording's views: the ls table and the show description.
#include "compressed.hh"
#include "expect.hh"
#include "recording/inspect.hh"
#include "samples.hh"

TEST(Inspect, table_in_request_order_with_aligned_columns) {
  RecordedPair late = sample_pair(2);
  late.request_start_us += 1000000;
  RecordedPair odd = sample_pair(1);
  odd.request.first_line = "GET";  // no target: empty column
  odd.request.headers.clear();     // no Host: the server's address
  odd.response.first_line = "HTTP/1.1 2xx weird";
  late.response.headers.push_back({"alt-svc", "h2=\":443\", h3=\":443\"; ma=86400"});
  const std::string table = recording_table({{"dir/save.late", late}, {"dir/save.odd", odd}}, false);
  EXPECT_EQ(table,
            "METHOD  SCHEME  HOST          PATH               STATUS  BYTES  H3  FILE\n"
            "GET     https   10.0.0.2:443                     2xx     9      -   save.odd\n"
            "GET     http    example.com   /item/2?a=1&b=two  200     9      h3  save.late\n");
}

TEST(Inspect, long_paths_are_shortened_unless_wide) {
  RecordedPair p = sample_pair(2);
  p.request.first_line = "GET /" + std::string(100, 'p') + " HTTP/1.1";
  const std::string narrow = recording_table({{"save.x", p}}, false);
  EXPECT_NE(narrow.find("/" + std::string(56, 'p') + "..."), std::string::npos);
  EXPECT_EQ(narrow.find(std::string(57, 'p')), std::string::npos);
  const std::string wide = recording_table({{"save.x", p}}, true);
  EXPECT_NE(wide.find("/" + std::string(100, 'p') + " "), std::string::npos);
}

TEST(Inspect, show_describes_the_pair_and_dechunks_text) {
  RecordedPair p = sample_pair(1);
  p.response.headers = {{"Transfer-Encoding", "chunked"}};
  p.response.body = "5\r\nhello\r\n0\r\n\r\n";
  const std::string text = describe_pair("dir/save.a", p, BodyView::summary);
  EXPECT_NE(text.find("file          dir/save.a\n"), std::string::npos);
  EXPECT_NE(text.find("server        10.0.0.2:443 (https)\n"), std::string::npos);
  EXPECT_NE(text.find("request start 2023-11-14 22:13:20.001000 UTC\n"), std::string::npos);
  EXPECT_NE(text.find("request end   +0.150 ms\n"), std::string::npos);
  EXPECT_NE(text.find("---- response (body chunked: 15 bytes stored, 5 bytes of content) ----\n"), std::string::npos);
  EXPECT_NE(text.find("\nhello\n"), std::string::npos);
}

TEST(Inspect, show_summarises_binary_and_knows_original_records) {
  RecordedPair p = sample_pair(2);
  p.request_start_us = p.request_end_us = p.response_first_byte_us = p.response_last_byte_us = 0;
  const std::string text = describe_pair("save.b", p, BodyView::summary);
  EXPECT_NE(text.find("timestamps    unknown"), std::string::npos);
  EXPECT_NE(text.find("<9 bytes, binary>\n"), std::string::npos);
  const std::string raw = describe_pair("save.b", p, BodyView::raw);
  EXPECT_NE(raw.find("---- response, as stored ----\nHTTP/1.1 200 OK\r\n"), std::string::npos);
  EXPECT_NE(raw.find(p.response.body), std::string::npos);
}

TEST(Inspect, show_decode_decompresses_chunked_gzip_and_br) {
  RecordedPair p = sample_pair(1);
  const std::string gz = gzipped("hello, decoded world\n");
  char size[16];
  std::snprintf(size, sizeof size, "%zx", gz.size());
  p.response.headers = {{"Content-Type", "text/plain"}, {"Transfer-Encoding", "chunked"}, {"Content-Encoding", "gzip"}};
  p.response.body = std::string(size) + "\r\n" + gz + "\r\n0\r\n\r\n";
  const std::string summary = describe_pair("save.gz", p, BodyView::summary);
  EXPECT_NE(summary.find("gzip-compressed; --decode shows it decoded>\n"), std::string::npos) << summary;
  const std::string decoded = describe_pair("save.gz", p, BodyView::decoded);
  EXPECT_NE(decoded.find("\nhello, decoded world\n"), std::string::npos) << decoded;
  EXPECT_NE(decoded.find("of content; 21 decoded from gzip) ----\n"), std::string::npos) << decoded;

  p.response.headers = {{"Content-Encoding", "br"}};
  p.response.body = brotli_compressed(std::string("\x01\x02 binary", 9));
  EXPECT_NE(describe_pair("save.br", p, BodyView::decoded).find("<9 bytes, binary, decoded from br>\n"),
            std::string::npos);
  p.response.body = "not br";
  EXPECT_NE(describe_pair("save.br", p, BodyView::decoded).find("<6 bytes, br, not decoded: the br data is corrupt>\n"),
            std::string::npos);
}
