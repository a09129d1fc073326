// SPDX-License-Identifier: GPL-3.0-or-later
// Ipv4 and Ipv4Net: parsing, printing, containment and overlap.
#include "expect.hh"
#include "util/address.hh"

TEST(Address, address_parse) {
  ASSERT_EQ(Ipv4::parse("100.64.0.1")->str(), "100.64.0.1");
  ASSERT_TRUE(!Ipv4::parse("100.64.0"));
  ASSERT_TRUE(!Ipv4::parse("300.1.1.1"));
  auto net = Ipv4Net::parse("10.0.0.0/8");
  ASSERT_TRUE(net && net->prefix == 8 && net->last() == Ipv4::parse("10.255.255.255")->value);
  ASSERT_TRUE(!Ipv4Net::parse("10.0.0.1/8"));  // host bits set
  ASSERT_TRUE(!Ipv4Net::parse("10.0.0.0/33"));
  ASSERT_TRUE(!Ipv4Net::parse("10.0.0.0/"));
  ASSERT_EQ(Ipv4Net::parse("1.2.3.4")->prefix, 32);
}

TEST(Address, address_overlap) {
  auto a = *Ipv4Net::parse("100.64.0.0/30");
  ASSERT_TRUE(a.overlaps(*Ipv4Net::parse("100.64.0.2/32")));
  ASSERT_TRUE(a.overlaps(*Ipv4Net::parse("100.0.0.0/8")));
  ASSERT_TRUE(!a.overlaps(*Ipv4Net::parse("100.64.0.4/30")));
}

TEST(Address, ipv4_endpoints_parse_with_their_bounds) {
  const auto endpoint = parse_ipv4_endpoint("10.1.2.3:8463");
  ASSERT_TRUE(endpoint);
  EXPECT_EQ(ntohs(endpoint->sin_port), 8463);
  EXPECT_EQ(Ipv4::from_in_addr(endpoint->sin_addr).str(), "10.1.2.3");
  EXPECT_FALSE(parse_ipv4_endpoint("10.1.2.3:0"));
  EXPECT_TRUE(parse_ipv4_endpoint("0.0.0.0:0", true));
  for (const char* bad : {"10.1.2.3", "10.1.2.3:", ":80", "10.1.2:80", "10.1.2.3:65536", "10.1.2.3:+80", "host:80",
                          "10.1.2.3:123456", "[::1]:80"})
    EXPECT_FALSE(parse_ipv4_endpoint(bad)) << bad;
}
