#include "privileged.hh"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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
    net.inner_namespace = open_current_namespace();
  } catch (...) {
    enter_namespace(caller_namespace);
    throw;
  }
  enter_namespace(caller_namespace);

  net.nat = std::make_unique<MasqueradeTable>(net.outer_device, net.addresses.inner);
  return net;
}
