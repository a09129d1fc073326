// SPDX-License-Identifier: GPL-3.0-or-later
// Base64: round trips of every length, padding and whitespace tolerance, rejected input.
#include "expect.hh"
#include "util/base64.hh"

TEST(Base64, every_length_round_trips) {
  std::string all;
  for (int i = 0; i < 256; i++) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 1) {
    const std::string data = all.substr(0, n);
    auto back = base64_decode(base64_encode(data));
    ASSERT_TRUE(back.has_value());
    ASSERT_TRUE(*back == data);
  }
  const std::string big(5 << 20, '\x7f');  // more than one EVP block call
  ASSERT_TRUE(*base64_decode(base64_encode(big)) == big);
}

TEST(Base64, encoding_is_padded_standard_base64) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("a"), "YQ==");
  EXPECT_EQ(base64_encode("ab"), "YWI=");
  EXPECT_EQ(base64_encode("abc"), "YWJj");
  EXPECT_EQ(base64_encode("\xfb\xff"), "+/8=");
}

TEST(Base64, decoding_tolerates_whitespace_and_missing_padding) {
  EXPECT_EQ(*base64_decode("YWI"), "ab");  // missing padding tolerated
  EXPECT_EQ(*base64_decode("YWI="), "ab");
  EXPECT_EQ(*base64_decode("YWI=="), "ab");      // one '=' too many is tolerated too
  EXPECT_EQ(*base64_decode("YW\nJj\n"), "abc");  // line breaks ignored
  EXPECT_EQ(*base64_decode(" Y W\tJ j\r\n"), "abc");
  EXPECT_EQ(*base64_decode(""), "");
}

TEST(Base64, decoding_rejects_what_is_not_base64) {
  EXPECT_FALSE(base64_decode("YW=I"));   // data after the padding
  EXPECT_FALSE(base64_decode("Y"));      // a lone character
  EXPECT_FALSE(base64_decode("YWJj!"));  // outside the alphabet
  EXPECT_FALSE(base64_decode("YQ==="));  // three '='
  EXPECT_FALSE(base64_decode("YW-_"));   // the URL-safe alphabet is not accepted
}
