// SPDX-License-Identifier: GPL-3.0-or-later
// The root helpers: short processes the user cannot signal, stop, trace or slow down, which do
// the few steps of a shell's set-up and clean-up that hold a lock other shells wait for. What
// they do is one closed set (RootOp), re-checked and performed in one switch below.
#include "shell/root_helper.hh"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <sstream>

#include "shell/forwarding.hh"
#include "shell/netdevice.hh"
#include "shell/nftables.hh"
#include "shell/privilege_mode.hh"
#include "shell/rootless.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/signals.hh"
#include "util/text.hh"

namespace {
// The caller chose the scheduling, limits and cgroups the supervisor inherited, and so they
// could slow down, freeze or kill a helper while it holds the namespace's lock (another user's
// shell would then wait for it): the helper takes the defaults, best effort, for its few
// milliseconds. Cgroups: a user may freeze or throttle their own (systemd delegates one to each
// user); the helper moves to the root of every hierarchy (cgroup v2, and each of v1's). In a
// container whose cgroups are read-only, the container's own limits apply anyway.
void reset_inherited_limits() {
  (void)::setpriority(PRIO_PROCESS, 0, 0);
  const sched_param normal{};
  (void)::sched_setscheduler(0, SCHED_OTHER, &normal);
  cpu_set_t every_cpu;
  CPU_ZERO(&every_cpu);
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) CPU_SET(cpu, &every_cpu);
  (void)::sched_setaffinity(0, sizeof every_cpu, &every_cpu);
  constexpr int kIoprioWhoProcess = 1, kIoprioClassBestEffort = 2, kIoprioClassShift = 13;
  (void)::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, (kIoprioClassBestEffort << kIoprioClassShift) | 4);
  for (int resource : {RLIMIT_CPU, RLIMIT_AS, RLIMIT_DATA, RLIMIT_STACK, RLIMIT_FSIZE, RLIMIT_NOFILE}) {
    rlimit limit{};
    if (::getrlimit(resource, &limit) != 0) continue;
    const rlim_t wanted = resource == RLIMIT_NOFILE ? 4096 : RLIM_INFINITY;
    const rlimit raised{wanted, wanted};
    if (::setrlimit(resource, &raised) != 0) {
      limit.rlim_cur = limit.rlim_max;  // without CAP_SYS_RESOURCE: at least up to the hard limit
      (void)::setrlimit(resource, &limit);
    }
  }
  // Only where it is not at the root already: each move waits for an RCU grace period.
  std::string memberships;
  try {
    memberships = read_small_file("/proc/self/cgroup");  // "ID:CONTROLLERS:PATH" per hierarchy
  } catch (const SystemError&) {
    return;
  }
  std::istringstream lines(memberships);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos || line.substr(second + 1) == "/") continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    if (controllers.rfind("name=", 0) == 0) controllers.erase(0, 5);  // name=systemd is mounted as systemd
    const std::vector<std::string> procs =
        controllers.empty()
            ? std::vector<std::string>{"/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs"}
            : std::vector<std::string>{"/sys/fs/cgroup/" + controllers + "/cgroup.procs"};
    for (const std::string& path : procs) {
      try {
        write_existing_file(path, "0");  // 0: the writing process
        break;
      } catch (const SystemError&) {
      }
    }
  }
}

// What a helper writes on its channel: one byte saying how fn ended, and the error's text.
constexpr char kHelperSucceeded = 'K', kHelperFailed = 'E';

