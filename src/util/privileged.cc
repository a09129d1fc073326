#include "privileged.hh"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <sstream>

#include "exception.hh"
#include "netdevice.hh"

namespace {

bool no_new_privs_set() {
  try {
    std::istringstream status(read_small_file("/proc/self/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("NoNewPrivs:", 0) == 0) return line.find('1') != std::string::npos;
    }
  } catch (...) {
  }
  return false;
}

// Serialises address allocation among shells starting at the same time (in any namespace).
class AllocationLock {
 public:
  AllocationLock() {
    for (const char* path : {"/run/mahimahi.lock", "/var/lock/mahimahi.lock"}) {
      fd_ = FileDescriptor(::open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (fd_.valid()) break;
    }
    if (!fd_.valid()) throw SystemError("creating /run/mahimahi.lock");
    while (::flock(fd_.get(), LOCK_EX) < 0) {
      if (errno != EINTR) throw SystemError("locking /run/mahimahi.lock");
    }
  }

 private:
  FileDescriptor fd_;
};

FileDescriptor open_current_namespace() {
  return FileDescriptor(check_syscall("opening /proc/self/ns/net", ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)));
}

// The kernel's IPv6 autoconfiguration (router solicitations, MLD) would otherwise send packets
// through the ferry on its own. A kernel without IPv6 has no such file, and no chatter.
void disable_ipv6(const std::string& device) {
  const std::string path = "/proc/sys/net/ipv6/conf/" + device + "/disable_ipv6";
  if (::access(path.c_str(), F_OK) == 0) write_existing_file(path, "1");
}

void enable_forwarding() {
  const std::string path = "/proc/sys/net/ipv4/ip_forward";
  if (read_small_file(path).rfind('1', 0) != 0) write_existing_file(path, "1");
}

FileDescriptor bound_socket(int type, Ipv4 address, uint16_t port) {
  FileDescriptor fd(check_syscall("socket", ::socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)));
  const sockaddr_in sin = socket_address(address, port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sin), sizeof sin) < 0)
    throw SystemError("binding the DNS relay to " + address.str() + ":" + std::to_string(port));
  return fd;
}

void connect_socket(const FileDescriptor& fd, const sockaddr_in& to) {
  check_syscall("connecting the DNS relay", ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to));
}

sockaddr_in local_address(const FileDescriptor& fd) {
  sockaddr_in sin{};
  socklen_t length = sizeof sin;
  check_syscall("getsockname", ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sin), &length));
  return sin;
}

constexpr int kTxQueueLength = 10000;  // the default 500 drops bursts before the ferry reads them

}  // namespace

UserIdentity check_privileges(const std::string& program) {
  if (::geteuid() != 0) {
    if (no_new_privs_set()) {
      throw UserError(
          "the setuid bit of " + program +
          " has no effect here because no_new_privs is set (by a container runtime, systemd's NoNewPrivileges= "
          "or setpriv --no-new-privs); run it as root or without no_new_privs");
    }
    throw UserError(program + " needs root's rights: install it setuid root (make install as root does: chown root " +
                    program + " && chmod u+s " + program + ", on a file system not mounted nosuid) or run it as root");
  }
  return UserIdentity{::getuid(), ::getgid()};
}

void drop_privileges(const UserIdentity& user) {
  if (user.uid == 0) return;  // root asked for this shell: its command keeps root's rights
  check_syscall("setresgid", ::setresgid(user.gid, user.gid, user.gid));
  check_syscall("setresuid", ::setresuid(user.uid, user.uid, user.uid));
  if (::setuid(0) == 0 || ::seteuid(0) == 0 || ::geteuid() == 0 || ::getegid() != user.gid) {
    throw std::runtime_error("BUG: root's rights could be regained after dropping them");
  }
}

void use_realtime_scheduling() {
  // The highest normal-scheduler priority, not SCHED_FIFO: a ferry carrying ~1 Gbit/s can keep
  // a core busy, and the kernel's real-time throttling (sched_rt_runtime_us, 95 %) would then
  // stop it for tens of milliseconds every second, wasting the link's opportunities.
  (void)::setpriority(PRIO_PROCESS, 0, -20);
}

