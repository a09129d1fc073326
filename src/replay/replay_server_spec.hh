// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What replay's daemons are asked to serve: an Apache virtual host per recorded IP:port (ReplayServerSpec)
// and one dnsmasq for the recorded names (ReplayDns). Plain data, shared by the daemons' modules.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct ReplayServerSpec {
  std::string ip;  // IPv4 literal (already configured on lo by the caller)
  uint16_t port = 0;
  bool https = false;
  std::vector<std::string> names;  // host names to put in the certificate (plus the ip itself)
  bool h2 = false;                 // offer HTTP/2 (ALPN h2, http/1.1) on this HTTPS server
};

struct ReplayDns {
  std::vector<std::string> listen;  // resolver addresses to answer on, port 53 (configured on lo by the caller)
  std::map<std::string, std::vector<std::string>> names;  // host name -> IPs; every other name: NXDOMAIN at once
};
