// SPDX-License-Identifier: GPL-3.0-or-later
// HAR export: the standard fields describe each exchange as other tools expect.
#include "compressed.hh"
#include "expect.hh"
#include "recording/har.hh"
#include "samples.hh"
#include "util/base64.hh"

using nlohmann::json;

TEST(HarExport, standard_fields_describe_the_exchange) {
  const json har = to_har(varied_entries());
  ASSERT_EQ(har["log"]["version"].get<std::string>(), std::string("1.2"));
  ASSERT_EQ(har["log"]["creator"]["name"].get<std::string>(), std::string("mahimahi"));
  const json& entries = har["log"]["entries"];
  ASSERT_EQ(entries.size(), size_t{6});
  auto find = [&](const std::string& file) -> const json& {
    for (const json& e : entries) {
      if (e["_mahimahi"]["file"] == file) return e;
    }
    throw std::runtime_error("no entry " + file);
  };
  const json& old = find("save.old");
  ASSERT_EQ(old["startedDateTime"].get<std::string>(), std::string("1970-01-01T00:00:00.000Z"));
  ASSERT_EQ(old["timings"]["send"].get<double>(), -1.0);
  ASSERT_EQ(old["request"]["url"].get<std::string>(), std::string("http://172.16.0.9/"));
  ASSERT_EQ(old["response"]["status"].get<int>(), 200);

  const json& chunked = find("save.chunked");
  ASSERT_EQ(chunked["request"]["url"].get<std::string>(), std::string("https://example.com/item/1?a=1&b=two"));
  ASSERT_EQ(chunked["response"]["content"]["text"].get<std::string>(), std::string("<h1>héllo"));
  ASSERT_EQ(chunked["connection"].get<std::string>(), std::string("443"));
  ASSERT_EQ(chunked["startedDateTime"].get<std::string>(), std::string("2023-11-14T22:13:20.001Z"));
  ASSERT_EQ(chunked["timings"]["send"].get<double>(), 0.15);
  ASSERT_EQ(chunked["timings"]["wait"].get<double>(), 19.85);
  ASSERT_EQ(chunked["timings"]["receive"].get<double>(), 5.0);
  ASSERT_EQ(chunked["time"].get<double>(), 25.0);
  ASSERT_EQ(chunked["request"]["queryString"][1]["value"].get<std::string>(), std::string("two"));

  const json& binary = find("save.binary");
  ASSERT_EQ(binary["response"]["content"]["encoding"].get<std::string>(), std::string("base64"));
  ASSERT_EQ(*base64_decode(binary["response"]["content"]["text"].get<std::string>()),
            bytes_of({0x89, 'P', 'N', 'G', 0, 0, 0xff, 0x0a}));
  ASSERT_TRUE(binary["_mahimahi"].contains("request_headers_raw"));

  const json& post = find("save.post");
  ASSERT_EQ(post["request"]["url"].get<std::string>(), std::string("http://example.com:8443/form?x=%41+b&y"));
  ASSERT_EQ(post["request"]["postData"]["text"].get<std::string>(), std::string("a=1&b=2"));
  ASSERT_EQ(post["request"]["queryString"][0]["value"].get<std::string>(), std::string("A b"));
  const json& binpost = find("save.binpost");
  ASSERT_EQ(*base64_decode(binpost["request"]["postData"]["_text_base64"].get<std::string>()),
            bytes_of({0, 0xc3, 0x28, 0xff}));
  ASSERT_EQ(find("save.304")["response"]["bodySize"].get<int>(), 0);
  ASSERT_TRUE(!find("save.304")["request"].contains("postData"));
}

TEST(HarExport, odd_first_lines_are_split_as_recorded) {
  RecordedPair p = sample_pair(2);
  p.request.first_line = "GET /a b HTTP/1.0";   // the target runs to the last space
  p.response.first_line = "HTTP/1.1 2000 Big";  // not a three-digit code: status 0
  RecordedPair old = sample_pair(4);
  old.request.first_line = "GET /only";  // HTTP/0.9 form: no version
  old.response.first_line = "HTTP/1.0 204";
  const json har = to_har({{"save.p", p}, {"save.old", old}});
  const json& first = har["log"]["entries"][0];
  EXPECT_EQ(first["request"]["url"], "http://example.com:8080/a b");
  EXPECT_EQ(first["request"]["httpVersion"], "HTTP/1.0");
  EXPECT_EQ(first["response"]["status"], 0);
  EXPECT_EQ(first["response"]["statusText"], "Big");
  const json& second = har["log"]["entries"][1];
  EXPECT_EQ(second["request"]["url"], "http://example.com:8080/only");
  EXPECT_EQ(second["request"]["httpVersion"], "");
  EXPECT_EQ(second["response"]["status"], 204);
  EXPECT_EQ(second["response"]["statusText"], "");
  EXPECT_EQ(second["startedDateTime"], "2023-11-14T22:13:20.004Z");
}

