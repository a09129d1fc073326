// SPDX-License-Identifier: GPL-3.0-or-later
// mm-eth's root acts: an interface taken into the shell's namespace, or a TAP made there, its
// devices served by dnsmasq, and all of it put back (attached_device.hh).
#include "shell/attached_device.hh"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/if_tun.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>
#include <poll.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>

#include "shell/forwarding.hh"
#include "shell/interface_state.hh"
#include "shell/nat.hh"
#include "shell/netdevice.hh"
#include "shell/nftables.hh"
#include "shell/rootless.hh"
#include "shell/route_table.hh"
#include "util/clock.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

namespace {
constexpr const char* kEthTable = "mahimahi_eth";
constexpr Nanos kDnsmasqStartDeadline = 10 * kNanosPerSec;
constexpr Nanos kDnsmasqStopGrace = 2 * kNanosPerSec;

std::string state_path(const std::string& interface) {
  return std::string(kStateDirectory) + "/eth-" + interface + ".state";
}

// ---- inside the shell's namespace (the calling thread is there)

void add_interface_address(unsigned index, Ipv4 address, unsigned prefix) {
  ifaddrmsg message{};
  message.ifa_family = AF_INET;
  message.ifa_prefixlen = static_cast<unsigned char>(prefix);
  message.ifa_scope = RT_SCOPE_UNIVERSE;
  message.ifa_index = index;
  NetlinkRequest request(RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, message);
  const in_addr a = socket_address(address, 0).sin_addr;
  const in_addr broadcast =
      socket_address(Ipv4{address.value | Ipv4Net::of(address, static_cast<int>(prefix)).host_mask()}, 0).sin_addr;
  request.add(IFA_LOCAL, &a, sizeof a);
  request.add(IFA_ADDRESS, &a, sizeof a);
  request.add(IFA_BROADCAST, &broadcast, sizeof broadcast);
  request.execute("giving the interface its address");
}

// The devices' packets leave with the shell's address: a table of the namespace's own.
void add_device_masquerade(const Ipv4Net& subnet) {
  nft::Transaction t(kEthTable);
  t.create_table();
  t.add_base_chain("postrouting", "nat", NF_INET_POST_ROUTING, 100);
  nft::Rule rule;
  const uint32_t mask = htonl(~subnet.host_mask());
  const in_addr network = socket_address(subnet.base, 0).sin_addr;
  nft::Bytes device;
  device.ifname(kInnerDevice);
  rule.payload(NFT_PAYLOAD_NETWORK_HEADER, 12, 4, nft::kReg1)
      .bitwise_and(nft::kReg1, mask)
      .equals(nft::kReg1, &network, 4)
      .meta(NFT_META_OIFNAME, nft::kReg2)
      .equals(nft::kReg2, device.data, device.size)
      .masquerade();
  t.add_rule("postrouting", rule);
  if (const int error = t.commit(); error != 0) throw SystemError("adding the devices' masquerade", error);
}

// A persistent TAP owned by the user (the command attaches to it by name).
void create_user_tap(const std::string& name, uid_t uid, gid_t gid) {
  FileDescriptor fd(check_syscall("open /dev/net/tun", ::open("/dev/net/tun", O_RDWR | O_CLOEXEC)));
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  if (::ioctl(fd.get(), TUNSETIFF, &ifr) < 0) throw SystemError("creating the TAP " + name);
  if (::ioctl(fd.get(), TUNSETOWNER, static_cast<unsigned long>(uid)) < 0 ||
      ::ioctl(fd.get(), TUNSETGROUP, static_cast<unsigned long>(gid)) < 0 || ::ioctl(fd.get(), TUNSETPERSIST, 1) < 0)
    throw SystemError("giving the TAP " + name + " to its user");
}

std::string dnsmasq_path() {
  for (const char* path : {"/usr/sbin/dnsmasq", "/sbin/dnsmasq"})
    if (::access(path, X_OK) == 0) return path;
  throw UserError("mm-eth serves the devices' DHCP with dnsmasq, which is not installed (apt install dnsmasq-base)");
}

std::vector<std::string> dnsmasq_arguments(const std::string& interface, const Ipv4Net& subnet,
                                           const std::string& directory, const std::vector<Ipv4>& resolvers,
                                           bool drop_to_nobody) {
  const Ipv4 gateway{subnet.base.value + 1};
  const uint32_t size = subnet.host_mask() + 1;
  const Ipv4 first{subnet.base.value + std::min<uint32_t>(10, size / 4)}, last{subnet.base.value + size - 2};
  const Ipv4 mask{~subnet.host_mask()};
  std::vector<std::string> args = {"dnsmasq",
                                   "--keep-in-foreground",
                                   "--conf-file=/dev/null",
                                   "--no-hosts",
                                   "--no-resolv",
                                   "--bind-interfaces",
                                   "--interface=" + interface,
                                   "--listen-address=" + gateway.str(),
                                   "--dhcp-authoritative",
                                   "--dhcp-range=" + first.str() + "," + last.str() + "," + mask.str() + ",1h",
                                   "--dhcp-option=option:router," + gateway.str(),
                                   "--dhcp-option=option:dns-server," + gateway.str(),
                                   "--dhcp-leasefile=" + directory + "/leases",
                                   "--pid-file=" + directory + "/pid",
                                   "--log-facility=" + directory + "/log",
                                   "--log-dhcp"};
  for (Ipv4 r : resolvers) args.push_back("--server=" + r.str());
  if (resolvers.empty()) args.push_back("--local=/#/");  // no resolver: unknown names, not REFUSED
  if (drop_to_nobody) {
    args.push_back("--user=nobody");
    args.push_back("--group=nogroup");
  }
  return args;
}

// Whether `pid`'s network namespace has a UDP socket bound to port 67 (dnsmasq is serving).
bool serving_dhcp(pid_t pid) {
  FileDescriptor fd(::open(("/proc/" + std::to_string(pid) + "/net/udp").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0 && text.size() < (1 << 20);)
    text.append(buffer, static_cast<size_t>(n));
  return text.find(":0043 ") != std::string::npos;
}

void stop_dnsmasq(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  const Nanos deadline = monotonic_now() + kDnsmasqStopGrace;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return;
    if (monotonic_now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return;
    }
    const timespec pause{0, 10'000'000};
    ::nanosleep(&pause, nullptr);
  }
}

}  // namespace

