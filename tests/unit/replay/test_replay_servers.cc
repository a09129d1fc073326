// SPDX-License-Identifier: GPL-3.0-or-later
// Replay's daemons together: what is refused before anything starts (bad addresses, duplicates,
// unusable paths, missing programs and modules), and an empty set that starts and stops. Starting
// real daemons needs a network namespace: tests/replay.sh does that.
#include <cstdlib>
#include <string>

#include "expect.hh"
#include "replay/replay_servers.hh"
#include "replay_fixture.hh"
#include "tls/certificate_authority.hh"
#include "util/exception.hh"

using namespace replay_test;

namespace {

// Sets an environment variable for the scope.
struct ScopedVariable {
  std::string name;
  ScopedVariable(std::string variable, const std::string& value) : name(std::move(variable)) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedVariable() { ::unsetenv(name.c_str()); }
};

struct ServersSetup {
  TempDir dir;
  CertificateAuthority ca = CertificateAuthority::load_or_create(dir.path / "ca");
  void start(const std::vector<ReplayServerSpec>& servers, const ReplayDns& dns = {}) {
    ReplayServers servers_started(servers, dns, ca, dir.path / "matcher.sock", dir.path);
  }
};

}  // namespace

TEST(ReplayServers, bad_specs_refused) {
  ServersSetup s;
  EXPECT_THROW_WITH(UserError, s.start({{"example.com", 80, false, {}, false}}),
                    "replay server address example.com is not an IPv4 address");
  EXPECT_THROW_WITH(UserError, s.start({{"10.0.0.1", 0, false, {}, false}}), "replay server 10.0.0.1 has port 0");
  EXPECT_THROW_WITH(UserError, s.start({{"10.0.0.1", 80, false, {}, false}, {"10.0.0.1", 80, true, {}, false}}),
                    "replay server 10.0.0.1:80 is listed twice");
  ReplayDns dns;
  dns.listen = {"::1"};
  EXPECT_THROW_WITH(UserError, s.start({}, dns), "DNS listening address ::1 is not an IPv4 address");
}

TEST(ReplayServers, unusable_paths_refused) {
  ServersSetup s;
  CertificateAuthority& ca = s.ca;
  EXPECT_THROW_WITH(UserError, ReplayServers({}, {}, ca, s.dir.path / "a|b.sock", s.dir.path),
                    "Apache cannot quote its name");
  EXPECT_THROW_WITH(UserError, ReplayServers({}, {}, ca, s.dir.path / std::string(120, 'x'), s.dir.path),
                    "is too long for a unix socket; set TMPDIR");
}

TEST(ReplayServers, missing_programs_named_with_the_package) {
  ServersSetup s;
  {
    ScopedVariable apache("MAHIMAHI_APACHE2", "/nonexistent/apache2");
    EXPECT_THROW_WITH(UserError, s.start({{"10.0.0.1", 80, false, {}, false}}),
                      "replay needs Apache httpd, but /nonexistent/apache2 cannot be run (No such file or directory); "
                      "install it (Debian/Ubuntu: apt-get install apache2-bin)");
  }
  {
    ScopedVariable apache("MAHIMAHI_APACHE2", "/bin/true");
    ScopedVariable modules("MAHIMAHI_APACHE_MODULES", s.dir.path.string());
    EXPECT_THROW_WITH(UserError, s.start({{"10.0.0.1", 80, false, {}, false}}),
                      "replay needs Apache's mod_mpm_worker.so, but " + (s.dir.path / "mod_mpm_worker.so").string());
  }
  {
    ScopedVariable dnsmasq("MAHIMAHI_DNSMASQ", "/nonexistent/dnsmasq");
    ReplayDns dns;
    dns.listen = {"10.0.0.53"};
    EXPECT_THROW_WITH(UserError, s.start({}, dns), "replay needs dnsmasq, but /nonexistent/dnsmasq cannot be run");
  }
}

TEST(ReplayServers, nothing_to_serve_starts_and_stops) {
  ServersSetup s;
  ReplayServers servers({}, {}, s.ca, s.dir.path / "matcher.sock", s.dir.path);
  servers.stop();
  servers.stop();
}
