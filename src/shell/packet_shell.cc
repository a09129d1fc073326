// SPDX-License-Identifier: GPL-3.0-or-later
// The frame of every shell: the supervisor's checks and set-up, the ferry and command processes,
// the start-up protocol with the ferry, and the wait (see packet_shell.hh and README.md).
#include "shell/packet_shell.hh"

#include <fcntl.h>
#include <malloc.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "shell/address_pool.hh"
#include "shell/command_lookup.hh"
#include "shell/environment.hh"
#include "shell/forwarding.hh"
#include "shell/privileged.hh"
#include "shell/reaper.hh"
#include "shell/resolv_conf.hh"
#include "shell/rootless.hh"
#include "shell/route_table.hh"
#include "shell/startup_channel.hh"
#include "util/child_process.hh"
#include "util/clock.hh"
#include "util/exception.hh"
#include "util/signals.hh"
#include "util/text.hh"

namespace {

const SignalSet kSupervisorSignals{SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT};

std::vector<std::string> login_shell(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  std::string shell = (pw && pw->pw_shell && *pw->pw_shell) ? pw->pw_shell : "/bin/sh";
  return {shell};
}

// The tag as it may go into a prompt: bash expands $(...), `...` and \ escapes in PS1, and a
// tag carries names the user did not necessarily choose (a recording's directory).
std::string prompt_safe(const std::string& tag) {
  std::string safe;
  for (unsigned char c : tag)
    safe += (c < 0x20 || c == 0x7f || c == '$' || c == '`' || c == '\\') ? '?' : static_cast<char>(c);
  return safe;
}

void prepare_environment(UserEnvironment& env, const ShellSpec& spec, const ShellNetwork& net) {
  if (!env.get("MAHIMAHI_BASE") && !spec.isolated) env.set("MAHIMAHI_BASE", net.addresses.outer.str());
  // Which namespace is an isolated shell's (mm-replay's, which nothing outside reaches): its
  // inode, so that a program can tell it runs there (mm-cumulus-remote's defaults). A hint to
  // ordinary programs, never read with root's rights.
  struct stat st {};
  if (spec.isolated && net.inner_namespace.valid() && ::fstat(net.inner_namespace.get(), &st) == 0)
    env.set(kIsolatedNamespaceVariable, std::to_string(st.st_ino));
  const char* prefix = env.get("MAHIMAHI_SHELL_PREFIX");
  env.set("MAHIMAHI_SHELL_PREFIX", prompt_safe(std::string(prefix ? prefix : "") + spec.tag));
  env.set("PROMPT_COMMAND", "PS1=\"$MAHIMAHI_SHELL_PREFIX$PS1\"; unset PROMPT_COMMAND");
}

// Runs the command found before set-up (resolve_command); exec can still fail if the file changed
// since, and says why as bash would.
[[noreturn]] void exec_command(const std::string& program, const std::string& path, std::vector<std::string> command) {
  std::vector<char*> argv;
  for (auto& word : command) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(path.c_str(), argv.data());
  const int err = errno;
  std::cerr << program << ": cannot run " << command[0] << ": " << std::strerror(err) << std::endl;
  ::_exit(err == ENOENT ? 127 : 126);
}

// --verbose's line on the TUN offloads (ShellNetwork::offload).
std::string offload_summary(bool asked, const ShellNetwork& net) {
  if (!asked) return std::string("TUN offloads off (") + kOffloadVariable + "=0): one packet per read and write";
  if (!net.offload) return "TUN offloads not used (" + net.offload_refused + "): one packet per read and write";
  if (!net.offload_refused.empty())
    return "TUN offloads only in part (" + net.offload_refused + "): super-packets leave the shell, none enter";
  return "TUN offloads on (" + net.offload_features +
         "): super-packets of up to 64 KiB cross the ferry, the emulation still acts per wire packet";
}

// What the supervisor decides before any set-up, from the command line, the caller's identity,
// the administrator's file and the captured environment; every check of them is made here.
struct ShellPlan {
  ShellSpec spec;
  UserIdentity user;
  Ipv4Net pool;
  std::optional<Ipv4> base;     // MAHIMAHI_BASE: must stay reachable
  std::string program_path;     // the command's file, found with the caller's rights
  int nice;                     // the ferry's priority (kNoPriorityChange: inherited)
  bool offload;                 // TUN offloads where the kernel has them (MAHIMAHI_OFFLOAD)
  bool offload_asked;           // MAHIMAHI_OFFLOAD=1: say why, if the kernel refuses
  std::string state_directory;  // rootless: the user's (rootless_state_directory)
  bool own_outside;             // rootless, where the caller's network is not the user's: make one
  std::string pasta;            // with own_outside, unless MAHIMAHI_WAY_OUT=none: pasta's file; else empty
  AdministratorConfig config;   // the administrator's settings (mm-eth's interfaces)
};

ShellPlan plan_shell(int argc, char** argv, const ProgramInfo& info, const std::function<ShellSpec(int, char**)>& parse,
                     const UserEnvironment& env) {
  ShellSpec spec = parse(argc, argv);
  if (!spec.display_needed.empty()) {
    const char* display = env.get("DISPLAY");
    if (!display || !*display) throw UsageError(spec.display_needed);
  }
  const UserIdentity user = acquire_privileges(info.name, env.get(kRootlessVariable));
  const bool rootless = user.mode == PrivilegeMode::Rootless;
  std::string state_directory, pasta;
  // Rootless, where this process may not configure the network it is in (the outermost shell:
  // the host's), an outside of its own stands for it (rootless.hh).
  const bool own_outside = rootless && !spec.isolated && !can_configure_current_network();
  if (rootless) {
    check_rootless_support(!spec.isolated);
    state_directory = rootless_state_directory(env.get("XDG_RUNTIME_DIR"), env.get("HOME"), env.get("TMPDIR"));
    use_rootless_state_directory(state_directory);
    remove_unused_lock_files();
    const char* way_out = env.get(kWayOutVariable);
    const std::string_view way = way_out ? way_out : "";
    if (way != "" && way != "pasta" && way != "none")
      throw UsageError(std::string(kWayOutVariable) +
                       " must be pasta (the default: the host's network through pasta) " +
                       "or none (no way out), not \"" + printable(way, 40) + "\"");
    // The outermost shell (which makes an outside of its own) reaches the host through pasta,
    // which needs a route out: on a machine with none, the shell starts without a way out (it
    // needs none to reach MAHIMAHI_BASE or to replay), and says so.
    if (own_outside && way == "" && !has_default_route()) {
      std::cerr << info.name << ": this machine has no route out (no IPv4 default route), so the shell has no way "
                << "out either (as with " << kWayOutVariable << "=none)" << std::endl;
    } else if (own_outside && way != "none") {
      try {
        pasta = resolve_command("pasta", env.get("PATH"));
      } catch (const std::exception&) {
        throw UserError(std::string("this shell runs rootless (no setuid bit, not root), and reaches the network ") +
                        "outside through pasta, which is not installed (not in PATH); install it (apt install " +
                        "passt), or set " + kWayOutVariable + "=none for a shell with no way out");
      }
    }
  }
  const AdministratorConfig config = AdministratorConfig::load();
  if (spec.attachment) check_attachment(*spec.attachment, user, config);  // a refusal builds nothing
  const Ipv4Net pool = address_pool_from(env.get(kAddressPoolVariable));
  // Rootless, the addresses go only into namespaces of the user's own: any pool a root may use.
  if (!spec.isolated)
    check_address_pool(pool, user.uid == 0 || rootless, config.allowed_pools, kAdministratorConfigPath);
  std::optional<Ipv4> base;
  if (const char* b = env.get("MAHIMAHI_BASE")) base = Ipv4::parse(b);
  if (spec.command.empty()) spec.command = login_shell(user.uid);
  // Before any set-up: a mistyped command builds no network, and is reported as bash would.
  std::string program_path = resolve_program(spec.command[0], env.get("PATH"));

  const char* realtime_env = env.get(kRealtimeVariable);
  const int nice =
      (realtime_env && std::string_view(realtime_env) == "0") ? kNoPriorityChange : ferry_nice(user, config);
  // Offloads only change how many packets one system call moves, never what root does.
  const char* offload_env = env.get(kOffloadVariable);
  const std::string_view offload_value = offload_env ? offload_env : "";
  if (offload_env && offload_value != "0" && offload_value != "1")
    throw UsageError(std::string(kOffloadVariable) + " must be 0 (no TUN offloads) or 1 (offloads), not \"" +
                     printable(offload_value, 40) + "\"");
  return ShellPlan{std::move(spec),
                   user,
                   pool,
                   base,
                   std::move(program_path),
                   nice,
                   offload_value != "0",
                   offload_value == "1",
                   state_directory,
                   own_outside,
                   pasta,
                   config};
}

// The guard's process, forked by the supervisor: into the shell's namespace (as root), then the
// drop, for good. It forks the command (the caller's signal mask and environment, exec) and
// reaps it and everything it leaves, also when the supervisor is killed.
// `signals` is the supervisor's signalfd, inherited: read in the guard, it gives the guard's own.
int guard_process(const ProgramInfo& info, const ShellPlan& plan, ShellNetwork& net, UserEnvironment& env,
                  const sigset_t& original_mask, const SignalFd& signals, pid_t supervisor,
                  FileDescriptor supervisor_alive, Nanos grace, AttachedDevice* attached) {
  if (attached) attached->close_in_child();
  enter_shell_namespace(net);
  net.inner_namespace.close();
  net.command_userns.close();
  net.slot_claim.close();  // a writable root-owned file: not for the user's processes
  drop_privileges(plan.user);
  check_syscall("prctl(PR_SET_CHILD_SUBREAPER)", ::prctl(PR_SET_CHILD_SUBREAPER, 1));
  if (::getppid() != supervisor) return 1;
  const pid_t guard = ::getpid();
  const pid_t command = fork_child(info.name, [&]() -> int {
    ::prctl(PR_SET_PDEATHSIG, SIGHUP);
    if (::getppid() != guard) return 1;
    check_syscall("sigprocmask", ::sigprocmask(SIG_SETMASK, &original_mask, nullptr));
    env.restore_withheld();
    env.install();
    exec_command(info.name, plan.program_path, plan.spec.command);
  });
  return run_reaper(info.name, printable(plan.spec.command[0], 200), command, {}, supervisor_alive.get(), grace, {},
                    signals);
}

int run_shell(int argc, char** argv, const ProgramInfo& info, const std::function<ShellSpec(int, char**)>& parse,
              UserEnvironment& env) {
  ShellPlan plan = plan_shell(argc, argv, info, parse, env);
  const ShellSpec& spec = plan.spec;
  const UserIdentity user = plan.user;
  const int nice = plan.nice;
  const sigset_t original_mask = kSupervisorSignals.block();
  SignalFd signals(kSupervisorSignals);
  const pid_t supervisor = ::getpid();
  // Orphans of the command's processes come to the supervisor, which ends them with the shell.
  check_syscall("prctl(PR_SET_CHILD_SUBREAPER)", ::prctl(PR_SET_CHILD_SUBREAPER, 1));

  const bool isolated = spec.isolated;
  WayOut way_out;  // destroyed after net: the outside's way out ends last
  ShellNetwork net;
  if (isolated) {
    ServerTcpSettings tcp = spec.isolated_tcp;  // the servers' and the command's: one namespace
    if (spec.tcp_ecn) tcp.ecn = spec.tcp_ecn;
    net = create_isolated_namespace(tcp);  // empty: the ferry asks for its addresses
  } else {
    // A rootless outermost shell's outside, reaching the host's network through pasta unless
    // MAHIMAHI_WAY_OUT=none.
    std::optional<Ipv4> dns_upstream;
    std::vector<Ipv4> host_resolvers;
    if (plan.own_outside) {
      const std::string resolv_conf = read_resolv_conf();
      const bool loopback_dns = !loopback_nameservers(resolv_conf).empty();
      // Resolvers at the host's own addresses: pasta gives the outside those addresses, where
      // they would answer themselves; their DNS goes to pasta's forwarder instead.
      if (!plan.pasta.empty()) host_resolvers = own_address_nameservers(resolv_conf);
      if (!plan.pasta.empty())
        way_out = WayOut(info.name, plan.pasta, plan.state_directory, loopback_dns || !host_resolvers.empty());
      enter_own_outside(user.uid, user.gid);
      if (!plan.pasta.empty()) {
        way_out.start();
        if (loopback_dns) dns_upstream = Ipv4::parse(kWayOutResolver);
      }
    }
    net = create_shell_network(spec.device_kind, plan.pool, plan.base,
                               {.offload = plan.offload,
                                .intercept = spec.intercept_tcp,
                                .refuse_quic = spec.refuse_quic,
                                .dns_upstream = dns_upstream,
                                // Through the way out, MAHIMAHI_BASE leads to the host's servers,
                                // as it does in the setuid mode.
                                .base_to_host = way_out.monitor() > 0,
                                .host_resolvers = host_resolvers,
                                .host_dns_forward = *Ipv4::parse(kWayOutResolver),
                                .tcp_ecn = spec.tcp_ecn,
                                // (Set by every shell for its command; a user who clears it only
                                // gets a line from the outer shell's reaper, see ForwardingGrant.)
                                .outermost = !env.get("MAHIMAHI_SHELL_PREFIX") || !*env.get("MAHIMAHI_SHELL_PREFIX"),
                                .command_tcp = spec.command_tcp});
    if (spec.verbose || (plan.offload_asked && !net.offload_refused.empty()))
      std::cerr << info.name << ": " << offload_summary(plan.offload, net) << "\n";
  }

  int startup[2];
  check_syscall("socketpair", ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, startup));
  FileDescriptor channel(startup[0]), ferry_channel(startup[1]);