bool usable_device_subnet(const Ipv4Net& subnet) {
  if (subnet.prefix < 16 || subnet.prefix > 29) return false;
  for (const char* range : {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"}) {
    const Ipv4Net r = *Ipv4Net::parse(range);
    if (r.contains(subnet.base) && subnet.prefix >= r.prefix) return true;
  }
  return false;
}

AttachedDevice::AttachedDevice(AttachedDevice&& other) noexcept
    : what_(std::move(other.what_)),
      source_namespace_(std::move(other.source_namespace_)),
      shell_namespace_(std::move(other.shell_namespace_)),
      saved_(std::move(other.saved_)),
      directory_(std::move(other.directory_)),
      dnsmasq_(other.dnsmasq_),
      attached_(other.attached_),
      note_(std::move(other.note_)) {
  other.attached_ = false;
  other.dnsmasq_ = -1;
}

AttachedDevice::~AttachedDevice() { detach(); }

void AttachedDevice::close_in_child() {
  source_namespace_.close();
  shell_namespace_.close();
  note_.close();
}

std::vector<std::string> AttachedDevice::leases() const {
  std::vector<std::string> out;
  FileDescriptor fd(::open((directory_ + "/leases").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return out;
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd.get(), buffer, sizeof buffer)) > 0 && text.size() < (1 << 20);)
    text.append(buffer, static_cast<size_t>(n));
  std::string_view rest(text);
  while (!rest.empty()) {
    // "EXPIRY MAC ADDRESS NAME CLIENT-ID"
    const std::vector<std::string_view> w = blank_separated_words(next_line(rest));
    if (w.size() >= 4) out.push_back(printable(w[2], 40) + " " + printable(w[1], 40) + " " + printable(w[3], 64));
  }
  return out;
}

namespace {
// Leaves this process CAP_NET_ADMIN, CAP_NET_RAW and CAP_NET_BIND_SERVICE only (of the user
// namespace it is in: a rootless shell's own, or the machine's) and keeps them across the exec of
// a program run as an ordinary uid: dnsmasq serves DHCP with them.
void keep_network_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  for (int cap : {CAP_NET_ADMIN, CAP_NET_RAW, CAP_NET_BIND_SERVICE}) {
    const uint32_t bit = 1u << (cap % 32);
    data[cap / 32].permitted |= bit;
    data[cap / 32].effective |= bit;
    data[cap / 32].inheritable |= bit;
  }
  check_syscall("capset", static_cast<int>(::syscall(SYS_capset, &header, data)));
  for (int cap : {CAP_NET_ADMIN, CAP_NET_RAW, CAP_NET_BIND_SERVICE})
    check_syscall("prctl(PR_CAP_AMBIENT_RAISE)", ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0));
}

