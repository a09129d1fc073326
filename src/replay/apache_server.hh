// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One Apache httpd serving one recorded IP:port during replay, forwarding every request to the
// matcher over FastCGI: writes its certificate (HTTPS) and configuration into the work directory,
// starts it as a ReplayDaemon, tells when it accepts connections, and turns its log into an error
// that says what to fix.
#include <netinet/in.h>

#include <filesystem>
#include <memory>
#include <string>

#include "replay/replay_daemon.hh"
#include "replay/replay_server_spec.hh"
#include "util/exception.hh"

class CertificateAuthority;
class ReplayGuardian;

class ApacheServer {
 public:
  // program: the httpd; modules: its module directory; socket: the matcher's; work: where its
  // files go; instances: how many Apaches the replay runs.
  ApacheServer(const ReplayServerSpec& spec, const std::filesystem::path& program, const std::filesystem::path& modules,
               CertificateAuthority& ca, const std::filesystem::path& socket, const std::filesystem::path& work,
               ReplayGuardian& guardian, size_t instances);
  ReplayDaemon& daemon() { return *daemon_; }
  const ReplayDaemon& daemon() const { return *daemon_; }
  const std::string& endpoint() const { return endpoint_; }
  // Has it bound its port (the pid file is written after that) and does the port accept a connection?
  bool ready();
  // The error for a server that `what` ("stopped while starting (...)"): its log's last words and the fix.
  UserError failure(const std::string& what) const;

 private:
  std::string endpoint_;  // "ip:port"
  sockaddr_in address_{};
  std::filesystem::path pid_file_;
  std::unique_ptr<ReplayDaemon> daemon_;
};

// The fix to suggest for an Apache that failed with `words` in its log, serving `endpoint` ("ip:port").
std::string apache_failure_fix(const std::string& words, const std::string& endpoint);
