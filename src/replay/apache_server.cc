// SPDX-License-Identifier: GPL-3.0-or-later
// One Apache httpd of the replay: its files, its start, its readiness, its failures. See apache_server.hh.
#include "replay/apache_server.hh"

#include <poll.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <vector>

#include "replay/apache_config.hh"
#include "tls/certificate_authority.hh"
#include "util/address.hh"
#include "util/file_descriptor.hh"

namespace fs = std::filesystem;

void write_apache_certificate(const ReplayServerSpec& spec, CertificateAuthority& ca, const fs::path& work) {
  if (!spec.https) return;
  // As recorded, or one naming every host recorded here; the (first) one also the address.
  for (const ServerCertificate& c : server_certificates(spec))
    ca.write_leaf(c.names, work / (c.stem + ".pem"), work / (c.stem + ".key"));
}

std::string endpoints_text(const std::vector<std::string>& endpoints) {
  if (endpoints.empty()) return "";
  if (endpoints.size() > 3)
    return endpoints.front() + " and " + std::to_string(endpoints.size() - 1) + " other IP:ports";
  std::string text = endpoints.front();
  for (size_t i = 1; i < endpoints.size(); i++) text += (i + 1 == endpoints.size() ? " and " : ", ") + endpoints[i];
  return text;
}

std::string blamed_endpoint(const std::string& words, const std::vector<std::string>& endpoints) {
  for (const std::string& e : endpoints) {
    const size_t at = words.find(e);
    // Whole: 10.0.0.1:80 is not blamed by "10.0.0.1:8080".
    if (at != std::string::npos &&
        (at + e.size() == words.size() || !std::isdigit(static_cast<unsigned char>(words[at + e.size()]))) &&
        (at == 0 || !std::isdigit(static_cast<unsigned char>(words[at - 1])))) {
      return e;
    }
  }
  return endpoints.empty() ? "" : endpoints.front();
}

ApacheServer::ApacheServer(const std::vector<ReplayServerSpec>& specs, const fs::path& program, const fs::path& modules,
                           const fs::path& socket, const fs::path& work, ReplayGuardian& guardian, size_t instances) {
  for (const ReplayServerSpec& spec : specs) {
    endpoints_.push_back(spec.ip + ":" + std::to_string(spec.port));
    not_yet_seen_.push_back(socket_address(*Ipv4::parse(spec.ip), spec.port));
  }
  endpoint_ = endpoints_text(endpoints_);
  const std::string stem = apache_file_stem(specs.at(0));
  const fs::path config = work / (stem + ".conf");
  pid_file_ = work / (stem + ".pid");
  std::error_code ignored;
  fs::remove(pid_file_, ignored);  // readiness is judged by it: no stale one
  write_daemon_file(config, apache_configuration(specs, ApacheFiles{modules, work, stem, socket}, instances));
  daemon_ = std::make_unique<ReplayDaemon>(program, std::vector<std::string>{"-f", config.string(), "-DFOREGROUND"},
                                           work / (stem + ".log"), guardian);
}

namespace {
// Does a TCP connection to `address` succeed now (within 100 ms)?
bool accepts(const sockaddr_in& address) {
  FileDescriptor s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) throw SystemError("socket");
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) return true;
  if (errno != EINPROGRESS) return false;
  pollfd p{s.get(), POLLOUT, 0};
  if (::poll(&p, 1, 100) != 1) return false;
  int error = 0;
  socklen_t length = sizeof error;
  return ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
}
}  // namespace

bool ApacheServer::ready() {
  if (!not_yet_seen_.empty()) {
    std::string pid_text;
    try {
      pid_text = read_small_file(pid_file_.string());
    } catch (const SystemError&) {
      return false;  // not yet written
    }
    if (std::atol(pid_text.c_str()) != daemon_->pid()) return false;
  }
  while (!not_yet_seen_.empty() && accepts(not_yet_seen_.back())) not_yet_seen_.pop_back();
  return not_yet_seen_.empty();
}

UserError ApacheServer::failure(const std::string& what) const {
  const std::string words = quoted_daemon_log(daemon_->log());
  return UserError("the replay server for " + endpoint_ + " " + what + ":" + words +
                   "\n  fix: " + apache_failure_fix(words, blamed_endpoint(words, endpoints_)));
}

std::string apache_failure_fix(const std::string& words, const std::string& endpoint) {
  const std::string ip = endpoint.substr(0, endpoint.rfind(':'));
  const std::string port = endpoint.substr(endpoint.rfind(':') + 1);
  if (words.find("Address already in use") != std::string::npos) {
    return "something else in the replay namespace already listens on " + endpoint + "; stop it";
  }
  if (words.find("Permission denied") != std::string::npos && words.find("make_sock") != std::string::npos) {
    return "unprivileged processes may not bind port " + port +
           ": net.ipv4.ip_unprivileged_port_start must be 0 in the replay namespace (Linux 4.11 or later)";
  }
  if (words.find("Cannot assign requested address") != std::string::npos) {
    return "the address " + ip + " is not configured in the replay namespace";
  }
  if (words.find("Cannot load") != std::string::npos) {
    return "install Apache's modules (Debian/Ubuntu: apt-get install apache2-bin), or set MAHIMAHI_APACHE_MODULES to "
           "your httpd's module directory";
  }
  if (words.find("Syntax error") != std::string::npos) {
    return "this Apache does not accept mm-replay's configuration: mm-replay needs a recent Apache httpd 2.4 with "
           "mod_proxy_fcgi, mod_ssl and mod_http2";
  }
  if (words.find("Resource temporarily unavailable") != std::string::npos ||
      words.find("Cannot allocate memory") != std::string::npos) {
    return "the system ran out of processes, threads or memory: raise `ulimit -u` or replay a recording with fewer "
           "servers";
  }
  return "see Apache's words above";
}