// nobody's uid and group (the account dnsmasq serves a TAP as).
std::pair<uid_t, gid_t> nobody_account() {
  const passwd* pw = ::getpwnam("nobody");
  if (!pw) throw UserError("this machine has no user \"nobody\" for dnsmasq to run as (the base system has one)");
  return {pw->pw_uid, pw->pw_gid};
}

std::string read_small_file(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0 && text.size() < (1 << 20);)
    text.append(buffer, static_cast<size_t>(n));
  return text;
}

void remove_directory(const std::string& directory) {
  if (directory.empty()) return;
  for (const char* file : {"leases", "pid", "log"}) ::unlink((directory + "/" + file).c_str());
  ::rmdir(directory.c_str());
}

// Removes the dnsmasq directories (eth-PID) of shells that were killed before their clean-up:
// those whose PID is no mm-eth any more. One whose PID came to another mm-eth waits for that
// one's end. Bounded, like the lock files' sweep.
void remove_abandoned_directories(const std::string& state) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(state.c_str()), ::closedir);
  if (!dir) return;
  std::vector<std::string> abandoned;
  size_t seen = 0;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    if (name.rfind("eth-", 0) != 0 || name.size() > 14 || ++seen > 10000) continue;
    const std::string_view digits = name.substr(4);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) continue;
    const std::string path = state + "/" + std::string(name);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    FileDescriptor comm(::open(("/proc/" + std::string(digits) + "/comm").c_str(), O_RDONLY | O_CLOEXEC));
    if (comm.valid() && read_small_file(comm.get()) == "mm-eth\n") continue;
    abandoned.push_back(path);
  }
  for (const std::string& path : abandoned) remove_directory(path);
}

FileDescriptor duplicate(const FileDescriptor& fd) {
  return FileDescriptor(check_syscall("dup", ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0)));
}

}  // namespace

void check_attachment(const DeviceAttachment& a, const UserIdentity& user, const AdministratorConfig& config) {
  if (a.interface.empty()) return;
  if (user.mode == PrivilegeMode::Rootless)
    throw UserError("taking the interface " + a.interface +
                    " is root's act, and this mm-eth runs rootless: install it setuid root (or run it as root), or "
                    "give the devices a TAP of your own instead (--tap NAME)");
  if (user.uid != 0 &&
      std::find(config.interfaces.begin(), config.interfaces.end(), a.interface) == config.interfaces.end())
    throw UserError(a.interface +
                    " is not among the interfaces the administrator lets users' shells take: it "
                    "needs a line \"allow-interface " +
                    a.interface + "\" in " + kAdministratorConfigPath);
  if (a.interface == "lo" || a.interface == kInnerDevice || is_shell_device_name(a.interface))
    throw UserError(a.interface +
                    " is not a device's interface (it is the loopback or a shell's own); give the "
                    "interface the device is plugged into (ip link lists them)");
}

