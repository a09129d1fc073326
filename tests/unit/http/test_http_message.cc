// SPDX-License-Identifier: GPL-3.0-or-later
// One recorded message: header lookup and the bytes on the wire.
#include "expect.hh"
#include "http/http_message.hh"

TEST(HttpMessage, header_lookup_is_case_insensitive_and_takes_the_first) {
  const HttpMessage m{"HTTP/1.1 200 OK", {{"Set-Cookie", "a=1"}, {"set-cookie", "b=2"}, {"X-Empty", ""}}, ""};
  EXPECT_EQ(*m.header("SET-COOKIE"), "a=1");
  EXPECT_EQ(*m.header("x-empty"), "");
  EXPECT_FALSE(m.header("Content-Length"));
  EXPECT_FALSE(m.header("Set-Cookie2"));
}

TEST(HttpMessage, serialize_writes_the_message_as_recorded) {
  const HttpMessage m{"POST /x HTTP/1.1", {{"Host", "a"}, {"X-Trailing", "v  "}}, std::string("b\0dy", 4)};
  EXPECT_EQ(m.serialize(), std::string("POST /x HTTP/1.1\r\nHost: a\r\nX-Trailing: v  \r\n\r\nb\0dy", 50));
  const HttpMessage bare{"GET / HTTP/1.0", {}, ""};
  EXPECT_EQ(bare.serialize(), "GET / HTTP/1.0\r\n\r\n");
}