// The helper's one act: every operation a root helper performs, in this switch.
void perform_root_request(const RootRequest& request) {
  // Root through and through (rootless: the user's helper, in the user's own namespaces).
  if ((::getuid() != 0 || ::geteuid() != 0) && privilege_mode() != PrivilegeMode::Rootless)
    throw std::logic_error("a root helper that is not root");
  check_root_request(request);
  switch (request.op) {
    case RootOp::OpenForwarding:
      open_forwarding(request.entry, request.slot_claim);
      if (request.outside) {
        const RootRequest::OutsideRedirect& o = *request.outside;
        add_outside_base_redirect(o.device, o.outer, o.relay_port, o.host_resolvers, o.dns_forward);
      }
      return;
    case RootOp::CloseForwarding:
      close_forwarding(request.entry, request.slot_claim);
      return;
    case RootOp::CloseForwardingUnlessBusy:
      close_forwarding_unless_busy(request.entry, request.slot_claim);
      return;
    case RootOp::AddIsolatedAddresses:
      enter_rootless_namespaces(request.user_namespace, request.network_namespace);
      add_addresses("lo", request.addresses);
      return;
  }
}

// The kernel frees what an nftables transaction deleted one RCU grace period after the commit
// (5-20 ms here), and a netlink socket of nftables closed before then waits for it, holding the
// namespace's nftables mutex: the next shell's device creation (the kernel's netdevice event
// takes that mutex) and transactions wait with it. A clean-up helper the shell does not wait for
// waits the period out here first, holding nothing (membarrier's global barrier is a
// synchronize_rcu()), so that its exit's close finds the work done and nobody waits for it.
// Everything else it inherited from the shell is closed first: the shell's devices go when the
// shell ends, and a caller reading the shell's output (bash's $(...)) sees its end then.
void settle_deletions() {
  const int keep = nft::socket_fd();
  if (keep < 0) return;
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3 && null >= 0; fd++)
    if (fd != keep) ::dup2(null, fd);
  ::close_range(3, static_cast<unsigned>(keep) - 1, 0);
  ::close_range(static_cast<unsigned>(keep) + 1, ~0U, 0);
  (void)::syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

// Forks the helper; in the child, performs the request and reports on `channel` how it ended.
pid_t fork_root_helper(const RootRequest& request, int channel) {
  const pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork");
  if (pid > 0) return pid;
  // Real, effective and saved uid root: the user can no longer signal it (kill needs a uid in
  // common); its own session: no terminal signals (Ctrl-Z, Ctrl-C) reach it; the defaults for
  // what the caller could set to slow it down. Setuid processes cannot be traced.
  int status = 0;
  try {
    // (Rootless: the user's own process, in the user's own namespaces; there is no root to become.)
    if (::setsid() < 0) throw SystemError("setsid");
    if (privilege_mode() != PrivilegeMode::Rootless && (::setresgid(0, 0, 0) < 0 || ::setresuid(0, 0, 0) < 0))
      throw SystemError("becoming root");
    reset_inherited_limits();
    perform_root_request(request);
    write_all(channel, std::string_view(&kHelperSucceeded, 1));
    if (request.settle) settle_deletions();
  } catch (const std::exception& e) {
    try {
      write_all(channel, std::string(1, kHelperFailed) + e.what());
    } catch (...) {
    }
    status = 1;
  }
  ::_exit(status);
}

}  // namespace

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

void check_root_request(const RootRequest& request) {
  const auto check_entry = [&] {
    if (!is_shell_device_name(request.entry.device) || request.entry.ifindex == 0 || request.slot_claim < 0)
      throw std::logic_error("a root helper's request names no shell's device and slot");
  };
  switch (request.op) {
    case RootOp::OpenForwarding:
      check_entry();
      if (request.outside) {
        // As many resolvers as resolv.conf may name (shell/resolv_conf.hh reads at most that many).
        if (!is_shell_device_name(request.outside->device) || request.outside->host_resolvers.size() > 64)
          throw std::logic_error("a root helper's outside redirection is out of its bounds");
      }
      return;
    case RootOp::CloseForwarding:
    case RootOp::CloseForwardingUnlessBusy:
      check_entry();
      if (request.outside) throw std::logic_error("a root helper's closing names an outside");
      return;
    case RootOp::AddIsolatedAddresses:
      if (request.user_namespace < 0 || request.network_namespace < 0)
        throw std::logic_error("a root helper adds addresses only in a rootless shell's namespace");
      check_isolated_addresses(request.addresses);
      return;
  }
  throw std::logic_error("a root helper's request of no known operation");
}

