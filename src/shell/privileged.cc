// SPDX-License-Identifier: GPL-3.0-or-later
// The privileged operations of a shell: identity checks, the drop, root helpers, namespaces and
// their devices (see privileged.hh and README.md).
#include "shell/privileged.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <iostream>
#include <sstream>

#include "shell/forwarding.hh"
#include "shell/netdevice.hh"
#include "shell/resolv_conf.hh"
#include "shell/rootless.hh"
#include "shell/route_table.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/signals.hh"
#include "util/text.hh"

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

// A /30 of the pool belongs to the shell holding a write lock on the byte of the namespace's lock
// file at the /30's index: taking it is atomic, never waits (F_OFD_SETLK), and the lock ends
// when the supervisor does, even by SIGKILL. Shells starting at the same time thus never take
// the same addresses and never wait for each other, and since only root can open the file, no
// user can block a slot (an abstract socket name could be taken by anyone).
FileDescriptor claim_slot(Ipv4 first) { return claim_address_slot(static_cast<off_t>(first.value / 4)); }

// The kernel's IPv6 autoconfiguration (router solicitations, MLD) would otherwise send packets
// through the ferry on its own. A kernel without IPv6 has no such file, and no chatter.
void disable_ipv6(const std::string& device) {
  const std::string path = "/proc/sys/net/ipv6/conf/" + device + "/disable_ipv6";
  if (::access(path.c_str(), F_OK) == 0) write_existing_file(path, "1");
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

// Moves the calling process into a new, empty network namespace.
void unshare_network_namespace() {
  if (::unshare(CLONE_NEWNET) < 0) {
    if (errno == EINVAL) throw UserError("this kernel has no network namespaces; enable CONFIG_NET_NS");
    throw SystemError("creating a network namespace");
  }
}

constexpr int kTxQueueLength = 10000;  // the default 500 drops bursts before the ferry reads them

}  // namespace

namespace {
PrivilegeMode decided_mode = PrivilegeMode::Setuid;
}

PrivilegeMode privilege_mode() { return decided_mode; }

