// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Rootless shells: what a shell does when it is neither setuid root nor run by root (or when
// MAHIMAHI_ROOTLESS=1 asks for it). Everything is made in user namespaces of the user's own; no
// file or setting of the host changes, and no process has more rights than the user has.
//
// The kernel gives a process every capability in a user namespace it creates, and also to every
// process of the namespace's owner (the same effective uid) in its parent namespace. A shell
// uses both rules:
//
//   caller's user namespace P, network namespace C (the host's, or an outer shell's)
//    |-- S   the command's user namespace, a child of P; the user's ids map to themselves
//         `-- S2  owns N2, the command's network namespace (a child of S)
//
// The supervisor, in P, configures C (the outer TUN device, its addresses and forwarding) if C
// belongs to a child of P; otherwise (the outermost shell: C is the host's) it first moves into
// an "outside" of its own, a new user and network namespace standing for the host (reached, if
// the shell needs a way out, through pasta). A child of the supervisor creates S, then S2 and N2
// in it, configures N2 and hands back its descriptors. The guard joins S (its owner's rule gives
// it every capability there), then N2 (owned by S2, S's child), drops every capability and
// starts the command: the command is the user's uid with no capability, exactly as in the
// setuid mode, but N2 belongs to a child of its user namespace, so a shell started inside finds
// itself in P's place and nests the same way.
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "util/file_descriptor.hh"

// MAHIMAHI_ROOTLESS: unset or empty, rootless only when the program has no root's rights; "1",
// rootless even when it has them (a setuid program gives them up first, for good); "0", never.
constexpr const char* kRootlessVariable = "MAHIMAHI_ROOTLESS";

// Where the kernel's settings live; tests point these at files of their own.
struct RootlessSettingPaths {
  std::string max_user_namespaces = "/proc/sys/user/max_user_namespaces";
  std::string unprivileged_userns_clone = "/proc/sys/kernel/unprivileged_userns_clone";
  std::string apparmor_restrict = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";
  std::string tun = "/dev/net/tun";
  std::string proc_sys = "/proc/sys";
};

// Checks, before anything is made, that the kernel lets this user make user namespaces and (if
// needs_tun) TUN devices, and that /proc/sys is writable (containers mount it read-only). Throws UserError naming the
// setting that says no and the alternatives (an administrator's change, the setuid install, root).
void check_rootless_support(bool needs_tun, const RootlessSettingPaths& paths = {});

// Whether the calling thread has `capability` (CAP_*) in its effective set.
bool has_effective_capability(int capability);

// Whether this process may configure the network namespace it is in: it has CAP_NET_ADMIN in
// the user namespace owning it, or that namespace is a child of this process's, owned by its
// effective uid (inside a rootless shell).
bool can_configure_current_network();

// Moves the calling (single-threaded) process into a new user namespace mapping only the user's
// ids to themselves, and a new network namespace with lo up: a rootless shell's outside.
void enter_own_outside(uid_t uid, gid_t gid);

// The namespaces of a rootless shell's command, made by a child process: S (a child of the
// caller's user namespace), and N2 owned by a child of S. `configure` runs inside N2 with every
// capability there and returns the descriptors it made (at most a few dozen), handed back here.
struct RootlessNamespaces {
  FileDescriptor userns;  // S: the command's
  FileDescriptor net;     // N2
  std::vector<FileDescriptor> made;
};
RootlessNamespaces create_rootless_namespaces(uid_t uid, gid_t gid,
                                              const std::function<std::vector<FileDescriptor>()>& configure);

// Opens this process's namespace of `kind` ("net", "user"): /proc/self/ns/KIND.
FileDescriptor open_own_namespace(const char* kind);

// Joins a rootless shell's namespaces: S (the caller must be in its parent, as the supervisor's
// children are), then N2.
void enter_rootless_namespaces(int userns, int net);

// Gives up every capability (effective, permitted, inheritable, ambient) for good and checks it.
void drop_capabilities();

// The directory of a rootless user's shell state (lock files), the first of these that is (or
// can be made, 0700) a directory of the user's that nobody else can write, not a symbolic link:
// $XDG_RUNTIME_DIR/mahimahi (or /run/user/UID/mahimahi), HOME/.cache/mahimahi-HOSTNAME (HOME:
// a directory the user owns; one per machine, for homes several share), $TMPDIR (/tmp)/mahimahi-UID. A directory
// another user made in /tmp is passed over; UserError if none is usable.
std::string rootless_state_directory(const char* xdg_runtime_dir, const char* home, const char* tmpdir);

// MAHIMAHI_WAY_OUT: how an outermost rootless shell reaches the network outside: unset or
// "pasta" (the default), through pasta (Debian's passt); "none", it has none (only the shell's
// own outer address answers).
constexpr const char* kWayOutVariable = "MAHIMAHI_WAY_OUT";
// The address a rootless shell's outside sends DNS queries to; pasta hands them to the host's
// first resolver (--dns-forward), which may be on the host's loopback.
constexpr const char* kWayOutResolver = "169.254.1.53";

// The way out of a rootless shell's outside: pasta, for the outside's namespaces, started and
// ended by a small monitor process that stays in the caller's namespaces (pasta must run there,
// and outlives a parent that dies: the monitor ends it when the supervisor is gone, even by
// SIGKILL). pasta publishes no port of the shell's on the host (-t/-u/-T/-U none) and forwards
// DNS sent to kWayOutResolver if `forward_dns` (the host's resolvers are on its loopback; pasta
// would otherwise make every answer of the host's first resolver seem to come from there).
class WayOut {
 public:
  WayOut() = default;
  // In the caller's namespaces, before enter_own_outside: forks the monitor. `pasta` is its file.
  WayOut(const std::string& program, const std::string& pasta, const std::string& state_directory, bool forward_dns);
  WayOut(WayOut&& other) noexcept;
  WayOut& operator=(WayOut&& other) noexcept;
  ~WayOut();

  // After enter_own_outside: starts pasta for the calling process's namespaces and returns once
  // it has configured them (addresses, routes). Throws UserError if pasta failed or took over 10 s.
  void start();
  // The monitor's pid (-1 if none): a child of the supervisor that is not the command's.
  pid_t monitor() const { return monitor_; }

 private:
  void end() noexcept;
  pid_t monitor_ = -1;
  FileDescriptor control_;  // the supervisor's end; closing it ends pasta and the monitor
};
