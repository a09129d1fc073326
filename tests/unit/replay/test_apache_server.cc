// SPDX-License-Identifier: GPL-3.0-or-later
// One Apache of the replay: the fix its error suggests for each way Apache says it failed.
#include <string>

#include "expect.hh"
#include "replay/apache_server.hh"

TEST(ApacheServer, failure_fixes) {
  auto fix = [](const std::string& words) { return apache_failure_fix(words, "10.0.0.1:443"); };
  EXPECT_EQ(fix("\n  (98)Address already in use: AH00072: make_sock: could not bind to address 10.0.0.1:443"),
            "something else in the replay namespace already listens on 10.0.0.1:443; stop it");
  EXPECT_NE(fix("(13)Permission denied: AH00072: make_sock: could not bind")
                .find("may not bind port 443: net.ipv4.ip_unprivileged_port_start must be 0"),
            std::string::npos);
  EXPECT_EQ(fix("(99)Cannot assign requested address: AH00072: make_sock"),
            "the address 10.0.0.1 is not configured in the replay namespace");
  EXPECT_NE(fix("Cannot load /m/mod_ssl.so into server").find("apt-get install apache2-bin"), std::string::npos);
  EXPECT_NE(fix("AH00526: Syntax error on line 3").find("needs a recent Apache httpd 2.4"), std::string::npos);
  EXPECT_NE(fix("(11)Resource temporarily unavailable: AH00480").find("raise `ulimit -u`"), std::string::npos);
  EXPECT_EQ(fix("\n  (it wrote nothing to /w/apache.log)"), "see Apache's words above");
}

TEST(ApacheServer, endpoints_are_named_and_the_one_a_log_blames_is_found) {
  EXPECT_EQ(endpoints_text({"10.0.0.1:443"}), "10.0.0.1:443");
  EXPECT_EQ(endpoints_text({"10.0.0.1:80", "10.0.0.2:443"}), "10.0.0.1:80 and 10.0.0.2:443");
  EXPECT_EQ(endpoints_text({"10.0.0.1:80", "10.0.0.2:443", "10.0.0.3:80"}),
            "10.0.0.1:80, 10.0.0.2:443 and 10.0.0.3:80");
  EXPECT_EQ(endpoints_text({"10.0.0.1:80", "a", "b", "c"}), "10.0.0.1:80 and 3 other IP:ports");
  const std::vector<std::string> endpoints = {"10.0.0.1:80", "10.0.0.2:443", "10.0.0.2:4430"};
  EXPECT_EQ(blamed_endpoint("(98)Address already in use: could not bind to address 10.0.0.2:4430", endpoints),
            "10.0.0.2:4430");
  EXPECT_EQ(blamed_endpoint("could not bind to address 10.0.0.2:443\n", endpoints), "10.0.0.2:443");
  EXPECT_EQ(blamed_endpoint("Syntax error on line 3", endpoints), "10.0.0.1:80");
}
