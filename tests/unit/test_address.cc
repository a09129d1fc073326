#include "address.hh"
#include "exception.hh"
#include "harness.hh"

TEST(address_parse) {
  CHECK_EQ(Ipv4::parse("100.64.0.1")->str(), "100.64.0.1");
  CHECK(!Ipv4::parse("100.64.0"));
  CHECK(!Ipv4::parse("300.1.1.1"));
  auto net = Ipv4Net::parse("10.0.0.0/8");
  CHECK(net && net->prefix == 8 && net->last() == Ipv4::parse("10.255.255.255")->value);
  CHECK(!Ipv4Net::parse("10.0.0.1/8"));  // host bits set
  CHECK(!Ipv4Net::parse("10.0.0.0/33"));
  CHECK(!Ipv4Net::parse("10.0.0.0/"));
  CHECK_EQ(Ipv4Net::parse("1.2.3.4")->prefix, 32);
}

TEST(address_overlap) {
  auto a = *Ipv4Net::parse("100.64.0.0/30");
  CHECK(a.overlaps(*Ipv4Net::parse("100.64.0.2/32")));
  CHECK(a.overlaps(*Ipv4Net::parse("100.0.0.0/8")));
  CHECK(!a.overlaps(*Ipv4Net::parse("100.64.0.4/30")));
}

TEST(allocate_first_pair_of_empty_pool) {
  auto pair = allocate_pair(*Ipv4Net::parse("100.64.0.0/10"), {});
  CHECK(pair);
  CHECK_EQ(pair->outer.str(), "100.64.0.1");
  CHECK_EQ(pair->inner.str(), "100.64.0.2");
}

TEST(allocate_skips_equal_addresses_and_overlapping_subnets) {
  const auto pool = *Ipv4Net::parse("100.64.0.0/10");
  // A parent shell's inner address, a parallel shell's peer, and a user's /22 inside the pool.
  std::vector<Ipv4Net> used{*Ipv4Net::parse("100.64.0.2/32"), *Ipv4Net::parse("100.64.0.5/32"),
                            *Ipv4Net::parse("100.64.0.0/22")};
  auto pair = allocate_pair(pool, used);
  CHECK(pair);
  CHECK_EQ(pair->outer.str(), "100.64.4.1");  // first /30 after the /22
  for (const auto& u : used) CHECK(!u.contains(pair->outer) && !u.contains(pair->inner));
}

TEST(allocate_reports_exhaustion) {
  const auto pool = *Ipv4Net::parse("10.1.0.0/29");
  CHECK(allocate_pair(pool, {*Ipv4Net::parse("10.1.0.0/30")}));
  CHECK(!allocate_pair(pool, {*Ipv4Net::parse("10.1.0.0/30"), *Ipv4Net::parse("10.1.0.6/32")}));
  CHECK(!allocate_pair(pool, {*Ipv4Net::parse("10.0.0.0/8")}));
}

TEST(allocate_consecutive_shells_never_collide) {
  const auto pool = *Ipv4Net::parse("100.64.0.0/10");
  std::vector<Ipv4Net> used;
  for (int i = 0; i < 100; i++) {
    auto pair = allocate_pair(pool, used);
    CHECK(pair);
    for (const auto& u : used) CHECK(!u.contains(pair->outer) && !u.contains(pair->inner));
    used.push_back(Ipv4Net::of(pair->outer, 32));
    used.push_back(Ipv4Net::of(pair->inner, 32));
  }
}

TEST(address_pool_from_environment) {
  CHECK_EQ(address_pool_from(nullptr).str(), "100.64.0.0/10");
  CHECK_EQ(address_pool_from("").str(), "100.64.0.0/10");
  CHECK_EQ(address_pool_from("10.200.0.0/16").str(), "10.200.0.0/16");
  CHECK_THROWS(UsageError, address_pool_from("10.200.0.1/16"), "MAHIMAHI_ADDRESS_POOL");
  CHECK_THROWS(UsageError, address_pool_from("10.200.0.0/31"), "at least 4 addresses");
  CHECK_THROWS(UsageError, address_pool_from("banana"), "banana");
}

#include "privileged.hh"

TEST(loopback_nameservers_of_resolv_conf) {
  auto found = loopback_nameservers(
      "# systemd-resolved\nnameserver 127.0.0.53\noptions edns0\nnameserver 8.8.8.8\nsearch x\n"
      "nameserver   127.0.0.1\nnameserver ::1\nnameserver 127.1.1.1\nnameserver 127.2.2.2\n");
  CHECK_EQ(found.size(), 3u);  // at most three, as the C library uses
  CHECK_EQ(found[0].str(), "127.0.0.53");
  CHECK_EQ(found[1].str(), "127.0.0.1");
  CHECK(loopback_nameservers("nameserver 10.255.255.53\n").empty());
  CHECK(loopback_nameservers("").empty());
}
