// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The mechanism every packet shell shares: a new network namespace joined to the caller's by
// two TUN devices, an unprivileged ferry process between them, the user's command inside.
//
//   supervisor (root: set-up, then waits and cleans up)
//    |- ferry (the user's rights; one thread per direction)
//    `- command (the user's rights, inside the new namespace)
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shell/attached_device.hh"
#include "shell/privileged.hh"
#include "shell/startup_channel.hh"  // the ferry's exit statuses
#include "util/args.hh"
#include "util/clock.hh"

struct FerryEndpoints {
  int outer;                 // TUN, the caller's side: uplink packets are written here, downlink ones read
  int inner;                 // TUN, the command's side
  DnsRelaySockets* dns;      // the ferry runs the DNS relay if dns->active()
  std::string outer_prefix;  // MAHIMAHI_SHELL_PREFIX of the shells around this one
  int intercepted = -1;      // listening socket receiving the namespace's TCP connections (mm-record)
  // Isolated shells only (ShellSpec::isolated): asks the supervisor to put these addresses on the
  // namespace's lo (at most kMaxIsolatedAddresses, unicast, no duplicates; 127.0.0.0/8 is there
  // already) and returns once they are there; throws UserError with the supervisor's reason if it
  // refused. Call it at most once, before ready(). Other shells: throws std::logic_error.
  std::function<void(const std::vector<Ipv4>&)> add_addresses;
  bool offload = false;  // both TUN devices carry a virtio-net header (packet/offload.hh)
  // MAHIMAHI_CLOCK_BASE as the shells around this one set it (unparsed: the ferry reads it, see
  // trace_start()), or the instant this shell set it to (ShellSpec::follows_trace); empty if none.
  std::string clock_base = {};
  Ipv4 inner_address = {};  // the command's address (not isolated shells): whom `intercepted` serves
};

// The instant from which this shell's traces are indexed (CLOCK_MONOTONIC): the outermost
// trace-following shell's start (MAHIMAHI_CLOCK_BASE), so that nested shells' traces stay
// aligned, or now. Throws UserError if the variable holds no instant of this machine's clock.
Nanos trace_start(const FerryEndpoints& endpoints);

// Set by an isolated shell (mm-replay) for its command: its network namespace's inode.
constexpr const char* kIsolatedNamespaceVariable = "MAHIMAHI_REPLAY_NETNS";

struct ShellSpec {
  // Its outer device's name (isolated shells have none).
  ShellKind device_kind = ShellKind::Delay;
  std::string tag;                   // appended to MAHIMAHI_SHELL_PREFIX, e.g. "[delay 50 ms] "
  std::vector<std::string> command;  // empty: the user's login shell
  bool intercept_tcp = false;        // send every TCP connection to FerryEndpoints::intercepted
  bool refuse_quic = true;           // with intercept_tcp: refuse UDP to port 443
  // A shell with no way out (mm-replay): the supervisor creates an empty namespace (lo only),
  // there are no TUN devices and no NAT, and the ferry runs inside the namespace, where it reads
  // what it needs with the user's rights only and asks for its addresses with
  // FerryEndpoints::add_addresses. Until then the supervisor can end it at any time (SIGKILL):
  // it must hold nothing that needs cleaning up before it has its addresses.
  bool isolated = false;
  ServerTcpSettings isolated_tcp;  // isolated shells: the TCP of the servers inside
  // The ferry opens X windows (live graphs): without DISPLAY the shell fails at the start,
  // before any set-up, with this message (which says what to do instead).
  std::string display_needed;
  bool verbose = false;        // --verbose: say whether the TUN offloads are used, and if not why
  std::optional<int> tcp_ecn;  // --tcp-ecn: net.ipv4.tcp_ecn of the command's namespace (0, 1, 2)
  // Its emulation follows a trace in time (mm-link, mm-delay --delay-trace): the outermost such
  // shell sets MAHIMAHI_CLOCK_BASE for the shells inside it (see trace_start()).
  bool follows_trace = false;
  // The TCP of the command's namespace (mm-paths --tcp-...): its congestion control, slow start
  // after idle, and the initial window of its default route (the one its connections out take).
  ServerTcpSettings command_tcp;
  // mm-eth: the interface (or TAP) whose devices join the command's namespace (attached_device.hh),
  // attached by the supervisor before the command starts and put back after it ends.
  std::optional<DeviceAttachment> attachment;
  // Runs in the ferry process after privileges are dropped; calls ready() once it can carry
  // packets (the command starts then) and returns the ferry's exit status.
  std::function<int(const FerryEndpoints&, const std::function<void()>& ready)> ferry;
};

// --PREFIXcongestion-control=NAME, --PREFIXinitial-window=SEGMENTS and
// --PREFIXslow-start-after-idle=on|off into `tcp`: mm-replay's --server-..., mm-paths's --tcp-....
std::vector<ArgScanner::Option> tcp_settings_options(ServerTcpSettings& tcp, const std::string& prefix);

// The whole life of a packet shell. parse() turns the command line into a ShellSpec (throwing
// UsageError); returns the process exit status: the command's, 128+N if it was killed by signal
// N, 2 for usage errors, 1 for other errors.
int run_packet_shell(int argc, char** argv, const ProgramInfo& info,
                     const std::function<ShellSpec(int, char**)>& parse);
