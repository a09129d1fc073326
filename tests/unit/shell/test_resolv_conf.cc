// SPDX-License-Identifier: GPL-3.0-or-later
// resolv.conf's nameserver lines, as the shells and mm-replay read them.
#include "expect.hh"
#include "shell/resolv_conf.hh"

TEST(ResolvConf, loopback_nameservers_of_resolv_conf) {
  auto found = loopback_nameservers(
      "# systemd-resolved\nnameserver 127.0.0.53\noptions edns0\nnameserver 8.8.8.8\nsearch x\n"
      "nameserver   127.0.0.1\nnameserver ::1\nnameserver 127.1.1.1\nnameserver 127.2.2.2\n");
  ASSERT_EQ(found.size(), 3u);  // at most three, as the C library uses
  ASSERT_EQ(found[0].str(), "127.0.0.53");
  ASSERT_EQ(found[1].str(), "127.0.0.1");
  ASSERT_TRUE(loopback_nameservers("nameserver 10.255.255.53\n").empty());
  ASSERT_TRUE(loopback_nameservers("").empty());
}

TEST(ResolvConf, resolv_conf_nameservers_in_order) {
  auto found =
      resolv_conf_nameservers("# x\nnameserver 10.255.255.53\nnameserver ::1\n nameserver  192.0.2.9 \nsearch a\n");
  ASSERT_EQ(found.size(), 2u);
  ASSERT_EQ(found[0].str(), "10.255.255.53");
  ASSERT_EQ(found[1].str(), "192.0.2.9");
}

TEST(ResolvConf, c_library_resolvers_are_the_first_three_nameserver_lines) {
  // A line the C library counts but that names no IPv4 address (::1) still uses up one of three.
  auto found = c_library_resolvers(
      "search x\nnameserver 192.0.2.1\nnameserver ::1\n nameserver 192.0.2.3\nnameserver 192.0.2.4\n");
  ASSERT_EQ(found.size(), 2u);
  ASSERT_EQ(found[0].str(), "192.0.2.1");
  ASSERT_EQ(found[1].str(), "192.0.2.3");
  ASSERT_TRUE(c_library_resolvers("nameserver ::1\n").empty());
}

TEST(ResolvConf, c_library_resolvers_default_to_localhost) {
  for (const char* text : {"", "# nothing\nsearch example.com\n", "nameserver\n"}) {
    auto found = c_library_resolvers(text);
    ASSERT_EQ(found.size(), 1u);
    ASSERT_EQ(found[0].str(), "127.0.0.1");
  }
}