void run_root_helper(const RootRequest& request, bool interruptible, HelperWait wait) {
  int pipe_ends[2];
  check_syscall("pipe2", ::pipe2(pipe_ends, O_CLOEXEC));
  FileDescriptor channel_read(pipe_ends[0]), channel_write(pipe_ends[1]);
  const pid_t pid = fork_root_helper(request, channel_write.get());
  channel_write.close();
  SignalFd interruptions(SignalSet{SIGINT, SIGTERM, SIGHUP, SIGQUIT});  // blocked by the supervisor
  std::string report;
  for (;;) {
    pollfd fds[2] = {{channel_read.get(), POLLIN, 0}, {interruptions.fd(), POLLIN, 0}};
    if (::poll(fds, interruptible ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll");
    }
    if (fds[1].revents & POLLIN) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      throw SetupInterrupted("interrupted while setting up the shell");
    }
    char buffer[512];
    const ssize_t n = ::read(channel_read.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (report.size() < 4096) report.append(buffer, static_cast<size_t>(n));
    // Its work is done and reported: what is left is its exit, which the caller need not see,
    // once it has begun. Until then the helper is a live process, which a shell this one is
    // nested in would take, once this supervisor is gone, for one the command left running.
    if (wait == HelperWait::UntilReportedOnly && report == std::string(1, kHelperSucceeded)) return;
    if (wait == HelperWait::UntilReported && report == std::string(1, kHelperSucceeded)) {
      // (A /proc that hides root's processes from us, hidepid, shows nothing to wait for.)
      const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      while (FileDescriptor(::open(stat.c_str(), O_RDONLY | O_CLOEXEC)).valid() && !process_is_ending(pid) &&
             std::chrono::steady_clock::now() < deadline) {
        const timespec pause{0, 100'000};
        ::nanosleep(&pause, nullptr);
      }
      return;
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw SystemError("waitpid");
  }
  if (!report.empty() && report.front() == kHelperFailed) throw UserError(report.substr(1));
  if (report != std::string(1, kHelperSucceeded) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("the privileged helper failed");
}

ForwardingGrant& ForwardingGrant::operator=(ForwardingGrant&& other) noexcept {
  if (this != &other) {
    release();
    entry_ = std::move(other.entry_);
    slot_claim_ = other.slot_claim_;
    outermost_ = other.outermost_;
    other.entry_.reset();
  }
  return *this;
}

void ForwardingGrant::release() noexcept {
  if (!entry_) return;
  const ShellEntry entry = std::move(*entry_);
  entry_.reset();
  // Waited for until it reports, so that when the shell has ended, everything it made is gone.
  // Not until it exits: its exit closes the nftables socket, which waits for an RCU grace period
  // (5-20 ms here) before the kernel frees what the transaction deleted (see settle_deletions).
  // The outermost shell does not even wait for its exit to begin: the helper settles that grace
  // period first, after the shell has returned, and its exit then holds up no other shell. A
  // shell inside another waits for it to begin its exit (the outer shell's reaper would otherwise
  // take a helper still running for a process the command left).
  try {
    RootRequest request = RootRequest::forwarding(RootOp::CloseForwarding, entry, slot_claim_);
    request.settle = outermost_;
    run_root_helper(request, false, outermost_ ? HelperWait::UntilReportedOnly : HelperWait::UntilReported);
  } catch (const std::exception& e) {
    std::cerr << "mahimahi: cleaning up the shell's nftables elements and forwarding: " << e.what()
              << "; the next shell of this network namespace to take the addresses " << entry.inner.str()
              << " removes what is left, or the last one to end" << std::endl;
  }
}
