// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The replay's DNS server: a dnsmasq that knows exactly the recorded names. Each answers its
// recorded addresses, any other name NXDOMAIN at once (--local=/#/: without it, unknown names get
// REFUSED), no upstream. Started as a ReplayDaemon; ready once every listening address answers a
// query; its failures become errors that say what to fix.
#include <netinet/in.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "replay/replay_daemon.hh"
#include "replay/replay_server_spec.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

class ReplayGuardian;

class DnsmasqServer {
 public:
  // program: dnsmasq; work: where its hosts file, pid file and log go.
  DnsmasqServer(const ReplayDns& dns, const std::filesystem::path& program, const std::filesystem::path& work,
                ReplayGuardian& guardian);
  ReplayDaemon& daemon() { return *daemon_; }
  const ReplayDaemon& daemon() const { return *daemon_; }
  // Does every listening address answer a query?
  bool ready();
  // The error for a server that `what` ("stopped while starting (...)"): its log's last words and the fix.
  UserError failure(const std::string& what) const;

 private:
  struct Probe {
    sockaddr_in address;
    FileDescriptor socket;
    bool answered = false;
  };
  std::string probe_query_;
  uint16_t probe_id_ = 0;
  std::vector<Probe> probes_;
  std::string listen_text_;
  std::unique_ptr<ReplayDaemon> daemon_;
};

// dnsmasq's hosts file for `dns`: one line "IP NAME" per (address, name), names lower case without
// a trailing dot; invalid names, IP literals and addresses that are not IPv4 left out.
std::string dnsmasq_hosts(const ReplayDns& dns);

// dnsmasq's command line (after its program name): only the hosts file, answering on dns.listen,
// files in work, running as user:group (either empty: not given).
std::vector<std::string> dnsmasq_arguments(const ReplayDns& dns, const std::filesystem::path& hosts_file,
                                           const std::filesystem::path& work, const std::string& user,
                                           const std::string& group);

// A DNS query (RFC 1035 §4.1) for the A record of `name`, with recursion desired.
std::string dns_query(uint16_t id, const std::string& name);
