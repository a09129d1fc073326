// SPDX-License-Identifier: GPL-3.0-or-later
// Rootless shells: user namespaces of the user's own (see rootless.hh and docs/security.md).
#include "shell/rootless.hh"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "shell/netdevice.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {

const char* const kAlternatives = "; or install the shells setuid root (make install as root does) or run them as root";

// "" for a setting this kernel does not have.
std::string trimmed_setting(const std::string& path) { return read_setting(path).value_or(""); }

// The inode of a namespace file, which identifies the namespace.
ino_t namespace_inode(int fd) {
  struct stat st {};
  check_syscall("stat of a namespace", ::fstat(fd, &st));
  return st.st_ino;
}

// Explains a refused unshare(CLONE_NEWUSER) by the setting that refused it.
[[noreturn]] void user_namespace_refused(int error) {
  if (error == EINVAL) {
    // No such namespaces, or (a program's bug, or a sanitizer's runtime) more than one thread.
    if (::access("/proc/self/ns/user", F_OK) == 0)
      throw std::runtime_error("a user namespace cannot be made by a process that runs several threads");
    throw UserError(std::string("this kernel has no user namespaces (CONFIG_USER_NS)") + kAlternatives);
  }
  if (error == ENOSPC) {
    throw UserError(std::string("the kernel allows no more user namespaces here (user.max_user_namespaces reached, ") +
                    "or 32 levels of nesting: each rootless shell takes two); end some shells or nest fewer" +
                    kAlternatives);
  }
  throw UserError(std::string("the kernel refused to make a user namespace (") + std::strerror(error) +
                  "): a container's seccomp profile or a security module forbids it; run the container with user "
                  "namespaces allowed (docs/containers.md)" +
                  kAlternatives);
}

void write_map(const char* file, unsigned id) {
  write_existing_file(std::string("/proc/self/") + file, std::to_string(id) + " " + std::to_string(id) + " 1\n");
}

// A new user namespace in which the user's uid and gid (only those) are themselves.
void unshare_user_namespace(int flags, uid_t uid, gid_t gid) {
  if (::unshare(CLONE_NEWUSER | flags) < 0) user_namespace_refused(errno);
  write_existing_file("/proc/self/setgroups", "deny");  // an unprivileged gid_map needs it
  write_map("uid_map", uid);
  write_map("gid_map", gid);
}

constexpr char kMadeDescriptors = 'D', kFailed = 'E';

}  // namespace

bool has_effective_capability(int capability) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) < 0) return false;
  return (data[capability / 32].effective >> (capability % 32)) & 1;
}

void check_rootless_support(bool needs_tun, const RootlessSettingPaths& paths) {
  const std::string prefix = "cannot run rootless here (no setuid bit, not root): ";
  if (trimmed_setting(paths.max_user_namespaces) == "0") {
    throw UserError(prefix +
                    "user namespaces are switched off (user.max_user_namespaces = 0); an administrator can allow "
                    "them with sysctl user.max_user_namespaces=15000" +
                    kAlternatives);
  }
  if (trimmed_setting(paths.unprivileged_userns_clone) == "0") {
    throw UserError(prefix +
                    "user namespaces are switched off for ordinary users (kernel.unprivileged_userns_clone = 0); an "
                    "administrator can allow them with sysctl kernel.unprivileged_userns_clone=1" +
                    kAlternatives);
  }
  if (trimmed_setting(paths.apparmor_restrict) == "1") {
    throw UserError(prefix +
                    "AppArmor restricts user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1); an "
                    "administrator can allow them with sysctl kernel.apparmor_restrict_unprivileged_userns=0 or an "
                    "AppArmor profile granting \"userns,\" to the mm-* programs" +
                    kAlternatives);
  }
  // Each shell writes its own namespaces' settings there (forwarding of its devices, ping); a
  // container engine mounts it read-only unless told otherwise.
  struct statvfs fs {};
  if (::statvfs(paths.proc_sys.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY)) {
    throw UserError(prefix + paths.proc_sys +
                    " is mounted read-only (a container engine's default), and each shell sets its own "
                    "namespaces' settings there; run the container with it writable (podman: --security-opt "
                    "unmask=/proc/sys; docker: --security-opt systempaths=unconfined; docs/containers.md)" +
                    kAlternatives);
  }
  if (needs_tun && ::access(paths.tun.c_str(), R_OK | W_OK) != 0) {
    const int error = errno;
    struct stat st {};
    std::string mode;
    if (::stat(paths.tun.c_str(), &st) == 0) {
      char octal[8];
      std::snprintf(octal, sizeof octal, "%04o", st.st_mode & 07777);
      mode = std::string(" (mode ") + octal + ")";
    }
    if (error == ENOENT) {
      throw UserError(
          prefix + paths.tun +
          " does not exist; an administrator can load the tun module (modprobe tun); in a container, give it " +
          "the host's: --device /dev/net/tun" + kAlternatives);
    }
    throw UserError(prefix + "you may not open " + paths.tun + mode +
                    "; an administrator can make it usable by all (chmod 0666 " + paths.tun +
                    ", Debian's default; it lets users make TUN devices only in namespaces of their own)" +
                    kAlternatives);
  }
}