  const char* prefix = env.get("MAHIMAHI_SHELL_PREFIX");
  const std::string outer_prefix = prefix ? prefix : "";
  // The clock of stacked shells' traces: passed on as the user gave it (the ferry parses it,
  // without root), or set here by the outermost shell that follows a trace.
  const char* outer_clock = env.get("MAHIMAHI_CLOCK_BASE");
  std::string clock_base = outer_clock ? outer_clock : "";
  const bool sets_clock = spec.follows_trace && clock_base.empty();
  if (sets_clock) clock_base = std::to_string(monotonic_now());
  // The set-up's freed heap back to the system before the ferry is forked: the supervisor then
  // waits, and both stay small for the shell's whole life.
  ::malloc_trim(0);
  const pid_t ferry = fork_child(info.name, [&] {
    raise_priority(nice);
    // A process group of its own: a `kill 0` by the command, or the caller's `kill %1`, reaches
    // the supervisor, which ends the shell in order, and not the ferry, which would stop early.
    ::setpgid(0, 0);
    if (isolated) enter_shell_namespace(net);  // its servers live there
    drop_privileges(user);
    env.install();  // the user's own variables (HOME, the CA's location), for the user's rights only
    // Dies with the supervisor, even on SIGKILL, so that the TUN devices vanish with it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != supervisor) return 1;
    channel.close();
    net.inner_namespace.close();
    net.command_userns.close();
    net.slot_claim.close();  // a writable root-owned file: not for the user's process
    const int channel_fd = ferry_channel.get();
    FerryEndpoints endpoints{
        net.outer_tun.get(), net.inner_tun.get(), &net.dns,           outer_prefix, net.intercepted.get(), {},
        net.offload,         clock_base,          net.addresses.inner};
    if (isolated) {
      endpoints.add_addresses = [channel_fd](const std::vector<Ipv4>& addresses) {
        request_addresses(channel_fd, addresses);
      };
    } else {
      endpoints.add_addresses = [](const std::vector<Ipv4>&) {
        throw std::logic_error("add_addresses is only for isolated shells");
      };
    }
    bool started = false;
    int status;
    try {
      status = spec.ferry(endpoints, [channel_fd, &started] {
        write_all(channel_fd, std::string_view(&kFerryReady, 1));
        started = true;
      });
    } catch (const UserError& e) {
      if (!started) throw;  // the start-up's failure: reported as such by run_startup
      // Once running (a log on a full disk): its words, and the shell ends with status 1.
      std::cerr << info.name << ": " << e.what() << std::endl;
      status = kFerryFailedSaidWhy;
    }
    // Any other failure once running: the ferries print their reason before returning one.
    if (started && status != 0 && status != kFerryFinished) status = kFerryFailedSaidWhy;
    // The supervisor may finish without waiting for our exit.
    write_all(channel_fd, std::string_view(status == kFerryFailedSaidWhy ? &kFerryStoppedFailed : &kFerryStopped, 1));
    return status;
  });
  net.outer_tun.close();  // the ferry holds the only copies now
  net.inner_tun.close();
  net.dns = DnsRelaySockets{};
  net.intercepted.close();
  ferry_channel.close();
  if (const auto status = run_startup(info.name, ferry, channel.get(), signals, isolated ? &net : nullptr))
    return *status;

