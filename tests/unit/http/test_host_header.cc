// SPDX-License-Identifier: GPL-3.0-or-later
#include <string>
#include <utility>

#include "expect.hh"
#include "http/host_header.hh"

TEST(HostHeader, normalize_host_drops_case_trailing_dot_and_default_port) {
  ASSERT_EQ(normalize_host("Example.COM.:443", true), std::string("example.com"));
  ASSERT_EQ(normalize_host("example.com:443", false), std::string("example.com:443"));
  ASSERT_EQ(normalize_host("[::1]:80", false), std::string("[::1]"));
  ASSERT_EQ(normalize_host("a.com:", false), std::string("a.com"));
  ASSERT_EQ(normalize_host("A.com:08080", false), std::string("a.com:8080"));  // leading zeros
  ASSERT_EQ(normalize_host("a.com:0080", false), std::string("a.com"));
  ASSERT_EQ(normalize_host("a.com:http", false), std::string("a.com:http"));  // not a number: kept, lower case
  ASSERT_EQ(normalize_host("  ", false), std::string());
}

TEST(HostHeader, split_host_port) {
  ASSERT_EQ(split_host_port("[::1]:8080"), std::make_pair(std::string_view("[::1]"), std::string_view("8080")));
  ASSERT_EQ(split_host_port("[::1]"), std::make_pair(std::string_view("[::1]"), std::string_view()));
  ASSERT_EQ(split_host_port("::1"), std::make_pair(std::string_view("::1"), std::string_view()));  // bare IPv6
  ASSERT_EQ(split_host_port("a.com:80"), std::make_pair(std::string_view("a.com"), std::string_view("80")));
  ASSERT_EQ(split_host_port("a.com"), std::make_pair(std::string_view("a.com"), std::string_view()));
}
