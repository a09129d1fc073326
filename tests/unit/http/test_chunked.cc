// SPDX-License-Identifier: GPL-3.0-or-later
// De-chunking stored bodies.
#include "expect.hh"
#include "http/chunked.hh"

TEST(Chunked, decoded_body_dechunks_with_extensions_and_trailers) {
  HttpMessage m{"HTTP/1.1 200 OK", {{"Transfer-Encoding", "chunked"}}, ""};
  m.body = "5;name=value\r\nhello\r\n1A\r\n" + std::string(26, 'x') + "\r\n0\r\nExpires: never\r\nX-Trailer: 1\r\n\r\n";
  ASSERT_EQ(decoded_body(m), "hello" + std::string(26, 'x'));
  m.headers = {{"transfer-encoding", "gzip, Chunked"}};
  ASSERT_EQ(decoded_body(m), "hello" + std::string(26, 'x'));
  m.body = std::string("3\r\na\0b\r\n0\r\n\r\n", 13);
  ASSERT_EQ(decoded_body(m), std::string("a\0b", 3));
  m.body = "5\r\nhel";  // truncated: what arrived
  ASSERT_EQ(decoded_body(m), std::string("hel"));
  m.headers = {{"Content-Length", "6"}};
  m.body = "5\r\nhel";  // not chunked: as is
  ASSERT_EQ(decoded_body(m), std::string("5\r\nhel"));
  m.headers = {{"Transfer-Encoding", "chunked, gzip"}};  // chunked is not the final coding
  ASSERT_TRUE(!is_chunked(m));
}

TEST(Chunked, hex_digit_values) {
  EXPECT_EQ(hex_digit_value('0'), 0);
  EXPECT_EQ(hex_digit_value('9'), 9);
  EXPECT_EQ(hex_digit_value('a'), 10);
  EXPECT_EQ(hex_digit_value('F'), 15);
  EXPECT_EQ(hex_digit_value('g'), -1);
  EXPECT_EQ(hex_digit_value('/'), -1);
  EXPECT_EQ(hex_digit_value(':'), -1);
  EXPECT_EQ(hex_digit_value('\xff'), -1);
}