bool can_configure_current_network() {
  try {
    FileDescriptor net = open_own_namespace("net");
    FileDescriptor own_user = open_own_namespace("user");
    FileDescriptor owner(::ioctl(net.get(), NS_GET_USERNS));
    if (!owner.valid()) return false;
    if (namespace_inode(owner.get()) == namespace_inode(own_user.get())) return has_effective_capability(CAP_NET_ADMIN);
    FileDescriptor parent(::ioctl(owner.get(), NS_GET_PARENT));  // EPERM: an ancestor of ours
    if (!parent.valid() || namespace_inode(parent.get()) != namespace_inode(own_user.get())) return false;
    uid_t owner_uid = 0;
    if (::ioctl(owner.get(), NS_GET_OWNER_UID, &owner_uid) < 0) return false;
    return owner_uid == ::geteuid();
  } catch (const SystemError&) {
    return false;
  }
}

void enter_own_outside(uid_t uid, gid_t gid) {
  unshare_user_namespace(CLONE_NEWNET, uid, gid);
  bring_up("lo");
}

RootlessNamespaces create_rootless_namespaces(uid_t uid, gid_t gid,
                                              const std::function<std::vector<FileDescriptor>()>& configure) {
  int ends[2];
  check_syscall("socketpair", ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends));
  FileDescriptor ours(ends[0]), theirs(ends[1]);
  const pid_t child = ::fork();
  if (child < 0) throw SystemError("fork");
  if (child == 0) {
    int status = 0;
    try {
      ours.close();
      unshare_user_namespace(0, uid, gid);
      FileDescriptor command_userns = open_own_namespace("user");
      unshare_user_namespace(CLONE_NEWNET, uid, gid);
      bring_up("lo");
      std::vector<FileDescriptor> made = configure();
      FileDescriptor net = open_own_namespace("net");
      std::vector<int> fds{command_userns.get(), net.get()};
      for (const FileDescriptor& fd : made) fds.push_back(fd.get());
      send_descriptors(theirs.get(), fds);
    } catch (const std::exception& e) {
      const std::string report = std::string(1, kFailed) + e.what();
      (void)::send(theirs.get(), report.data(), std::min<size_t>(report.size(), 4000), MSG_NOSIGNAL);
      status = 1;
    }
    ::_exit(status);
  }
  theirs.close();
  char first = 0;
  ssize_t n;
  while ((n = ::recv(ours.get(), &first, 1, MSG_PEEK)) < 0 && errno == EINTR) {
  }
  RootlessNamespaces result;
  std::string failure;
  if (n == 1 && first == kMadeDescriptors) {
    try {
      std::vector<FileDescriptor> fds = receive_descriptors(ours.get());
      if (fds.size() < 2) throw std::runtime_error("too few descriptors");
      result.userns = std::move(fds[0]);
      result.net = std::move(fds[1]);
      for (size_t i = 2; i < fds.size(); i++) result.made.push_back(std::move(fds[i]));
    } catch (const std::exception& e) {
      failure = std::string("making the shell's namespaces: ") + e.what();
    }
  } else if (n == 1) {
    char text[4001];
    const ssize_t got = ::recv(ours.get(), text, sizeof text - 1, 0);
    failure = got > 1 ? std::string(text + 1, static_cast<size_t>(got - 1)) : "making the shell's namespaces failed";
  } else {
    failure = "the process making the shell's namespaces ended without a word";
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty()) throw UserError(failure);
  return result;
}

