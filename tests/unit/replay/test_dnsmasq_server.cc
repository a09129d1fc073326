// SPDX-License-Identifier: GPL-3.0-or-later
// The replay's dnsmasq: its hosts file, its command line and the readiness probe's DNS query.
#include <string>

#include "expect.hh"
#include "replay/dnsmasq_server.hh"

TEST(DnsmasqServer, hosts_file) {
  ReplayDns dns;
  dns.names = {{"A.Test.", {"10.0.0.1", "10.0.0.2"}},
               {"b.test", {"10.0.0.3", "not-an-ip", "::1"}},
               {"10.0.0.9", {"10.0.0.9"}},
               {"bad name", {"10.0.0.4"}}};
  EXPECT_EQ(dnsmasq_hosts(dns), "10.0.0.1 a.test\n10.0.0.2 a.test\n10.0.0.3 b.test\n");
  EXPECT_EQ(dnsmasq_hosts(ReplayDns{}), "");
}

TEST(DnsmasqServer, arguments) {
  ReplayDns dns;
  dns.listen = {"10.0.0.53", "127.0.0.1"};
  const std::vector<std::string> args = dnsmasq_arguments(dns, "/w/dnsmasq.hosts", "/w", "alice", "users");
  EXPECT_EQ(args,
            (std::vector<std::string>{"--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
                                      "--addn-hosts=/w/dnsmasq.hosts", "--local=/#/", "--bind-interfaces",
                                      "--pid-file=/w/dnsmasq.pid", "--log-facility=/w/dnsmasq.log", "--user=alice",
                                      "--group=users", "--listen-address=10.0.0.53", "--listen-address=127.0.0.1"}));
  EXPECT_EQ(dnsmasq_arguments(ReplayDns{}, "/h", "/w", "", "").size(), size_t{9});
}

TEST(DnsmasqServer, dns_query) {
  const std::string q = dns_query(0x1234, "a.test");
  const std::string expected(
      "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01"
      "a\x04test\x00\x00\x01\x00\x01",
      24);
  EXPECT_EQ(q, expected);
}