void enter_namespace(const FileDescriptor& ns) {
  check_syscall("entering the shell's network namespace", ::setns(ns.get(), CLONE_NEWNET));
}

ShellNetwork create_shell_network(const std::string& kind, const Ipv4Net& pool, std::optional<Ipv4> avoid) {
  AllocationLock lock;
  MasqueradeTable::remove_stale();
  enable_forwarding();

  std::vector<Ipv4Net> in_use = networks_in_use();
  if (avoid) in_use.push_back(Ipv4Net::of(*avoid, 32));
  auto addresses = allocate_pair(pool, in_use);
  if (!addresses) {
    throw UserError("no free /30 left in the address pool " + pool.str() + "; set " + kAddressPoolVariable +
                    " to an unused range (e.g. 10.200.0.0/16)");
  }

  ShellNetwork net;
  net.addresses = *addresses;
  net.outer_device = kind + "-" + std::to_string(::getpid());
  net.outer_tun = create_tun(net.outer_device);
  disable_ipv6(net.outer_device);
  configure_point_to_point(net.outer_device, net.addresses.outer, net.addresses.inner, kTxQueueLength);

  std::vector<Ipv4> resolvers;
  try {
    resolvers = loopback_nameservers(read_small_file("/etc/resolv.conf"));
  } catch (const SystemError&) {
    // No resolv.conf: nothing to relay.
  }
  if (!resolvers.empty()) {
    net.dns.nameservers = resolvers;
    net.dns.outer_relay = bound_socket(SOCK_DGRAM, net.addresses.outer, 0);
  }

  FileDescriptor caller_namespace = open_current_namespace();
  if (::unshare(CLONE_NEWNET) < 0) {
    if (errno == EINVAL) throw UserError("this kernel has no network namespaces; enable CONFIG_NET_NS");
    throw SystemError("creating a network namespace");
  }
  try {
    bring_up("lo");
    net.inner_tun = create_tun(kInnerDevice);
    disable_ipv6(kInnerDevice);
    configure_point_to_point(kInnerDevice, net.addresses.inner, net.addresses.outer, kTxQueueLength);
    add_default_route(kInnerDevice, net.addresses.outer);
    // Let every user ping with ICMP sockets, as no setuid ping exists for this namespace's view.
    write_existing_file("/proc/sys/net/ipv4/ping_group_range", "0 2147483647");
    for (Ipv4 resolver : net.dns.nameservers) {
      net.dns.inner_udp.push_back(bound_socket(SOCK_DGRAM, resolver, 53));
      net.dns.inner_tcp.push_back(bound_socket(SOCK_STREAM, resolver, 53));
      check_syscall("listen", ::listen(net.dns.inner_tcp.back().get(), 64));
    }
    if (net.dns.active()) {
      net.dns.inner_forward = bound_socket(SOCK_DGRAM, net.addresses.inner, 0);
      connect_socket(net.dns.inner_forward, local_address(net.dns.outer_relay));
    }
    net.inner_namespace = open_current_namespace();
  } catch (...) {
    enter_namespace(caller_namespace);
    throw;
  }
  enter_namespace(caller_namespace);
  if (net.dns.active()) connect_socket(net.dns.outer_relay, local_address(net.dns.inner_forward));

  net.nat = std::make_unique<MasqueradeTable>(net.outer_device, net.addresses.inner);
  return net;
}

std::vector<Ipv4> loopback_nameservers(const std::string& resolv_conf) {
  std::vector<Ipv4> found;
  std::istringstream lines(resolv_conf);
  std::string line;
  const Ipv4Net loopback = *Ipv4Net::parse("127.0.0.0/8");
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string keyword, address;
    if (!(words >> keyword >> address) || keyword != "nameserver") continue;
    auto ip = Ipv4::parse(address);
    if (ip && loopback.contains(*ip) && found.size() < 3) found.push_back(*ip);
  }
  return found;
}