FileDescriptor open_own_namespace(const char* kind) {
  const std::string path = std::string("/proc/self/ns/") + kind;
  return FileDescriptor(check_syscall("opening " + path, ::open(path.c_str(), O_RDONLY | O_CLOEXEC)));
}

void enter_rootless_namespaces(int userns, int net) {
  check_syscall("entering the shell's user namespace", ::setns(userns, CLONE_NEWUSER));
  check_syscall("entering the shell's network namespace", ::setns(net, CLONE_NEWNET));
}

void drop_capabilities() {
  (void)::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2]{};
  check_syscall("capset", static_cast<int>(::syscall(SYS_capset, &header, none)));
  __user_cap_data_struct now[2]{};
  check_syscall("capget", static_cast<int>(::syscall(SYS_capget, &header, now)));
  for (const auto& word : now) {
    if (word.effective || word.permitted || word.inheritable)
      throw std::runtime_error("BUG: capabilities remain after dropping them");
  }
}

namespace {
// A directory of the user's: made 0700 if missing; nullopt unless it is a directory (not a
// symbolic link) that the user owns and nobody else can write.
bool private_directory_of(const std::string& directory, uid_t uid) {
  if (::mkdir(directory.c_str(), 0700) < 0 && errno != EEXIST) return false;
  struct stat st {};
  return ::lstat(directory.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

bool owned_directory(const std::string& path, uid_t uid) {
  struct stat st {};
  return !path.empty() && path[0] == '/' && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
         ::access(path.c_str(), W_OK | X_OK) == 0;
}
}  // namespace

std::string rootless_state_directory(const char* xdg_runtime_dir, const char* home, const char* tmpdir) {
  const uid_t uid = ::getuid();
  // Where only the user can make it first: the runtime directory, else the home directory (a
  // name in /tmp can be taken by another user before the user's first shell, and would block it).
  std::vector<std::string> candidates;
  if (xdg_runtime_dir && *xdg_runtime_dir == '/') {
    candidates.push_back(std::string(xdg_runtime_dir) + "/mahimahi");
  } else if (const std::string run_user = "/run/user/" + std::to_string(uid); owned_directory(run_user, uid)) {
    candidates.push_back(run_user + "/mahimahi");
  }
  if (home && owned_directory(home, uid)) {
    // One per machine: a home shared by several (NFS) must not share lock files named by the
    // namespaces' inode numbers, which each machine numbers on its own.
    char host[256] = {};
    (void)::gethostname(host, sizeof host - 1);
    std::string name;
    for (const char c : std::string_view(host))
      name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
    const std::string cache = std::string(home) + "/.cache";
    if (::mkdir(cache.c_str(), 0700) == 0 || errno == EEXIST)
      candidates.push_back(cache + "/mahimahi-" + (name.empty() || name[0] == '.' ? "host" : name));
  }
  const std::string in_tmp =
      std::string(tmpdir && *tmpdir == '/' ? tmpdir : "/tmp") + "/mahimahi-" + std::to_string(uid);
  candidates.push_back(in_tmp);
  for (const std::string& directory : candidates) {
    if (private_directory_of(directory, uid)) return directory;
  }
  throw UserError(candidates.front() +
                  (candidates.size() > 1 ? " (and the other places tried, last " + in_tmp + ")" : "") +
                  " must be a directory of yours that nobody else can write, for the lock files of your rootless "
                  "shells; set XDG_RUNTIME_DIR to a directory of yours (or HOME to your home directory), or remove " +
                  in_tmp + " if another user made it");
}

namespace {

constexpr char kWayOutGo = 'G', kWayOutReady = 'R', kWayOutFailed = 'E';
constexpr int kWayOutTxQueueLength = 10000;  // as the shells' own devices (privileged.cc)
constexpr int kWayOutDeadlineMs = 10'000;

// The monitor: starts pasta when told to, says when pasta has configured the supervisor's
// namespaces, and ends it when the supervisor closes the control socket or is gone.
[[noreturn]] void run_way_out_monitor(const std::string& program, const std::string& pasta, const std::string& pid_file,
                                      pid_t target, bool forward_dns, int control) {
  int status = 0;
  try {
    (void)::setsid();  // no terminal signals: the supervisor says when to end
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    char go = 0;
    if (::read(control, &go, 1) != 1 || go != kWayOutGo) ::_exit(0);  // the shell ended before
    ::unlink(pid_file.c_str());
    // pasta's standard error comes here: shown if it fails to start (without its complaints
    // that no syslog listens), read and dropped once it runs.
    int words_pipe[2];
    check_syscall("pipe2", ::pipe2(words_pipe, O_CLOEXEC | O_NONBLOCK));
    FileDescriptor words(words_pipe[0]), words_end(words_pipe[1]);
    const pid_t child = ::fork();
    if (child < 0) throw SystemError("fork");
    if (child == 0) {
      ::close(control);
      ::dup2(words_end.get(), STDERR_FILENO);
      ::fcntl(STDERR_FILENO, F_SETFL, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const std::string target_pid = std::to_string(target);
      // Nothing of the shell's published on the host (-t, -u none: no port of the host's leads
      // into the namespace); each port the host listens on, on the outside's loopback (-T, -U
      // auto: where MAHIMAHI_BASE leads, add_outside_base_redirect); the gateway is the real
      // gateway (pasta would otherwise send what goes to it to the host's loopback).
      std::vector<std::string> args{pasta,  "--config-net", "--quiet", "--foreground", "--ipv4-only",
                                    "-t",   "none",         "-u",      "none",         "-T",
                                    "auto", "-U",           "auto",    "--no-dhcp",    "--no-map-gw"};
      if (forward_dns) {
        args.push_back("--dns-forward");
        args.push_back(kWayOutResolver);
      }
      args.insert(args.end(), {"--pid", pid_file, target_pid});
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(pasta.c_str(), argv.data());
      std::cerr << program << ": cannot run " << pasta << ": " << std::strerror(errno) << std::endl;
      ::_exit(127);
    }
    words_end.close();
    std::string said;
    auto read_words = [&] {
      char buffer[1024];
      ssize_t n;
      while ((n = ::read(words.get(), buffer, sizeof buffer)) > 0) {
        if (said.size() < 4096) said.append(buffer, static_cast<size_t>(n));
      }
    };
    auto words_of_pasta = [&] {
      read_words();
      std::string kept;
      size_t start = 0;
      while (start < said.size()) {
        size_t end = said.find('\n', start);
        if (end == std::string::npos) end = said.size();
        const std::string line = said.substr(start, end - start);
        if (!line.empty() && line.find("to syslog") == std::string::npos) kept += (kept.empty() ? "" : "; ") + line;
        start = end + 1;
      }
      return kept.empty() ? std::string() : " (it said: " + printable(kept, 600) + ")";
    };
    FileDescriptor pidfd(open_pidfd(child));
    auto say = [control](const std::string& message) {
      (void)::send(control, message.data(), message.size(), MSG_NOSIGNAL);
    };
    auto ended = [&](int how) {
      return "pasta, the shell's way out, " + (WIFEXITED(how)
                                                   ? "exited with status " + std::to_string(WEXITSTATUS(how))
                                                   : std::string("was killed by SIG") + sigabbrev_np(WTERMSIG(how)));
    };
    // Ready once pasta has written its pid file (it does so after configuring the namespace).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWayOutDeadlineMs);
    bool ready = false;
    while (!ready) {
      int how = 0;
      if (::waitpid(child, &how, WNOHANG) == child) {
        say(std::string(1, kWayOutFailed) + ended(how) + " while starting" + words_of_pasta());
        ::_exit(1);
      }
      struct stat st {};
      ready = ::stat(pid_file.c_str(), &st) == 0 && st.st_size > 0;
      if (!ready && std::chrono::steady_clock::now() >= deadline) {
        ::kill(child, SIGKILL);
        say(std::string(1, kWayOutFailed) + "pasta, the shell's way out, did not configure the namespace within " +
            std::to_string(kWayOutDeadlineMs / 1000) + " s" + words_of_pasta());
        ::_exit(1);
      }
      if (!ready) {
        const timespec pause{0, 1'000'000};
        ::nanosleep(&pause, nullptr);
      }
    }
    ::unlink(pid_file.c_str());
    say(std::string(1, kWayOutReady));
    // Until the supervisor closes its end (or is gone), or pasta ends on its own.
    for (;;) {
      pollfd fds[3] = {{control, POLLIN, 0}, {words.get(), POLLIN, 0}, {pidfd.get(), POLLIN, 0}};
      if (::poll(fds, pidfd.valid() ? 3 : 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents) {
        said.clear();
        read_words();
        if (fds[1].revents & POLLHUP) words.close();  // (poll ignores a negative descriptor)
      }
      if (fds[2].revents) {
        int how = 0;
        ::waitpid(child, &how, 0);
        std::cerr << program << ": " << ended(how) << "; the shell has no way out from now on" << std::endl;
        ::_exit(1);
      }
      if (fds[0].revents) break;
    }
    // SIGKILL: pasta keeps nothing that outlives it (its device goes with the outside). Waited
    // for until it is ending, not until it is gone: the kernel then removes its device and
    // sockets on its own (RCU grace periods, 40 ms here), as it does a ferry's.
    ::kill(child, SIGKILL);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (::waitpid(child, nullptr, WNOHANG) == 0 && !process_is_ending(child) &&
           std::chrono::steady_clock::now() < until) {
      const timespec pause{0, 200'000};
      ::nanosleep(&pause, nullptr);
    }
  } catch (const std::exception& e) {
    std::cerr << program << ": the way out: " << e.what() << std::endl;
    status = 1;
  }
  ::_exit(status);
}

}  // namespace

WayOut::WayOut(const std::string& program, const std::string& pasta, const std::string& state_directory,
               bool forward_dns) {
  int ends[2];
  check_syscall("socketpair", ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends));
  FileDescriptor ours(ends[0]), theirs(ends[1]);
  const pid_t supervisor = ::getpid();
  const std::string pid_file = state_directory + "/pasta-" + std::to_string(supervisor) + ".pid";
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork");
  if (pid == 0) {
    ours.close();
    run_way_out_monitor(program, pasta, pid_file, supervisor, forward_dns, theirs.get());
  }
  monitor_ = pid;
  control_ = std::move(ours);
}

WayOut::WayOut(WayOut&& other) noexcept : monitor_(other.monitor_), control_(std::move(other.control_)) {
  other.monitor_ = -1;
}

WayOut& WayOut::operator=(WayOut&& other) noexcept {
  if (this != &other) {
    end();
    monitor_ = other.monitor_;
    control_ = std::move(other.control_);
    other.monitor_ = -1;
  }
  return *this;
}

WayOut::~WayOut() { end(); }

void WayOut::start() {
  const char go = kWayOutGo;
  check_syscall("starting the way out", static_cast<int>(::send(control_.get(), &go, 1, MSG_NOSIGNAL)));
  char reply[2048];
  ssize_t n;
  while ((n = ::recv(control_.get(), reply, sizeof reply, 0)) < 0 && errno == EINTR) {
  }
  if (n >= 1 && reply[0] == kWayOutReady) {
    // pasta leaves its device's transmit queue at the kernel's 1000 packets, fewer than the
    // window it advertises at 1500 bytes a packet: the bursts of an upload overflowed it (0.3
    // Gbit/s up through a shell here). The outside is ours, its devices pasta's only.
    if (struct if_nameindex* names = ::if_nameindex()) {
      for (const struct if_nameindex* i = names; i->if_index != 0; i++) {
        if (std::string_view(i->if_name) != "lo") set_tx_queue_length(i->if_name, kWayOutTxQueueLength);
      }
      ::if_freenameindex(names);
    }
    return;
  }
  const std::string why =
      n > 1 ? std::string(reply + 1, static_cast<size_t>(n - 1)) : "pasta, the shell's way out, failed";
  throw UserError(why + "; set " + kWayOutVariable + "=none for a shell without a way out");
}

void WayOut::end() noexcept {
  if (monitor_ < 0) return;
  control_.close();
  while (::waitpid(monitor_, nullptr, 0) < 0 && errno == EINTR) {
  }
  monitor_ = -1;
}
