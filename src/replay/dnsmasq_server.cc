// SPDX-License-Identifier: GPL-3.0-or-later
// The replay's dnsmasq: its hosts file and command line, its start, its readiness probes, its
// failures. See dnsmasq_server.hh.
#include "replay/dnsmasq_server.hh"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sstream>

#include "util/address.hh"
#include "util/host_name.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {

// The name as a hosts file holds it, or "" if it cannot be there.
std::string hosts_file_name(const std::string& raw_name) {
  const std::string name = ascii_lowercase(
      raw_name.size() > 1 && raw_name.back() == '.' ? raw_name.substr(0, raw_name.size() - 1) : raw_name);
  if (!is_host_name(name) || Ipv4::parse(name)) return {};  // IP literals need no DNS
  return name;
}

std::string current_user_name() {
  const struct passwd* entry = ::getpwuid(::geteuid());
  return entry && entry->pw_name ? entry->pw_name : std::string();
}

std::string current_group_name() {
  const struct group* entry = ::getgrgid(::getegid());
  return entry && entry->gr_name ? entry->gr_name : std::string();
}

}  // namespace

std::string dnsmasq_hosts(const ReplayDns& dns) {
  std::string hosts;
  for (const auto& [raw_name, ips] : dns.names) {
    const std::string name = hosts_file_name(raw_name);
    if (name.empty()) continue;
    for (const std::string& ip : ips) {
      if (Ipv4::parse(ip)) hosts += ip + " " + name + "\n";
    }
  }
  return hosts;
}

std::vector<std::string> dnsmasq_arguments(const ReplayDns& dns, const fs::path& hosts_file, const fs::path& work,
                                           const std::string& user, const std::string& group) {
  std::vector<std::string> args{"--keep-in-foreground",
                                "--conf-file=/dev/null",
                                "--no-resolv",
                                "--no-hosts",
                                "--addn-hosts=" + hosts_file.string(),
                                "--local=/#/",
                                "--bind-interfaces",
                                "--pid-file=" + (work / "dnsmasq.pid").string(),
                                "--log-facility=" + (work / "dnsmasq.log").string()};
  if (!user.empty()) args.push_back("--user=" + user);
  if (!group.empty()) args.push_back("--group=" + group);
  for (const std::string& address : dns.listen) args.push_back("--listen-address=" + address);
  return args;
}

std::string dns_query(uint16_t id, const std::string& name) {
  std::string q;
  q += static_cast<char>(id >> 8);
  q += static_cast<char>(id & 0xff);
  q += std::string("\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);
  std::istringstream labels(name);
  std::string label;
  while (std::getline(labels, label, '.')) {
    q += static_cast<char>(label.size());
    q += label;
  }
  q += std::string("\x00\x00\x01\x00\x01", 5);
  return q;
}

DnsmasqServer::DnsmasqServer(const ReplayDns& dns, const fs::path& program, const fs::path& work,
                             ReplayGuardian& guardian) {
  const fs::path hosts_file = work / "dnsmasq.hosts";
  const std::string hosts = dnsmasq_hosts(dns);
  write_daemon_file(hosts_file, hosts);
  // As root, dnsmasq would switch to user "dnsmasq", who cannot read the work directory; as anyone
  // else it cannot switch. Either way: stay who we are.
  const std::vector<std::string> args =
      dnsmasq_arguments(dns, hosts_file, work, current_user_name(), current_group_name());
  for (const std::string& address : dns.listen) listen_text_ += (listen_text_.empty() ? "" : ", ") + address;

  // Readiness: every address answers (anything) to a query for a recorded name (the hosts file's first).
  std::string probe_name = "mahimahi.invalid";
  if (!hosts.empty()) {
    const size_t space = hosts.find(' ');
    probe_name = hosts.substr(space + 1, hosts.find('\n') - space - 1);
  }
  probe_id_ = static_cast<uint16_t>(::getpid() ^ 0x6d6d);
  probe_query_ = dns_query(probe_id_, probe_name);
  for (const std::string& address : dns.listen) {
    Probe probe{};
    probe.address = socket_address(*Ipv4::parse(address), 53);
    probe.socket = FileDescriptor(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe.socket.valid()) throw SystemError("socket");
    check_syscall("connect", ::connect(probe.socket.get(), reinterpret_cast<const sockaddr*>(&probe.address),
                                       sizeof probe.address));
    probes_.push_back(std::move(probe));
  }
  daemon_ = std::make_unique<ReplayDaemon>(program, args, work / "dnsmasq.log", guardian);
}

bool DnsmasqServer::ready() {
  bool all = true;
  for (Probe& probe : probes_) {
    if (probe.answered) continue;
    char reply[512];
    for (;;) {  // earlier queries' answers, if any, are waiting
      const ssize_t n = ::recv(probe.socket.get(), reply, sizeof reply, 0);
      if (n < 0) break;  // EAGAIN, or ECONNREFUSED while nothing listens yet
      if (n >= 12 && static_cast<unsigned char>(reply[0]) == (probe_id_ >> 8) &&
          static_cast<unsigned char>(reply[1]) == (probe_id_ & 0xff) && (reply[2] & 0x80)) {
        probe.answered = true;
        break;
      }
    }
    if (!probe.answered) {
      (void)::send(probe.socket.get(), probe_query_.data(), probe_query_.size(), 0);
      all = false;
    }
  }
  return all;
}

UserError DnsmasqServer::failure(const std::string& what) const {
  const std::string words = quoted_daemon_log(daemon_->log());
  std::string fix;
  if (words.find("Address already in use") != std::string::npos) {
    fix = "something else in the replay namespace already answers DNS on " + listen_text_ + " port 53; stop it";
  } else if (words.find("Permission denied") != std::string::npos) {
    fix =
        "unprivileged processes may not bind port 53: net.ipv4.ip_unprivileged_port_start must be 0 in the replay "
        "namespace";
  } else if (words.find("Cannot assign requested address") != std::string::npos) {
    fix = "an address dnsmasq should answer on (" + listen_text_ + ") is not configured in the replay namespace";
  } else {
    fix = "see dnsmasq's words above";
  }
  return UserError("the replay DNS server (dnsmasq, on " + listen_text_ + ") " + what + ":" + words +
                   "\n  fix: " + fix);
}