  // mm-eth: the devices join the namespace before the command starts (the ferry already carries).
  std::optional<AttachedDevice> attached;
  if (spec.attachment) {
    try {
      attached.emplace(
          AttachedDevice::attach(*spec.attachment, net, user, plan.config, c_library_resolvers(read_resolv_conf())));
    } catch (...) {
      // The ferry runs already: it goes first, so that the rest of the set-up comes down after it.
      ::kill(ferry, SIGKILL);
      ::waitpid(ferry, nullptr, 0);
      throw;
    }
  }
  prepare_environment(env, spec, net);
  if (sets_clock) env.set("MAHIMAHI_CLOCK_BASE", clock_base);
  // Only the supervisor holds the pipe's write end, and never writes: the guard sees end-of-file
  // when the supervisor is gone (the command gets the read end only until its exec).
  int alive[2];
  check_syscall("pipe2", ::pipe2(alive, O_CLOEXEC));
  FileDescriptor alive_read(alive[0]), alive_write(alive[1]);
  const Nanos grace = ending_grace(outer_prefix);
  const pid_t guard = fork_child(info.name, [&]() -> int {
    alive_write.close();
    channel.close();
    return guard_process(info, plan, net, env, original_mask, signals, supervisor, std::move(alive_read), grace,
                         attached ? &*attached : nullptr);
  });
  alive_read.close();
  net.inner_namespace.close();
  net.command_userns.close();