UserIdentity acquire_privileges(const std::string& program, const char* rootless_value) {
  const std::string_view value = rootless_value ? rootless_value : "";
  if (value != "" && value != "0" && value != "1") {
    throw UsageError(std::string(kRootlessVariable) +
                     " must be 1 (rootless: user namespaces of your own) or 0 (root's rights: setuid or root), not \"" +
                     printable(value, 40) + "\"");
  }
  const UserIdentity user{::getuid(), ::getgid(), PrivilegeMode::Setuid};
  if (::geteuid() == 0 && value != "1") {
    // Root without the capabilities a shell is made with: a container started without them (a
    // setuid program gets only the bounding set's), or a bounding set narrowed by setpriv.
    if (!has_effective_capability(CAP_NET_ADMIN) || !has_effective_capability(CAP_SYS_ADMIN)) {
      throw UserError(
          std::string("root's rights here come without CAP_NET_ADMIN and CAP_SYS_ADMIN (a container ") +
          "started without --cap-add NET_ADMIN --cap-add SYS_ADMIN, or a narrowed capability bounding set): " +
          "give it those, or run it rootless, without either, with " + kRootlessVariable + "=1 (docs/containers.md)");
    }
    decided_mode = user.uid == 0 ? PrivilegeMode::Root : PrivilegeMode::Setuid;
    return UserIdentity{user.uid, user.gid, decided_mode};
  }
  if (::geteuid() != 0 && value == "0") {
    if (no_new_privs_set()) {
      throw UserError(
          "the setuid bit of " + program +
          " has no effect here because no_new_privs is set (by a container runtime, systemd's NoNewPrivileges= "
          "or setpriv --no-new-privs); run it as root, without no_new_privs, or rootless (unset " +
          kRootlessVariable + ")");
    }
    throw UserError(program + " needs root's rights with " + kRootlessVariable +
                    "=0: install it setuid root (make install as root does: chown root " + program + " && chmod u+s " +
                    program + ", on a file system not mounted nosuid), run it as root, or unset " + kRootlessVariable +
                    " to run it rootless");
  }
  // A setuid program asked to run rootless gives root up now, for good.
  if (user.uid != 0 && (::geteuid() == 0 || ::getegid() != user.gid)) {
    drop_privileges(user);
    // A setuid start left /proc/self root's: the user namespace's maps are written there. Safe
    // now that nothing of root's is left to read or regain.
    check_syscall("prctl(PR_SET_DUMPABLE)", ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
  }
  decided_mode = PrivilegeMode::Rootless;
  return UserIdentity{user.uid, user.gid, PrivilegeMode::Rootless};
}

void drop_privileges(const UserIdentity& user) {
  if (user.uid == 0) return;  // root asked for this shell: its command keeps root's rights
  if (user.mode == PrivilegeMode::Rootless) {
    drop_capabilities();
    return;
  }
  check_syscall("setresgid", ::setresgid(user.gid, user.gid, user.gid));
  check_syscall("setresuid", ::setresuid(user.uid, user.uid, user.uid));
  if (::setuid(0) == 0 || ::seteuid(0) == 0 || ::geteuid() == 0 || ::getegid() != user.gid) {
    throw std::runtime_error("BUG: root's rights could be regained after dropping them");
  }
}

int ferry_nice(const UserIdentity& user, const AdministratorConfig& config, rlim_t nice_limit) {
  // A little above the programs it carries, not far: a ferry at nice -20 took the CPU its own
  // endpoints needed on a busy machine (rate:10Gbit/s down beside a compile: 2.2-3.9 Gbit/s at
  // -20, 7.4-7.7 at -5, 6.5-7.1 at 0; the delay shells' timing the same within 0.05 ms on
  // average). Not SCHED_FIFO either: a ferry carrying ~1 Gbit/s can keep a core busy, and the
  // kernel's real-time throttling (sched_rt_runtime_us, 95 %) would then stop it for tens of
  // milliseconds every second, wasting the link's opportunities.
  constexpr int kPreferred = -5;
  if (user.uid == 0) return kPreferred;
  int allowed = kNoPriorityChange;
  if (nice_limit > 0) {
    // RLIMIT_NICE n lets a process go down to nice 20 - n (setpriority(2)).
    allowed = nice_limit == RLIM_INFINITY || nice_limit >= 40 ? kPreferred : 20 - static_cast<int>(nice_limit);
    allowed = std::max(allowed, kPreferred);
  }
  // The administrator's setting, as far as it goes (even past kPreferred: the machine is theirs).
  if (config.ferry_nice) allowed = std::min(allowed, *config.ferry_nice);
  return std::max(allowed, -20);
}

int ferry_nice(const UserIdentity& user, const AdministratorConfig& config) {
  rlimit limit{};
  return ferry_nice(user, config, ::getrlimit(RLIMIT_NICE, &limit) == 0 ? limit.rlim_cur : 0);
}

void raise_priority(int nice) {
  if (nice == kNoPriorityChange) return;
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, 0);
  if (errno == 0 && nice < current) (void)::setpriority(PRIO_PROCESS, 0, nice);
}

void enter_namespace(const FileDescriptor& ns) {
  check_syscall("entering the shell's network namespace", ::setns(ns.get(), CLONE_NEWNET));
}

void enter_shell_namespace(const ShellNetwork& net) {
  if (net.command_userns.valid()) {
    enter_rootless_namespaces(net.command_userns.get(), net.inner_namespace.get());
  } else {
    enter_namespace(net.inner_namespace);
  }
}

