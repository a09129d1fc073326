// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What replay's daemons are asked to serve: an Apache virtual host per recorded IP:port (ReplayServerSpec)
// and one dnsmasq for the recorded names (ReplayDns). Plain data, shared by the daemons' modules.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

// One certificate of an HTTPS server, as the recorded origin presented them: a client asking for
// one of server_names (SNI) gets the certificate that carries `names`, which may cover more
// hosts of the same server, so that a browser coalesces onto one HTTP/2 connection the hosts it
// coalesced when recorded, and no others.
struct ReplayCertificate {
  std::vector<std::string> server_names;  // the SNI names it is presented for (the first: its ServerName)
  std::vector<std::string> names;         // the host names it carries
  bool operator==(const ReplayCertificate&) const = default;
};

struct ReplayServerSpec {
  std::string ip;  // IPv4 literal (already configured on lo by the caller)
  uint16_t port = 0;
  bool https = false;
  std::vector<std::string> names;  // host names to put in the certificate (plus the ip itself)
  bool h2 = false;                 // offer HTTP/2 (ALPN h2, http/1.1) on this HTTPS server
  // As recorded (ReplayCertificate); empty: one certificate naming every host of `names` (a
  // recording without the servers' certificate names, or --single-server).
  std::vector<ReplayCertificate> certificates = {};
  // The newest TLS version to offer: "TLSv1.2" where the recorded server chose it (a TLS 1.2
  // handshake takes a round trip more than 1.3's), else empty: TLS 1.2 and 1.3.
  std::string tls_max = {};
};

struct ReplayDns {
  std::vector<std::string> listen;  // resolver addresses to answer on, port 53 (configured on lo by the caller)
  std::map<std::string, std::vector<std::string>> names;  // host name -> IPs; every other name: NXDOMAIN at once
};
