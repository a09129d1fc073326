// SPDX-License-Identifier: GPL-3.0-or-later
#include "expect.hh"
#include "util/text.hh"

TEST(Text, ascii_lowercase_changes_only_ascii_capitals) {
  EXPECT_EQ(ascii_lowercase("WWW.Example.COM:8080"), "www.example.com:8080");
  EXPECT_EQ(ascii_lowercase("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // UTF-8 bytes untouched
  EXPECT_EQ(ascii_lowercase(""), "");
}

TEST(Text, case_insensitive_comparisons) {
  EXPECT_TRUE(equals_ignoring_case("Content-Length", "content-length"));
  EXPECT_FALSE(equals_ignoring_case("Content-Length", "Content-Lengths"));
  EXPECT_FALSE(equals_ignoring_case("[", "{"));  // 0x5b and 0x7b differ by 32 but are not letters
  EXPECT_TRUE(starts_with_ignoring_case("HTTP/1.1 200 OK", "http/"));
  EXPECT_FALSE(starts_with_ignoring_case("HTT", "http/"));
}

TEST(Text, trim_blanks_removes_spaces_and_tabs_only) {
  EXPECT_EQ(trim_blanks(" \t gzip \t"), "gzip");
  EXPECT_EQ(trim_blanks("a b"), "a b");
  EXPECT_EQ(trim_blanks("\r\nx\n"), "\r\nx\n");
  EXPECT_EQ(trim_blanks("   "), "");
}

TEST(Text, decimal_value_takes_digits_only_and_all_of_them) {
  EXPECT_EQ(decimal_value("0080"), std::optional<uint64_t>(80));
  EXPECT_EQ(decimal_value("18446744073709551615"), std::optional<uint64_t>(UINT64_MAX));
  EXPECT_EQ(decimal_value("18446744073709551616"), std::nullopt);  // does not fit
  EXPECT_EQ(decimal_value(""), std::nullopt);
  EXPECT_EQ(decimal_value("-1"), std::nullopt);
  EXPECT_EQ(decimal_value("+1"), std::nullopt);
  EXPECT_EQ(decimal_value("12 "), std::nullopt);
  EXPECT_EQ(decimal_value("0x10"), std::nullopt);
}

TEST(Text, printable_escapes_control_bytes_and_shortens) {
  EXPECT_EQ(printable("GET /\x1b[2J\x7f"), "GET /\\x1b[2J\\x7f");
  EXPECT_EQ(printable("abcdef", 3), "abc...");
  EXPECT_EQ(printable("abc", 3), "abc");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(Text, count_of_agrees_the_noun_with_the_count) {
  EXPECT_EQ(count_of(0, "pair"), "0 pairs");
  EXPECT_EQ(count_of(1, "pair"), "1 pair");
  EXPECT_EQ(count_of(2, "pair"), "2 pairs");
  EXPECT_EQ(count_of(1, "entry", "entries"), "1 entry");
  EXPECT_EQ(count_of(5, "entry", "entries"), "5 entries");
}

TEST(Text, hex_bytes_two_lower_case_digits_a_byte) {
  const uint8_t bytes[] = {0x00, 0x0a, 0xff, 0x5c};
  EXPECT_EQ(hex_bytes(bytes, 4), "000aff5c");
  EXPECT_EQ(hex_bytes(bytes, 0), "");
}

TEST(Text, shell_quote_as_bash_reads_it_back) {
  EXPECT_EQ(shell_quote("plain-word_1.2:3/x"), "plain-word_1.2:3/x");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("a\nb\tc\x01'\\"), "$'a\\nb\\tc\\x01\\'\\\\'");
}