FileDescriptor intercept_tcp(const ShellNetwork& net, bool refuse_quic) {
  // Listening on the outer address (not loopback): a DNAT to a local address on the TUN needs
  // no route_localnet, and only this shell's packets reach it.
  FileDescriptor listener = bound_socket(SOCK_STREAM, net.addresses.outer, 0);
  check_syscall("listen", ::listen(listener.get(), 4096));
  const sockaddr_in bound = local_address(listener);
  const std::string& table = net.nat->name();
  std::ostringstream s;
  s << "add chain ip " << table << " prerouting { type nat hook prerouting priority dstnat; policy accept; }\n"
    << "add rule ip " << table << " prerouting iifname \"" << net.outer_device << "\" ip saddr "
    << net.addresses.inner.str() << " meta l4proto tcp dnat to " << net.addresses.outer.str() << ":"
    << ntohs(bound.sin_port) << "\n";
  if (refuse_quic) {
    // Browsers fall back from QUIC to TCP at once when UDP/443 is refused (ICMP port unreachable).
    s << "add chain ip " << table << " forward { type filter hook forward priority filter; policy accept; }\n"
      << "add rule ip " << table << " forward iifname \"" << net.outer_device << "\" udp dport 443 reject\n";
  }
  run_nft(s.str());
  return listener;
}

FileDescriptor create_isolated_namespace() {
  FileDescriptor caller_namespace = open_current_namespace();
  if (::unshare(CLONE_NEWNET) < 0) {
    if (errno == EINVAL) throw UserError("this kernel has no network namespaces; enable CONFIG_NET_NS");
    throw SystemError("creating a network namespace");
  }
  try {
    bring_up("lo");
    write_existing_file("/proc/sys/net/ipv4/ip_unprivileged_port_start", "0");
    write_existing_file("/proc/sys/net/ipv4/ping_group_range", "0 2147483647");
    FileDescriptor isolated = open_current_namespace();
    enter_namespace(caller_namespace);
    return isolated;
  } catch (...) {
    enter_namespace(caller_namespace);
    throw;
  }
}

void check_isolated_address_count(size_t count) {
  if (count > kMaxIsolatedAddresses) {
    throw UserError("too many addresses for the replay: " + std::to_string(count) +
                    " (the recorded servers' and the resolvers'; at most " + std::to_string(kMaxIsolatedAddresses) +
                    "); replay with --single-server (one address), or split the recording");
  }
}

void check_isolated_addresses(const std::vector<Ipv4>& addresses) {
  check_isolated_address_count(addresses.size());
  struct Range {
    const char* net;
    const char* what;
  };
  static constexpr Range kRefused[] = {{"0.0.0.0/8", "\"this network\", 0.0.0.0/8"},
                                       {"127.0.0.0/8", "loopback, 127.0.0.0/8"},
                                       {"224.0.0.0/4", "multicast, 224.0.0.0/4"},
                                       {"240.0.0.0/4", "reserved or broadcast, 240.0.0.0/4"}};
  for (size_t i = 0; i < addresses.size(); i++) {
    const Ipv4 address = addresses[i];
    for (const Range& r : kRefused) {
      if (Ipv4Net::parse(r.net)->contains(address)) {
        throw UserError("server address " + address.str() + " is not a unicast address (" + r.what +
                        "); remove or correct the pairs recorded with it");
      }
    }
    for (size_t j = 0; j < i; j++) {  // at most 1024 addresses: half a million comparisons
      if (addresses[j] == address) {
        throw UserError("server address " + address.str() + " was requested twice; each address is added once");
      }
    }
  }
}

void add_isolated_addresses(const FileDescriptor& ns, const std::vector<Ipv4>& addresses) {
  check_isolated_addresses(addresses);
  if (addresses.empty()) return;
  FileDescriptor caller_namespace = open_current_namespace();
  enter_namespace(ns);
  try {
    add_addresses("lo", addresses);
  } catch (...) {
    enter_namespace(caller_namespace);
    throw;
  }
  enter_namespace(caller_namespace);
}
