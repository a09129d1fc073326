// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One Apache httpd serving recorded IP:ports during replay (one virtual host each, see
// apache_config.hh), forwarding every request to the matcher over FastCGI: writes its
// configuration into the work directory (the certificates are written before, one per HTTPS
// IP:port: write_apache_certificate), starts it as a ReplayDaemon, tells when every IP:port
// accepts connections, and turns its log into an error that says what to fix.
#include <netinet/in.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "replay/replay_daemon.hh"
#include "replay/replay_server_spec.hh"
#include "util/exception.hh"

class CertificateAuthority;
class ReplayGuardian;

class ApacheServer {
 public:
  // specs: the IP:ports it serves (at least one); program: the httpd; modules: its module
  // directory; socket: the matcher's; work: where its files go; instances: how many Apaches the
  // replay runs.
  ApacheServer(const std::vector<ReplayServerSpec>& specs, const std::filesystem::path& program,
               const std::filesystem::path& modules, const std::filesystem::path& socket,
               const std::filesystem::path& work, ReplayGuardian& guardian, size_t instances);
  ReplayDaemon& daemon() { return *daemon_; }
  const ReplayDaemon& daemon() const { return *daemon_; }
  // What it serves, for messages: "10.0.0.1:443", "10.0.0.1:80 and 10.0.0.2:443",
  // "10.0.0.1:80, 10.0.0.2:443 and 10.0.0.3:80", "10.0.0.1:80 and 99 other IP:ports".
  const std::string& endpoint() const { return endpoint_; }
  // Has it bound its ports (the pid file is written after that) and does each accept a connection?
  bool ready();
  // The error for a server that `what` ("stopped while starting (...)"): its log's last words and the fix.
  UserError failure(const std::string& what) const;

 private:
  std::string endpoint_;
  std::vector<std::string> endpoints_;     // "ip:port" each
  std::vector<sockaddr_in> not_yet_seen_;  // the IP:ports that have not accepted a connection yet
  std::filesystem::path pid_file_;
  std::unique_ptr<ReplayDaemon> daemon_;
};

// Writes the certificate and key of an HTTPS IP:port (its names: certificate_names) into `work`,
// as apache_file_stem(spec) + ".pem" and ".key"; nothing for HTTP.
void write_apache_certificate(const ReplayServerSpec& spec, CertificateAuthority& ca,
                              const std::filesystem::path& work);

// The IP:ports of `endpoints` ("ip:port" each) as a message names them (ApacheServer::endpoint).
std::string endpoints_text(const std::vector<std::string>& endpoints);

// The IP:port an Apache's log `words` blame ("... could not bind to address 10.0.0.2:443"), if one
// of `endpoints`; else the first of them.
std::string blamed_endpoint(const std::string& words, const std::vector<std::string>& endpoints);

// The fix to suggest for an Apache that failed with `words` in its log, serving `endpoint` ("ip:port").
std::string apache_failure_fix(const std::string& words, const std::string& endpoint);