AttachedDevice AttachedDevice::attach(const DeviceAttachment& a, const ShellNetwork& net, const UserIdentity& user,
                                      const AdministratorConfig& config, const std::vector<Ipv4>& resolvers) {
  AttachedDevice d;
  d.what_ = a;
  const bool rootless = user.mode == PrivilegeMode::Rootless;
  const std::string device = a.interface.empty() ? a.tap : a.interface;
  check_attachment(a, user, config);
  if (!a.interface.empty()) {
    ::mkdir(kStateDirectory, 0755);
    recover_abandoned_interface(a.interface);
    d.note_ = FileDescriptor(::open(state_path(a.interface).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!d.note_.valid()) throw SystemError("creating " + state_path(a.interface));
    if (::flock(d.note_.get(), LOCK_EX | LOCK_NB) != 0)
      throw UserError(a.interface + " is already in another mm-eth shell; end that one first");
    unsigned index = 0;
    for (FileDescriptor& ns : ancestor_namespaces()) {
      {
        InNamespace in(ns);
        index = ::if_nametoindex(a.interface.c_str());
      }
      if (index) {
        d.source_namespace_ = std::move(ns);
        break;
      }
    }
    if (!index) {
      ::unlink(state_path(a.interface).c_str());
      throw UserError("there is no interface " + a.interface +
                      " (ip link lists them; a phone's USB tethering interface appears once the phone shares its "
                      "connection, a USB Ethernet adapter once it is plugged in)");
    }
    d.shell_namespace_ = duplicate(net.inner_namespace);
    {
      InNamespace in(d.source_namespace_);
      if (carries_default_route(index)) {
        ::unlink(state_path(a.interface).c_str());
        throw UserError(a.interface +
                        " carries this machine's default route: mm-eth never takes it (the machine "
                        "would lose its way out); plug the device into another interface");
      }
      const InterfaceState state = capture_state(index);
      d.saved_ = state_text(a.interface, state, inode_of(d.source_namespace_), inode_of(d.shell_namespace_));
      check_syscall("ftruncate", ::ftruncate(d.note_.get(), 0));
      write_all(d.note_.get(), d.saved_);
      move_interface(index, d.shell_namespace_, "moving " + a.interface + " into the shell's namespace");
      d.attached_ = true;
    }
  } else {
    d.shell_namespace_ = duplicate(net.inner_namespace);
  }

  // dnsmasq, and how it ends if the supervisor is killed (SIGKILL, where no clean-up runs):
  //  - for an interface, dnsmasq starts as root and makes itself nobody: its namespace then
  //    outlives the supervisor, holding the interface (a veth's far end, an interface of another
  //    namespace), until the next mm-eth for it puts it back where and as it was (the note);
  //  - for a TAP, which has nothing to give back, it starts as nobody (rootless: as the user)
  //    with the network capabilities it serves with, and the supervisor's death ends it
  //    (a parent-death signal survives its exec only if no credential changes after it is set).
  // Its files, in the shell's state directory: root's (it opens them before it becomes nobody),
  // or else its own account's.
  const bool tied_to_supervisor = !a.tap.empty();
  std::pair<uid_t, gid_t> nobody{0, 0};
  if (tied_to_supervisor && !rootless) nobody = nobody_account();
  const pid_t supervisor = ::getpid();
  const std::string state = state_directory();
  if (!rootless) ::mkdir(kStateDirectory, 0755);
  remove_abandoned_directories(state);
  d.directory_ = state + "/eth-" + std::to_string(supervisor);
  remove_directory(d.directory_);
  check_syscall("mkdir " + d.directory_, ::mkdir(d.directory_.c_str(), 0700));
  if (tied_to_supervisor && !rootless)
    check_syscall("chown " + d.directory_, ::chown(d.directory_.c_str(), nobody.first, nobody.second));
  if (d.note_.valid()) write_all(d.note_.get(), "directory " + d.directory_ + "\n");
  const std::vector<std::string> args =
      dnsmasq_arguments(device, a.subnet, d.directory_, resolvers, !rootless && !tied_to_supervisor);
  const std::string program = dnsmasq_path();

  // A child goes into the shell's namespace, sets the device up there and becomes dnsmasq; it
  // says what went wrong on the pipe, which closes at its exec.
  int report[2];
  check_syscall("pipe2", ::pipe2(report, O_CLOEXEC));
  FileDescriptor report_read(report[0]), report_write(report[1]);
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork");
  if (pid == 0) {
    report_read.close();
    try {
      if (rootless) {
        enter_rootless_namespaces(net.command_userns.get(), net.inner_namespace.get());
      } else {
        enter_namespace(net.inner_namespace);
      }
      if (!a.tap.empty()) create_user_tap(a.tap, user.uid, user.gid);
      const unsigned index = ::if_nametoindex(device.c_str());
      if (index == 0) throw SystemError("no " + device + " in the shell's namespace");
      bring_up(device);
      add_interface_address(index, Ipv4{a.subnet.base.value + 1}, a.subnet.prefix);
      write_existing_file("/proc/sys/net/ipv4/conf/" + device + "/forwarding", "1");
      write_existing_file(std::string("/proc/sys/net/ipv4/conf/") + kInnerDevice + "/forwarding", "1");
      add_device_masquerade(a.subnet);
      if (rootless) {
        keep_network_capabilities();
      } else if (tied_to_supervisor) {
        check_syscall("setgroups", ::setgroups(0, nullptr));
        check_syscall("setresgid", ::setresgid(nobody.second, nobody.second, nobody.second));
        check_syscall("prctl(PR_SET_KEEPCAPS)", ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
        check_syscall("setresuid", ::setresuid(nobody.first, nobody.first, nobody.first));
        keep_network_capabilities();
      } else {
        // Wholly root (the supervisor keeps the caller's real uid), with no group of the caller's:
        // dnsmasq then gives root up for nobody once its sockets and files are open (it keeps
        // root, and the caller could signal it, if it finds itself started by another uid).
        check_syscall("setgroups", ::setgroups(0, nullptr));
        check_syscall("setresgid", ::setresgid(0, 0, 0));
        check_syscall("setresuid", ::setresuid(0, 0, 0));
      }
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(s, SIG_DFL);
      if (tied_to_supervisor) {
        check_syscall("prctl(PR_SET_PDEATHSIG)", ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0));
        if (::getppid() != supervisor) ::_exit(1);  // it died before the signal was set
      }
      std::vector<char*> argv;
      for (const std::string& w : args) argv.push_back(const_cast<char*>(w.c_str()));
      argv.push_back(nullptr);
      ::execv(program.c_str(), argv.data());
      throw SystemError("running " + program);
    } catch (const std::exception& e) {
      (void)!::write(report_write.get(), e.what(), std::strlen(e.what()));
    }
    ::_exit(1);
  }
  report_write.close();
  const std::string failure = read_small_file(report_read.get());
  d.dnsmasq_ = pid;
  if (!failure.empty()) throw UserError("setting up " + device + " in the shell's namespace: " + failure);
  if (d.note_.valid()) write_all(d.note_.get(), "dnsmasq " + std::to_string(pid) + "\n");
  // Until it serves, or says why not (on standard error) and ends.
  const Nanos deadline = monotonic_now() + kDnsmasqStartDeadline;
  while (!serving_dhcp(pid)) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      d.dnsmasq_ = -1;
      throw UserError("dnsmasq, which gives the devices their addresses, ended as it started (its words above)");
    }
    if (monotonic_now() > deadline) throw UserError("dnsmasq did not start serving DHCP on " + device + " within 10 s");
    const timespec pause{0, 5'000'000};
    ::nanosleep(&pause, nullptr);
  }
  return d;
}