  // A little more time than the guard's, so that it ends the command's processes itself (and
  // names those it had to end) before the supervisor would.
  std::vector<pid_t> spared;  // children that end after the reaper: a rootless way out, mm-eth's dnsmasq
  if (way_out.monitor() > 0) spared.push_back(way_out.monitor());
  if (attached && attached->dnsmasq() > 0) spared.push_back(attached->dnsmasq());
  const int status = run_reaper(info.name, printable(spec.command[0], 200), guard, {ferry, channel.get()}, -1,
                                grace + 200 * kNanosPerMs, spared, signals);
  if (attached && spec.verbose)
    for (const std::string& lease : attached->leases()) std::cerr << info.name << ": leased " << lease << "\n";
  return status;
  // net's destructor removes the NAT table; the TUN devices went with the ferry.
}

}  // namespace

std::vector<ArgScanner::Option> tcp_settings_options(ServerTcpSettings& tcp, const std::string& prefix) {
  const std::string cc = "--" + prefix + "congestion-control", window = "--" + prefix + "initial-window",
                    idle = "--" + prefix + "slow-start-after-idle";
  return {{cc.substr(2), true,
           [&tcp, cc](std::string_view v) {
             if (!is_congestion_control_name(v))
               throw UsageError(cc + " needs a congestion control's name (such as reno or bbr), not \"" +
                                printable(v, 40) + "\"");
             tcp.congestion_control = std::string(v);
           }},
          {window.substr(2), true,
           [&tcp, window](std::string_view v) {
             const uint64_t n = parse_unsigned(v, window);
             if (n < 1 || n > kMaxInitialWindow)
               throw UsageError(window + " takes a number of segments from 1 to " + std::to_string(kMaxInitialWindow) +
                                ", not " + std::to_string(n));
             tcp.initial_window = static_cast<uint32_t>(n);
           }},
          {idle.substr(2), true, [&tcp, idle](std::string_view v) {
             if (v != "on" && v != "off") throw UsageError(idle + " takes on or off, not \"" + printable(v, 40) + "\"");
             tcp.slow_start_after_idle = v == "on";
           }}};
}

int run_packet_shell(int argc, char** argv, const ProgramInfo& info,
                     const std::function<ShellSpec(int, char**)>& parse) {
  // An ignored SIGCHLD, inherited from the caller, would make the kernel reap every child at
  // once: the supervisor could then neither wait for its helpers nor learn the command's status
  // ("waitpid: No child processes"). The command gets the default too.
  ::signal(SIGCHLD, SIG_DFL);
  UserEnvironment env = UserEnvironment::capture_and_clear();
  return run_tool(info.name, usage_line(info) + "\n", [&] { return run_shell(argc, argv, info, parse, env); });
}

Nanos trace_start(const FerryEndpoints& endpoints) {
  const Nanos now = monotonic_now();
  if (endpoints.clock_base.empty()) return now;
  const std::string& text = endpoints.clock_base;
  Nanos base = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), base);
  if (error != std::errc() || end != text.data() + text.size() || base <= 0 || base > now)
    throw UserError("MAHIMAHI_CLOCK_BASE=\"" + printable(text, 40) +
                    "\" is not an instant of this machine's monotonic clock (an outer shell sets it: unset it to "
                    "start this shell's traces at its own start)");
  return base;
}
