#include "expect.hh"
#include "util/address.hh"
#include "util/exception.hh"

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

TEST(Address, allocate_first_pair_of_empty_pool) {
  auto pair = allocate_pair(*Ipv4Net::parse("100.64.0.0/10"), {});
  ASSERT_TRUE(pair);
  ASSERT_EQ(pair->outer.str(), "100.64.0.1");
  ASSERT_EQ(pair->inner.str(), "100.64.0.2");
}

TEST(Address, allocate_skips_equal_addresses_and_overlapping_subnets) {
  const auto pool = *Ipv4Net::parse("100.64.0.0/10");
  // A parent shell's inner address, a parallel shell's peer, and a user's /22 inside the pool.
  std::vector<Ipv4Net> used{*Ipv4Net::parse("100.64.0.2/32"), *Ipv4Net::parse("100.64.0.5/32"),
                            *Ipv4Net::parse("100.64.0.0/22")};
  auto pair = allocate_pair(pool, used);
  ASSERT_TRUE(pair);
  ASSERT_EQ(pair->outer.str(), "100.64.4.1");  // first /30 after the /22
  for (const auto& u : used) ASSERT_TRUE(!u.contains(pair->outer) && !u.contains(pair->inner));
}

TEST(Address, allocate_reports_exhaustion) {
  const auto pool = *Ipv4Net::parse("10.1.0.0/29");
  ASSERT_TRUE(allocate_pair(pool, {*Ipv4Net::parse("10.1.0.0/30")}));
  ASSERT_TRUE(!allocate_pair(pool, {*Ipv4Net::parse("10.1.0.0/30"), *Ipv4Net::parse("10.1.0.6/32")}));
  ASSERT_TRUE(!allocate_pair(pool, {*Ipv4Net::parse("10.0.0.0/8")}));
}

TEST(Address, allocate_consecutive_shells_never_collide) {
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

TEST(Address, address_pool_from_environment) {
  ASSERT_EQ(address_pool_from(nullptr).str(), "100.64.0.0/10");
  ASSERT_EQ(address_pool_from("").str(), "100.64.0.0/10");
  ASSERT_EQ(address_pool_from("10.200.0.0/16").str(), "10.200.0.0/16");
  EXPECT_THROW_WITH(UsageError, address_pool_from("10.200.0.1/16"), "MAHIMAHI_ADDRESS_POOL");
  EXPECT_THROW_WITH(UsageError, address_pool_from("10.200.0.0/31"), "at least 4 addresses");
  EXPECT_THROW_WITH(UsageError, address_pool_from("banana"), "banana");
}

#include "shell/privileged.hh"

TEST(Address, loopback_nameservers_of_resolv_conf) {
  auto found = loopback_nameservers(
      "# systemd-resolved\nnameserver 127.0.0.53\noptions edns0\nnameserver 8.8.8.8\nsearch x\n"
      "nameserver   127.0.0.1\nnameserver ::1\nnameserver 127.1.1.1\nnameserver 127.2.2.2\n");
  ASSERT_EQ(found.size(), 3u);  // at most three, as the C library uses
  ASSERT_EQ(found[0].str(), "127.0.0.53");
  ASSERT_EQ(found[1].str(), "127.0.0.1");
  ASSERT_TRUE(loopback_nameservers("nameserver 10.255.255.53\n").empty());
  ASSERT_TRUE(loopback_nameservers("").empty());
}

TEST(Address, resolv_conf_nameservers_in_order) {
  auto found =
      resolv_conf_nameservers("# x\nnameserver 10.255.255.53\nnameserver ::1\n nameserver  192.0.2.9 \nsearch a\n");
  ASSERT_EQ(found.size(), 2u);
  ASSERT_EQ(found[0].str(), "10.255.255.53");
  ASSERT_EQ(found[1].str(), "192.0.2.9");
}

TEST(Address, address_pool_policy) {
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