namespace {
RecordedPair encoded_pair(int n, const std::string& coding, const std::string& body, bool chunked = false) {
  RecordedPair p = sample_pair(n);
  p.response.headers = {{"Content-Type", "text/html; charset=utf-8"}, {"Content-Encoding", coding}};
  if (chunked) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx", body.size());
    p.response.headers.push_back({"Transfer-Encoding", "chunked"});
    p.response.body = std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n";
  } else {
    p.response.headers.push_back({"Content-Length", std::to_string(body.size())});
    p.response.body = body;
  }
  return p;
}

const std::string kPage = "<!doctype html><title>héllo</title>" + std::string(3000, 'x') + "\n";
}  // namespace

TEST(HarExport, content_text_is_decoded_as_har_says) {
  const std::string gz = gzipped(kPage);
  const std::string br = brotli_compressed(kPage);
  const std::string png = bytes_of({0x89, 'P', 'N', 'G', 0, 0xff, 0xfe, 1});
  const json har = to_har({{"save.gz", encoded_pair(1, "gzip", gz, true)},
                           {"save.br", encoded_pair(2, "br", br)},
                           {"save.deflate", encoded_pair(3, "deflate", zlib_compressed(kPage, 15))},
                           {"save.png", encoded_pair(4, "gzip", gzipped(png))}});
  const json& entries = har["log"]["entries"];
  for (size_t i = 0; i < 3; i++) {
    const json& content = entries[i]["response"]["content"];
    EXPECT_EQ(content["text"], kPage) << i;
    EXPECT_FALSE(content.contains("encoding")) << i;  // text, so no base64
    EXPECT_FALSE(content.contains("comment")) << i;
    EXPECT_EQ(content["size"], kPage.size()) << i;
    EXPECT_EQ(content["mimeType"], "text/html; charset=utf-8");
  }
  EXPECT_EQ(entries[0]["response"]["content"]["compression"], static_cast<int64_t>(kPage.size() - gz.size()));
  EXPECT_EQ(entries[1]["response"]["content"]["compression"], static_cast<int64_t>(kPage.size() - br.size()));
  // bodySize is what crossed the wire (chunk framing included).
  EXPECT_EQ(entries[0]["response"]["bodySize"], gz.size() + 4 + 2 + 5);
  const json& binary = entries[3]["response"]["content"];
  EXPECT_EQ(binary["encoding"], "base64");
  EXPECT_EQ(*base64_decode(binary["text"].get<std::string>()), png);
  EXPECT_EQ(binary["size"], png.size());
  // The private field keeps the exact bytes.
  EXPECT_EQ(*base64_decode(entries[1]["_mahimahi"]["response_body_raw_base64"].get<std::string>()), br);
  // A plain response has no compression figure.
  EXPECT_FALSE(to_har(varied_entries())["log"]["entries"][0]["response"]["content"].contains("compression"));
}

TEST(HarExport, content_that_cannot_be_decoded_stays_encoded_and_says_why) {
  const std::string gz = gzipped(kPage);
  const json har = to_har({{"save.cut", encoded_pair(1, "gzip", gz.substr(0, gz.size() / 2))},
                           {"save.zstd", encoded_pair(2, "zstd", "(zstd bytes)")}});
  const json& cut = har["log"]["entries"][0]["response"]["content"];
  EXPECT_EQ(cut["_contentEncoding"], "gzip");
  EXPECT_EQ(cut["encoding"], "base64");
  EXPECT_EQ(*base64_decode(cut["text"].get<std::string>()), gz.substr(0, gz.size() / 2));
  EXPECT_NE(cut["comment"].get<std::string>().find("the gzip data is truncated"), std::string::npos);
  EXPECT_FALSE(cut.contains("compression"));
  const json& zstd = har["log"]["entries"][1]["response"]["content"];
  EXPECT_EQ(zstd["_contentEncoding"], "zstd");
  EXPECT_EQ(zstd["text"], "(zstd bytes)");
}

// A content coding that is not UTF-8 is quoted in the comment as text JSON can hold: dump()
// threw on it (fuzz-record-file found it), so mm-recording to-har failed on such a recording.
TEST(HarExport, a_coding_name_that_is_not_utf8_is_quoted_as_text) {
  RecordedPair p = encoded_pair(1, "\x99\xfeip", "(bytes)");
  p.request.headers.push_back({"Content-Encoding", "\xff"});
  p.request.body = "x";
  const json har = to_har({{"save.odd", p}});
  std::string text;
  ASSERT_NO_THROW(text = har.dump());
  EXPECT_NE(har["log"]["entries"][0]["response"]["content"]["comment"].get<std::string>().find("not decoded"),
            std::string::npos);
}

TEST(HarExport, compressed_request_bodies_are_decoded_in_post_data) {
  RecordedPair p = sample_pair(1);
  p.request.first_line = "POST /api HTTP/1.1";
  p.request.headers = {{"Host", "example.com"}, {"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}};
  p.request.body = gzipped("{\"a\": 1}");
  const json post = to_har({{"save.post", p}})["log"]["entries"][0]["request"]["postData"];
  EXPECT_EQ(post["text"], "{\"a\": 1}");
  EXPECT_EQ(post["mimeType"], "application/json");
}
