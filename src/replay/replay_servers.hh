#pragma once
// The daemons that make a recording's servers exist during replay: one Apache httpd per
// recorded IP:port (TLS where recorded, with a certificate from the user's local CA naming every
// host recorded there; HTTP/2 where asked), each forwarding every request over FastCGI to the
// one matcher process, plus a dnsmasq that answers the recorded host names and nothing else.
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
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

class CertificateAuthority;

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

  // The last `lines` lines of the daemons' logs (start-up chatter left out), each prefixed with
  // the daemon it came from, e.g. "[apache 10.0.0.1:443] ..."; "" if they said nothing.
  std::string log_tail(size_t lines) const;

  // How long start-up took, for diagnostics and benchmarks.
  double startup_seconds() const { return startup_seconds_; }

 private:
  class Guardian;  // kills the daemons if this process dies without stopping them
  class Daemon;    // one supervised child process
  class Apache;
  class Dnsmasq;

  struct Programs;  // where apache2, its modules and dnsmasq are
  static Programs find_programs();

  void start_apaches(const std::vector<ReplayServerSpec>& servers, const Programs& programs, CertificateAuthority& ca,
                     const std::filesystem::path& socket, const std::filesystem::path& work);
  void wait_until_ready();

  std::unique_ptr<Guardian> guardian_;  // first: it must outlive the daemons
  std::vector<std::unique_ptr<Apache>> apaches_;
  std::unique_ptr<Dnsmasq> dnsmasq_;
  double startup_seconds_ = 0;
};
