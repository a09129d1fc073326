// SPDX-License-Identifier: GPL-3.0-or-later
// Rootless shells: user namespaces of the user's own (see rootless.hh and docs/security.md).
#include "shell/rootless.hh"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "shell/netdevice.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {

const char* const kAlternatives = "; or install the shells setuid root (make install as root does) or run them as root";

std::string trimmed_setting(const std::string& path) {
  try {
    std::string text = read_small_file(path);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
  } catch (const SystemError&) {
    return "";  // this kernel has no such setting
  }
}

// The inode of a namespace file, which identifies the namespace.
ino_t namespace_inode(int fd) {
  struct stat st {};
  check_syscall("stat of a namespace", ::fstat(fd, &st));
  return st.st_ino;
}

FileDescriptor open_own_namespace(const char* kind) {
  const std::string path = std::string("/proc/self/ns/") + kind;
  return FileDescriptor(check_syscall("opening " + path, ::open(path.c_str(), O_RDONLY | O_CLOEXEC)));
}

bool has_effective_capability(int capability) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) < 0) return false;
  return (data[capability / 32].effective >> (capability % 32)) & 1;
}

// Explains a refused unshare(CLONE_NEWUSER) by the setting that refused it.
[[noreturn]] void user_namespace_refused(const std::string& program, int error) {
  if (error == EINVAL)
    throw UserError(program + ": this kernel has no user namespaces (CONFIG_USER_NS)" + kAlternatives);
  if (error == ENOSPC) {
    throw UserError(program +
                    ": the kernel allows no more user namespaces here (user.max_user_namespaces reached, or 32 "
                    "levels of nesting: each rootless shell takes two); end some shells or nest fewer" +
                    kAlternatives);
  }
  throw UserError(program + ": the kernel refused to make a user namespace (" + std::strerror(error) +
                  "): a container's seccomp profile or a security module forbids it; run the container with user "
                  "namespaces allowed (docs/containers.md)" +
                  kAlternatives);
}

void write_map(const char* file, unsigned id) {
  write_existing_file(std::string("/proc/self/") + file, std::to_string(id) + " " + std::to_string(id) + " 1\n");
}

// A new user namespace in which the user's uid and gid (only those) are themselves.
void unshare_user_namespace(int flags, uid_t uid, gid_t gid, const std::string& program) {
  if (::unshare(CLONE_NEWUSER | flags) < 0) user_namespace_refused(program, errno);
  write_existing_file("/proc/self/setgroups", "deny");  // an unprivileged gid_map needs it
  write_map("uid_map", uid);
  write_map("gid_map", gid);
}

constexpr char kMadeDescriptors = 'D', kFailed = 'E';

}  // namespace

void check_rootless_support(const std::string& program, bool needs_tun, const RootlessSettingPaths& paths) {
  const std::string prefix = program + " cannot run without root's rights here: ";
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
      throw UserError(prefix + paths.tun + " does not exist; an administrator can load the tun module (modprobe tun)" +
                      kAlternatives);
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

void enter_own_outside(uid_t uid, gid_t gid, const std::string& program) {
  unshare_user_namespace(CLONE_NEWNET, uid, gid, program);
  bring_up("lo");
}

RootlessNamespaces create_rootless_namespaces(uid_t uid, gid_t gid, const std::string& program,
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
      unshare_user_namespace(0, uid, gid, program);
      FileDescriptor command_userns = open_own_namespace("user");
      unshare_user_namespace(CLONE_NEWNET, uid, gid, program);
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

void enter_rootless_namespaces(const FileDescriptor& userns, const FileDescriptor& net) {
  check_syscall("entering the shell's user namespace", ::setns(userns.get(), CLONE_NEWUSER));
  check_syscall("entering the shell's network namespace", ::setns(net.get(), CLONE_NEWNET));
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

std::string rootless_state_directory(const char* xdg_runtime_dir, const char* tmpdir) {
  const uid_t uid = ::getuid();
  std::string base;
  struct stat st {};
  if (xdg_runtime_dir && *xdg_runtime_dir == '/') {
    base = xdg_runtime_dir;
  } else {
    const std::string run_user = "/run/user/" + std::to_string(uid);
    if (::stat(run_user.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
        ::access(run_user.c_str(), W_OK) == 0)
      base = run_user;
  }
  const std::string directory =
      base.empty() ? std::string(tmpdir && *tmpdir == '/' ? tmpdir : "/tmp") + "/mahimahi-" + std::to_string(uid)
                   : base + "/mahimahi";
  if (::mkdir(directory.c_str(), 0700) < 0 && errno != EEXIST) throw SystemError("creating " + directory);
  if (::lstat(directory.c_str(), &st) < 0) throw SystemError("lstat " + directory);
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw UserError(directory + " must be a directory of yours that nobody else can write; remove it (or set " +
                    "XDG_RUNTIME_DIR to a directory of yours)");
  }
  return directory;
}
