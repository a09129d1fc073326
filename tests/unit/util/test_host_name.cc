// SPDX-License-Identifier: GPL-3.0-or-later
#include <string>

#include "expect.hh"
#include "util/host_name.hh"

TEST(HostName, host_names) {
  EXPECT_TRUE(is_host_name("www.example.com"));
  EXPECT_TRUE(is_host_name("WWW.Example.COM"));
  EXPECT_TRUE(is_host_name("_dmarc.x-y.example"));
  EXPECT_TRUE(is_host_name("localhost"));
  EXPECT_FALSE(is_host_name(""));
  EXPECT_FALSE(is_host_name(".example.com"));
  EXPECT_FALSE(is_host_name("example.com."));  // callers strip a fully qualified name's root dot
  EXPECT_FALSE(is_host_name("a..b"));
  EXPECT_FALSE(is_host_name("exa mple.com"));
  EXPECT_FALSE(is_host_name("example.com:80"));
  EXPECT_FALSE(is_host_name("caf\xc3\xa9.example"));
  EXPECT_TRUE(is_host_name(std::string(63, 'a') + ".com"));
  EXPECT_FALSE(is_host_name(std::string(64, 'a') + ".com"));
  std::string long_name;
  while (long_name.size() < 251) long_name += "abcdefghi.";
  long_name += "com";
  EXPECT_FALSE(is_host_name(long_name));  // over 253 characters
}

TEST(HostName, ip_literals) {
  EXPECT_TRUE(is_ip_literal("192.0.2.1"));
  EXPECT_TRUE(is_ip_literal("::1"));
  EXPECT_TRUE(is_ip_literal("[2001:db8::1]"));
  EXPECT_FALSE(is_ip_literal("[2001:db8::1"));
  EXPECT_FALSE(is_ip_literal("[example.com]"));
  EXPECT_FALSE(is_ip_literal("192.0.2"));
  EXPECT_FALSE(is_ip_literal("192.0.2.1:80"));
  EXPECT_FALSE(is_ip_literal("example.com"));
  EXPECT_FALSE(is_ip_literal(""));
}