namespace {
// Who may ping with ICMP sockets in a new namespace: everyone (no setuid ping exists for its
// view); rootless, the user's group, the only one mapped there.
void allow_ping() {
  const std::string groups = decided_mode == PrivilegeMode::Rootless
                                 ? std::to_string(::getgid()) + " " + std::to_string(::getgid())
                                 : "0 2147483647";
  write_existing_file("/proc/sys/net/ipv4/ping_group_range", groups);
}

// net.ipv4.tcp_ecn of the namespace this process is in: only the kernel's three modes.
constexpr const char* kTcpEcnSetting = "/proc/sys/net/ipv4/tcp_ecn";
void set_tcp_ecn(int mode) {
  if (mode < 0 || mode > 2) throw std::invalid_argument("tcp_ecn must be 0, 1 or 2");
  write_existing_file(kTcpEcnSetting, std::to_string(mode));
}

// The mode a new namespace gets: the one asked for, else that of the namespace the shell starts
// in (a new namespace would have the kernel's default, 2), so that `mm-delay --tcp-ecn=on 10
// mm-link ...` gives the innermost command ECN, and a shell behaves as its host does.
std::optional<int> tcp_ecn_for_new_namespace(std::optional<int> asked) {
  if (asked) return asked;
  const std::optional<std::string> current = read_setting(kTcpEcnSetting);
  if (current == "0" || current == "1" || current == "2") return *current == "0" ? 0 : *current == "1" ? 1 : 2;
  return std::nullopt;  // a mode this code does not know (AccECN's, on newer kernels): the default
}

// Runs `configure` in a new network namespace: rootless, in a child process and the namespaces of
// rootless.hh (net.command_userns set); otherwise here, returning to the caller's namespace. The
// descriptors it returns come back either way.
std::vector<FileDescriptor> in_new_namespace(ShellNetwork& net,
                                             const std::function<std::vector<FileDescriptor>()>& configure) {
  if (decided_mode == PrivilegeMode::Rootless) {
    RootlessNamespaces made = create_rootless_namespaces(::getuid(), ::getgid(), configure);
    net.command_userns = std::move(made.userns);
    net.inner_namespace = std::move(made.net);
    return std::move(made.made);
  }
  FileDescriptor caller_namespace = open_own_namespace("net");
  unshare_network_namespace();
  std::vector<FileDescriptor> fds;
  try {
    bring_up("lo");
    fds = configure();
    net.inner_namespace = open_own_namespace("net");
  } catch (...) {
    enter_namespace(caller_namespace);
    throw;
  }
  enter_namespace(caller_namespace);
  return fds;
}
}  // namespace

