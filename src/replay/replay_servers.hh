// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The daemons that make a recording's servers exist during replay: an Apache httpd virtual host
// per recorded IP:port, each on its own listening socket (TLS where recorded, with a certificate
// from the user's local CA naming every host recorded there; HTTP/2 where asked), one Apache for
// up to 128 of them, forwarding every request over FastCGI to the one matcher process, plus a
// dnsmasq that answers the recorded host names and nothing else.
//
// Everything runs with the caller's rights inside the replay network namespace: the caller has
// put the addresses on lo and let unprivileged processes bind ports below 1024. Each daemon is a
// child in its own process group, so that stopping it also stops its workers; a small forked
// guardian process kills those groups if the caller dies without stopping them. Configurations,
// certificates and logs live in a work directory the caller owns and removes.
//
// Programs: /usr/sbin/apache2 with modules in /usr/lib/apache2/modules (Debian's apache2-bin) and
// /usr/sbin/dnsmasq; $MAHIMAHI_APACHE2, $MAHIMAHI_APACHE_MODULES and $MAHIMAHI_DNSMASQ override
// them (another distribution's httpd, or a test).
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replay/replay_server_spec.hh"

class ApacheServer;
class CertificateAuthority;
class DnsmasqServer;
class ReplayGuardian;

class ReplayServers {
 public:
  // Starts everything and returns once every Apache accepts TCP connections on its ip:port and
  // dnsmasq answers. work_dir: a private directory (existing, owned by the user) for
  // configurations, certificates, pid files and logs. On failure (a program missing, a port in
  // use, a configuration error, 10 s without readiness) stops what was started and throws
  // UserError: one line saying what failed, the daemon's own words, and the fix.
  ReplayServers(const std::vector<ReplayServerSpec>& servers, const ReplayDns& dns, CertificateAuthority& ca,
                const std::filesystem::path& fastcgi_socket, const std::filesystem::path& work_dir);
  ~ReplayServers();  // stop()
  ReplayServers(const ReplayServers&) = delete;
  ReplayServers& operator=(const ReplayServers&) = delete;

  // Stops every daemon: SIGTERM, then SIGKILL to its process group for whatever is left after
  // 2 s; reaps each. Idempotent.
  void stop();

  // A daemon that has ended on its own (killed, crashed) while serving, described with its last
  // words: "the replay server for 10.0.0.1:443 (apache2, pid 812) was killed by SIGKILL: ...".
  // Call it when SIGCHLD arrives; nothing if all are running.
  std::optional<std::string> ended_unexpectedly();

 private:
  struct Programs;  // where apache2, its modules and dnsmasq are

  void start_apaches(const std::vector<ReplayServerSpec>& servers, const Programs& programs, CertificateAuthority& ca,
                     const std::filesystem::path& socket, const std::filesystem::path& work);
  void wait_until_ready();

  std::unique_ptr<ReplayGuardian> guardian_;  // first: it must outlive the daemons
  std::vector<std::unique_ptr<ApacheServer>> apaches_;
  std::unique_ptr<DnsmasqServer> dnsmasq_;
};