void AttachedDevice::detach() noexcept {
  stop_dnsmasq(dnsmasq_);
  dnsmasq_ = -1;
  bool put_back = true;
  if (attached_) {
    try {
      {
        InNamespace in(shell_namespace_);
        const unsigned index = ::if_nametoindex(what_.interface.c_str());
        if (index != 0) {
          set_link(index, std::nullopt, false, "bringing " + what_.interface + " down");
          move_interface(index, source_namespace_, "moving " + what_.interface + " back");
        }
      }
      InNamespace in(source_namespace_);
      if (const std::optional<SavedNote> note = parse_note(saved_)) restore_state(what_.interface, note->state);
    } catch (const std::exception& e) {
      std::cerr << "mm-eth: putting " << what_.interface << " back: " << e.what() << std::endl;
      put_back = false;
    }
    attached_ = false;
  }
  remove_directory(directory_);
  directory_.clear();
  if (note_.valid() && put_back) ::unlink(state_path(what_.interface).c_str());
  note_.close();
  shell_namespace_.close();
  source_namespace_.close();
}

void recover_abandoned_interface(const std::string& interface) {
  const std::string path = state_path(interface);
  FileDescriptor fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) return;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return;  // a live shell's: attach says so
  const std::string text = read_small_file(fd.get());
  const std::optional<SavedNote> note = parse_note(text);
  if (!note || note->interface != interface || note->source == 0) {
    ::unlink(path.c_str());
    return;
  }
  // The dead shell's namespace, if dnsmasq still holds it (its address the note's).
  FileDescriptor shell_ns;
  if (note->dnsmasq > 0) {
    FileDescriptor ns(::open(("/proc/" + std::to_string(note->dnsmasq) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
    if (ns.valid() && inode_of(ns) == note->shell) {
      shell_ns = std::move(ns);
      ::kill(note->dnsmasq, SIGKILL);
    }
  }
  FileDescriptor source;
  for (FileDescriptor& ns : ancestor_namespaces())
    if (inode_of(ns) == note->source) source = std::move(ns);
  if (!source.valid()) {
    std::cerr << "mm-eth: " << interface << " was left by a shell that was killed, in a namespace that is not this "
              << "one's; start mm-eth from where it was started to put " << interface << " back" << std::endl;
    return;
  }
  try {
    if (shell_ns.valid()) {
      InNamespace in(shell_ns);
      if (const unsigned index = ::if_nametoindex(interface.c_str()))
        move_interface(index, source, "moving " + interface + " back");
    }
    InNamespace in(source);
    restore_state(interface, note->state);
  } catch (const std::exception& e) {
    std::cerr << "mm-eth: putting back " << interface << ", left by a shell that was killed: " << e.what() << std::endl;
    return;
  }
  for (std::string_view rest(text); !rest.empty();) {
    const std::string_view line = next_line(rest);
    const std::string prefix = std::string(kStateDirectory) + "/eth-";
    if (line.starts_with("directory " + prefix)) {
      const std::string directory(line.substr(10));
      if (directory.find("/..") == std::string::npos) remove_directory(directory);
    }
  }
  std::cerr << "mm-eth: put " << interface << " back as it was, left by a shell that was killed" << std::endl;
  ::unlink(path.c_str());
}