namespace {
// The namespace's default congestion control; the kernel says no with ENOENT (none of that name,
// even as a module) or EPERM (not among net.ipv4.tcp_allowed_congestion_control).
void set_congestion_control(const std::string& name) {
  const std::string path = "/proc/sys/net/ipv4/tcp_congestion_control";
  try {
    write_existing_file(path, name);
  } catch (const SystemError& e) {
    if (e.error() != ENOENT && e.error() != EPERM) throw;
    auto words = [](const std::string& file) { return read_setting(file).value_or("?"); };  // "reno bbr"
    const std::string allowed = words("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
    if (e.error() == ENOENT) {
      throw UserError("congestion control " + name + ": this kernel has no congestion control of that name (" +
                      "available: " + words("/proc/sys/net/ipv4/tcp_available_congestion_control") +
                      "; in a namespace: " + allowed + "); choose one of those");
    }
    throw UserError("congestion control " + name +
                    ": the kernel allows only these in a namespace (net.ipv4.tcp_allowed_congestion_control): " +
                    allowed + "; choose one of them, or ask the administrator to allow " + name);
  }
}

// The command's TCP in its new namespace (mm-paths --tcp-...; the calling thread is in it).
// The initial window goes on both routes out: the default one and the one to the outer address
// (MAHIMAHI_BASE, a peer of the point-to-point device).
void set_command_tcp(const ServerTcpSettings& tcp, const AddressPair& addresses) {
  if (!tcp.congestion_control.empty()) set_congestion_control(tcp.congestion_control);
  if (tcp.slow_start_after_idle)
    write_existing_file("/proc/sys/net/ipv4/tcp_slow_start_after_idle", *tcp.slow_start_after_idle ? "1" : "0");
  if (tcp.initial_window) {
    set_default_route_windows(kInnerDevice, addresses.outer, {.congestion = tcp.initial_window});
    set_peer_route_windows(kInnerDevice, addresses.inner, addresses.outer, {.congestion = tcp.initial_window});
  }
}
}  // namespace

ShellNetwork create_shell_network(ShellKind kind, const Ipv4Net& pool, std::optional<Ipv4> avoid,
                                  const ShellNetworkOptions& options) {
  std::vector<Ipv4Net> in_use = networks_in_use();
  if (avoid) in_use.push_back(Ipv4Net::of(*avoid, 32));
  ShellNetwork net;
  for (;;) {
    auto addresses = allocate_pair(pool, in_use);
    if (!addresses) {
      throw UserError("no free /30 left in the address pool " + pool.str() + "; set " + kAddressPoolVariable +
                      " to an unused range (e.g. 10.200.0.0/16)");
    }
    net.slot_claim = claim_slot(Ipv4{addresses->outer.value - 1});
    if (net.slot_claim.valid()) {
      net.addresses = *addresses;
      break;
    }
    in_use.push_back(Ipv4Net::of(addresses->outer, 30));  // a shell starting now has it
  }

  net.outer_device = shell_device_name(kind, ::getpid());
  if (options.offload) {
    OffloadTun tun = create_offload_tun(net.outer_device, false);
    net.offload = tun.fd.valid();
    net.offload_refused = tun.refused;
    net.offload_features = tun.enabled;
    net.outer_tun = std::move(tun.fd);
  }
  if (!net.offload) net.outer_tun = create_tun(net.outer_device);
  disable_ipv6(net.outer_device);
  // The initial windows of the route the inner address took until now (mm-replay
  // --server-initial-window puts them on its namespace's default route): the connections from
  // here towards the command keep them.
  const InitialWindows windows = covering_route_windows(net.addresses.inner);
  configure_point_to_point(net.outer_device, net.addresses.outer, net.addresses.inner, kTxQueueLength);
  if (windows.any()) set_peer_route_windows(net.outer_device, net.addresses.outer, net.addresses.inner, windows);
  // The shell's NAT, and for mm-record the redirection of its connections to a listening socket
  // on the outer address (not loopback: a DNAT to a local address on the TUN needs no
  // route_localnet, and only this shell's packets reach it).
  // Its index stays its own while this process holds the device open.
  const unsigned ifindex = ::if_nametoindex(net.outer_device.c_str());
  if (ifindex == 0) throw SystemError("finding the index of " + net.outer_device);
  ShellEntry entry{net.outer_device, ifindex, net.addresses.inner, std::nullopt, std::nullopt};
  if (decided_mode != PrivilegeMode::Rootless) entry.owner = ::getuid();
  if (options.intercept) {
    net.intercepted = bound_socket(SOCK_STREAM, net.addresses.outer, 0);
    check_syscall("listen", ::listen(net.intercepted.get(), 4096));
    entry.intercept =
        Intercept{net.addresses.outer, ntohs(local_address(net.intercepted).sin_port), options.refuse_quic};
  }
  const std::vector<Ipv4> resolvers = loopback_nameservers(read_resolv_conf());
  if (!resolvers.empty()) {
    net.dns.nameservers = resolvers;
    net.dns.upstreams = options.dns_upstream ? std::vector<Ipv4>(resolvers.size(), *options.dns_upstream) : resolvers;
    net.dns.outer_relay = bound_socket(SOCK_DGRAM, net.addresses.outer, 0);
  }
  const uint16_t relay_port = net.dns.active() ? ntohs(local_address(net.dns.outer_relay).sin_port) : 0;

  // One helper, one small nftables transaction (the supervisor never talks to nftables). If the helper is killed
  // half-way (the user interrupted the set-up), the transaction was made or not; a clean-up helper removes what it
  // made at once (below), or, if that fails too, the next shell that takes this shell's addresses, or with the table
  // the last shell. (A rootless outside's redirection of MAHIMAHI_BASE in the same helper: a table of its own, gone
  // with the outside.)
  try {
    RootRequest open = RootRequest::forwarding(RootOp::OpenForwarding, entry, net.slot_claim.get());
    if (options.base_to_host)
      open.outside = RootRequest::OutsideRedirect{net.outer_device, net.addresses.outer, relay_port,
                                                  options.host_resolvers, options.host_dns_forward};
    run_root_helper(open, true, HelperWait::UntilExited);
  } catch (const SetupInterrupted&) {
    // The helper was killed: its transaction was made or not, and the namespace's lock file
    // stays if no shell of the namespace ends after this one (a nested shell stopped at its
    // start, as mm-cumulus-remote stops its spare loader, dies with its namespace). Undone now,
    // by a helper that is not interrupted and does not wait: if another shell holds the
    // namespace's lock (the one this set-up was waiting for, perhaps), that shell's end does it.
    try {
      run_root_helper(RootRequest::forwarding(RootOp::CloseForwardingUnlessBusy, entry, net.slot_claim.get()), false,
                      HelperWait::UntilExited);
    } catch (const std::exception&) {
      // What is left waits for the next shell, as above.
    }
    throw;
  }
  net.forwarding = ForwardingGrant(entry, net.slot_claim.get(), options.outermost);

  const size_t resolver_count = net.dns.nameservers.size();
  const std::optional<int> tcp_ecn = tcp_ecn_for_new_namespace(options.tcp_ecn);
  std::vector<FileDescriptor> made = in_new_namespace(net, [&] {
    std::vector<FileDescriptor> fds;
    if (net.offload) {
      // The outer device has the header, so this one must too (offloads are only a bonus).
      OffloadTun tun = create_offload_tun(kInnerDevice, true);
      if (!tun.fd.valid()) throw std::runtime_error("offloads: " + tun.refused);
      if (!tun.refused.empty()) net.offload_refused = tun.refused;
      fds.push_back(std::move(tun.fd));
    } else {
      fds.push_back(create_tun(kInnerDevice));
    }
    disable_ipv6(kInnerDevice);
    configure_point_to_point(kInnerDevice, net.addresses.inner, net.addresses.outer, kTxQueueLength);
    add_default_route(kInnerDevice, net.addresses.outer);
    set_command_tcp(options.command_tcp, net.addresses);
    allow_ping();
    if (tcp_ecn) set_tcp_ecn(*tcp_ecn);
    for (Ipv4 resolver : net.dns.nameservers) {
      fds.push_back(bound_socket(SOCK_DGRAM, resolver, 53));
      FileDescriptor tcp = bound_socket(SOCK_STREAM, resolver, 53);
      check_syscall("listen", ::listen(tcp.get(), 64));
      fds.push_back(std::move(tcp));
    }
    if (net.dns.active()) {
      FileDescriptor forward = bound_socket(SOCK_DGRAM, net.addresses.inner, 0);
      connect_socket(forward, local_address(net.dns.outer_relay));
      fds.push_back(std::move(forward));
    }
    return fds;
  });
  // [inner TUN, (udp, tcp) per resolver, forward]
  if (made.size() != 1 + 2 * resolver_count + (resolver_count ? 1 : 0))
    throw std::runtime_error("the shell's namespace was made with the wrong number of descriptors");
  net.inner_tun = std::move(made[0]);
  for (size_t i = 0; i < resolver_count; i++) {
    net.dns.inner_udp.push_back(std::move(made[1 + 2 * i]));
    net.dns.inner_tcp.push_back(std::move(made[2 + 2 * i]));
  }
  if (resolver_count) net.dns.inner_forward = std::move(made.back());
  if (net.dns.active()) connect_socket(net.dns.outer_relay, local_address(net.dns.inner_forward));
  return net;
}

bool is_congestion_control_name(std::string_view name) {
  return !name.empty() && name.size() < 16 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

ShellNetwork create_isolated_namespace(const ServerTcpSettings& tcp) {
  ShellNetwork net;
  const std::optional<int> tcp_ecn = tcp_ecn_for_new_namespace(tcp.ecn);
  in_new_namespace(net, [&] {
    write_existing_file("/proc/sys/net/ipv4/ip_unprivileged_port_start", "0");
    allow_ping();
    if (!tcp.congestion_control.empty()) set_congestion_control(tcp.congestion_control);
    if (tcp.slow_start_after_idle) {
      write_existing_file("/proc/sys/net/ipv4/tcp_slow_start_after_idle", *tcp.slow_start_after_idle ? "1" : "0");
    }
    if (tcp.initial_window) add_unreachable_default({.congestion = tcp.initial_window});
    if (tcp_ecn) set_tcp_ecn(*tcp_ecn);
    return std::vector<FileDescriptor>{};
  });
  return net;
}

void add_isolated_addresses(const ShellNetwork& net, const std::vector<Ipv4>& addresses) {
  check_isolated_addresses(addresses);
  if (addresses.empty()) return;
  if (net.command_userns.valid()) {
    // Rootless: the supervisor cannot come back from the shell's user namespace; a child goes.
    run_root_helper(RootRequest::isolated_addresses(net.command_userns.get(), net.inner_namespace.get(), addresses),
                    false, HelperWait::UntilExited);
    return;
  }
  FileDescriptor caller_namespace = open_own_namespace("net");
  enter_namespace(net.inner_namespace);
  try {
    add_addresses("lo", addresses);
  } catch (...) {
    enter_namespace(caller_namespace);
    throw;
  }
  enter_namespace(caller_namespace);
}
