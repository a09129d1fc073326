// SPDX-License-Identifier: GPL-3.0-or-later
// The address pool of the shells: the choice of a free /30, MAHIMAHI_ADDRESS_POOL, and which
// pools a user may choose.
#include <algorithm>

#include "expect.hh"
#include "shell/address_pool.hh"
#include "util/exception.hh"

TEST(AddressPool, allocate_first_pair_of_empty_pool) {
  auto pair = allocate_pair(*Ipv4Net::parse("100.64.0.0/10"), {});
  ASSERT_TRUE(pair);
  ASSERT_EQ(pair->outer.str(), "100.64.0.1");
  ASSERT_EQ(pair->inner.str(), "100.64.0.2");
}

TEST(AddressPool, allocate_skips_equal_addresses_and_overlapping_subnets) {
  const auto pool = *Ipv4Net::parse("100.64.0.0/10");
  // A parent shell's inner address, a parallel shell's peer, and a user's /22 inside the pool.
  std::vector<Ipv4Net> used{*Ipv4Net::parse("100.64.0.2/32"), *Ipv4Net::parse("100.64.0.5/32"),
                            *Ipv4Net::parse("100.64.0.0/22")};
  auto pair = allocate_pair(pool, used);
  ASSERT_TRUE(pair);
  ASSERT_EQ(pair->outer.str(), "100.64.4.1");  // first /30 after the /22
  for (const auto& u : used) ASSERT_TRUE(!u.contains(pair->outer) && !u.contains(pair->inner));
}

TEST(AddressPool, allocate_reports_exhaustion) {
  const auto pool = *Ipv4Net::parse("10.1.0.0/29");
  ASSERT_TRUE(allocate_pair(pool, {*Ipv4Net::parse("10.1.0.0/30")}));
  ASSERT_TRUE(!allocate_pair(pool, {*Ipv4Net::parse("10.1.0.0/30"), *Ipv4Net::parse("10.1.0.6/32")}));
  ASSERT_TRUE(!allocate_pair(pool, {*Ipv4Net::parse("10.0.0.0/8")}));
}

TEST(AddressPool, allocate_consecutive_shells_never_collide) {
  const auto pool = *Ipv4Net::parse("100.64.0.0/10");
  std::vector<Ipv4Net> used;
  for (int i = 0; i < 100; i++) {
    auto pair = allocate_pair(pool, used);
    ASSERT_TRUE(pair);
    for (const auto& u : used) ASSERT_TRUE(!u.contains(pair->outer) && !u.contains(pair->inner));
    used.push_back(Ipv4Net::of(pair->outer, 32));
    used.push_back(Ipv4Net::of(pair->inner, 32));
  }
}

TEST(AddressPool, address_pool_from_environment) {
  ASSERT_EQ(address_pool_from(nullptr).str(), "100.64.0.0/10");
  ASSERT_EQ(address_pool_from("").str(), "100.64.0.0/10");
  ASSERT_EQ(address_pool_from("10.200.0.0/16").str(), "10.200.0.0/16");
  EXPECT_THROW_WITH(UsageError, address_pool_from("10.200.0.1/16"), "MAHIMAHI_ADDRESS_POOL");
  EXPECT_THROW_WITH(UsageError, address_pool_from("10.200.0.0/31"), "at least 4 addresses");
  EXPECT_THROW_WITH(UsageError, address_pool_from("banana"), "banana");
}

TEST(AddressPool, address_pool_policy) {
  const std::string conf = "/etc/mahimahi.conf";
  const std::vector<Ipv4Net> none;
  // Nobody takes special space, root included.
  for (const char* pool : {"0.0.0.0/0", "0.0.0.0/30", "127.0.0.0/30", "169.254.169.252/30", "224.0.0.0/30",
                           "240.0.0.0/30", "255.255.255.252/30", "96.0.0.0/3"}) {
    EXPECT_THROW_WITH(UserError, check_address_pool(*Ipv4Net::parse(pool), true, none, conf), "no shell may take");
    EXPECT_THROW_WITH(UserError, check_address_pool(*Ipv4Net::parse(pool), false, none, conf), "no shell may take");
  }
  // Root may use a public range; an ordinary user only private or shared space...
  check_address_pool(*Ipv4Net::parse("198.51.100.0/24"), true, none, conf);
  EXPECT_THROW_WITH(UserError, check_address_pool(*Ipv4Net::parse("208.67.222.220/30"), false, none, conf),
                    "only from private or shared address space");
  for (const char* pool : {"10.0.0.0/8", "10.200.0.0/16", "172.16.0.0/12", "172.31.255.252/30", "192.168.0.0/16",
                           "100.64.0.0/10", "100.127.255.252/30"}) {
    check_address_pool(*Ipv4Net::parse(pool), false, none, conf);
  }
  // ... entirely: a pool reaching past a private range is refused.
  EXPECT_THROW_WITH(UserError, check_address_pool(*Ipv4Net::parse("100.0.0.0/8"), false, none, conf),
                    "private or shared");
  EXPECT_THROW_WITH(UserError, check_address_pool(*Ipv4Net::parse("172.0.0.0/11"), false, none, conf),
                    "private or shared");
  // ... unless the administrator allows a range, and then only inside it.
  const std::vector<Ipv4Net> allowed{*Ipv4Net::parse("198.18.0.0/15")};
  check_address_pool(*Ipv4Net::parse("198.19.0.0/16"), false, allowed, conf);
  EXPECT_THROW_WITH(UserError, check_address_pool(*Ipv4Net::parse("198.16.0.0/13"), false, allowed, conf), conf);
}

TEST(AddressPool, networks_in_use_include_loopback_sorted_once) {
  const std::vector<Ipv4Net> nets = networks_in_use();  // getifaddrs and a route dump: no root needed
  const Ipv4 loopback = *Ipv4::parse("127.0.0.1");
  ASSERT_TRUE(std::any_of(nets.begin(), nets.end(), [&](const Ipv4Net& n) { return n.contains(loopback); }));
  for (size_t i = 1; i < nets.size(); i++) {
    const bool ordered = nets[i - 1].base.value < nets[i].base.value ||
                         (nets[i - 1].base == nets[i].base && nets[i - 1].prefix < nets[i].prefix);
    ASSERT_TRUE(ordered);
  }
}
