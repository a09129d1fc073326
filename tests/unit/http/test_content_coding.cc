// SPDX-License-Identifier: GPL-3.0-or-later
// Undoing content codings: gzip (several members too), deflate (zlib and raw), br, stacked
// codings, de-chunking first; unknown, corrupt and truncated data say why.
#include "compressed.hh"
#include "expect.hh"
#include "http/content_coding.hh"

namespace {
const std::string kText = "<!doctype html><p>" + std::string(5000, 'a') + "héllo</p>\n";
}  // namespace

TEST(ContentCoding, codings_are_listed_in_order_applied_without_identity) {
  HttpMessage m{
      "HTTP/1.1 200 OK", {{"content-encoding", "GZIP"}, {"X", "y"}, {"Content-Encoding", "identity, br ,"}}, ""};
  const std::vector<std::string> expected = {"gzip", "br"};
  EXPECT_EQ(content_codings(m), expected);
  EXPECT_EQ(coding_list_text(expected), "gzip, br");
  EXPECT_TRUE(content_codings(HttpMessage{"HTTP/1.1 200 OK", {{"Content-Encoding", "identity"}}, "x"}).empty());
}

TEST(ContentCoding, gzip_deflate_and_br_are_undone) {
  std::string why;
  EXPECT_EQ(decode_content(gzipped(kText), {"gzip"}, &why), kText);
  EXPECT_EQ(decode_content(gzipped(kText), {"x-gzip"}, &why), kText);
  EXPECT_EQ(decode_content(zlib_compressed(kText, 15), {"deflate"}, &why), kText);
  EXPECT_EQ(decode_content(zlib_compressed(kText, -15), {"deflate"}, &why), kText);  // raw, as some servers send
  EXPECT_EQ(decode_content(brotli_compressed(kText), {"br"}, &why), kText);
  EXPECT_EQ(decode_content("", {}, &why), "");
  // Two gzip members, one after the other, are one content (RFC 1952).
  EXPECT_EQ(decode_content(gzipped("one ") + gzipped("two"), {"gzip"}, &why), "one two");
  // Stacked codings are undone last first.
  EXPECT_EQ(decode_content(brotli_compressed(gzipped(kText)), {"gzip", "br"}, &why), kText);
}

TEST(ContentCoding, message_content_dechunks_then_decodes) {
  const std::string gz = gzipped(kText);
  char size[16];
  std::snprintf(size, sizeof size, "%zx", gz.size() - 10);
  HttpMessage m{"HTTP/1.1 200 OK", {{"Transfer-Encoding", "chunked"}, {"Content-Encoding", "gzip"}}, ""};
  m.body = "a\r\n" + gz.substr(0, 10) + "\r\n" + size + "\r\n" + gz.substr(10) + "\r\n0\r\n\r\n";
  std::string why;
  EXPECT_EQ(message_content(m, &why), kText);
  m.headers = {{"Content-Type", "text/plain"}};
  m.body = "plain";
  EXPECT_EQ(message_content(m, &why), "plain");
}

TEST(ContentCoding, unknown_corrupt_and_truncated_data_say_why) {
  std::string why;
  EXPECT_EQ(decode_content("x", {"zstd"}, &why), std::nullopt);
  EXPECT_NE(why.find("\"zstd\" is not one mahimahi decodes"), std::string::npos) << why;
  EXPECT_EQ(decode_content("not gzip at all", {"gzip"}, &why), std::nullopt);
  EXPECT_EQ(why, "the gzip data is corrupt");
  const std::string gz = gzipped(kText);
  EXPECT_EQ(decode_content(gz.substr(0, gz.size() - 20), {"gzip"}, &why), std::nullopt);
  EXPECT_EQ(why, "the gzip data is truncated");
  const std::string br = brotli_compressed(kText);
  EXPECT_EQ(decode_content(br.substr(0, br.size() / 2), {"br"}, &why), std::nullopt);
  EXPECT_EQ(why, "the br data is truncated");
  EXPECT_EQ(decode_content("\xff\xff\xff\xff", {"br"}, &why), std::nullopt);
  EXPECT_EQ(why, "the br data is corrupt");
  EXPECT_TRUE(is_known_coding("br") && is_known_coding("deflate") && !is_known_coding("compress"));
}

TEST(ContentCoding, decoded_size_is_bounded) {
  // A bomb: 4 MiB of zeros in a few KiB. Decoding stops at the bound instead of holding it all.
  const std::string bomb = gzipped(std::string(4 << 20, '\0'));
  ASSERT_LT(bomb.size(), size_t{8192});
  std::string why;
  EXPECT_EQ(decode_content(bomb, {"gzip"}, &why, 1 << 20), std::nullopt);
  EXPECT_EQ(why, "the decoded content exceeds 1048576 bytes");
  EXPECT_EQ(decode_content(brotli_compressed(std::string(4 << 20, 'z')), {"br"}, &why, 1 << 20), std::nullopt);
  EXPECT_EQ(why, "the decoded content exceeds 1048576 bytes");
  EXPECT_EQ(decode_content(bomb, {"gzip"}, &why)->size(), size_t{4 << 20});
}
