// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The privileged operations of a shell: the checks of the caller's identity, the drop, and the
// set-up of namespaces, devices, addresses, routes, sysctls and NAT (with netdevice.cc, nat.cc
// and forwarding.cc). They run in the supervisor, which keeps root's effective and saved uid
// (the user's real uid, so that the user can signal their own shell) to set up, wait and clean
// up, and in short root helpers (run_root_helper) that the user cannot signal. Everything that
// parses what the user wrote (trace and recording files, the recording proxy's traffic) runs in
// the ferry or the command, after drop_privileges(). src/shell/README.md maps which code runs as
// root and when; docs/security.md lists every process.
#include <sys/resource.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shell/address_pool.hh"
#include "shell/admin_config.hh"
#include "shell/nat.hh"
#include "shell/privilege_mode.hh"
#include "shell/root_helper.hh"
#include "util/address.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

struct UserIdentity {
  uid_t uid;
  gid_t gid;
  PrivilegeMode mode = PrivilegeMode::Setuid;
};

// Decides the privilege mode, once, and returns the invoking user's identity with it:
//   1. root's effective uid and MAHIMAHI_ROOTLESS unset or "0": Root (the caller is root) or
//      Setuid (the program is setuid root);
//   2. root's effective uid and MAHIMAHI_ROOTLESS=1: a setuid program becomes the user for good
//      here, before anything else; then Rootless;
//   3. no root's rights: Rootless, unless MAHIMAHI_ROOTLESS=0 (then UserError: how to get them).
// rootless_value is MAHIMAHI_ROOTLESS's value (nullptr if unset); UsageError for another value.
// Rootless: nothing is checked or made here (check_rootless_support, rootless.hh).
UserIdentity acquire_privileges(const std::string& program, const char* rootless_value);

// Gives up the set-up's rights for good: Setuid, becomes the invoking user (gid, then uid,
// real/effective/saved) and verifies that root cannot be regained; Rootless, drops every
// capability. A no-op for a user who is root.
void drop_privileges(const UserIdentity& user);

// DNS relay endpoints for a caller whose resolvers are on loopback (see shell/dns_relay.hh).
struct DnsRelaySockets {
  std::vector<Ipv4> nameservers;          // the caller's loopback resolvers
  std::vector<Ipv4> upstreams;            // where the relay asks, one per nameserver (itself, or
                                          // a rootless shell's way out: kWayOutResolver)
  std::vector<FileDescriptor> inner_udp;  // one per nameserver, bound to nameserver:53 inside
  std::vector<FileDescriptor> inner_tcp;  // listening on nameserver:53 inside
  FileDescriptor inner_forward;           // inside: connected to outer_relay, through the link
  FileDescriptor outer_relay;             // outside: connected back to inner_forward

  bool active() const { return !nameservers.empty(); }
};

// Everything one shell adds to the system. Destroying it (and closing the TUN fds wherever
// they were passed) removes all of it.
struct ShellNetwork {
  AddressPair addresses;
  FileDescriptor slot_claim;       // holds the addresses against other shells; root's only:
                                   // closed in every child that drops privileges
  std::string outer_device;        // e.g. delay-1234, in the caller's namespace
  FileDescriptor outer_tun;        // the caller's side
  FileDescriptor inner_tun;        // "ingress", inside the new namespace
  bool offload = false;            // both TUN devices carry a virtio-net header
  std::string offload_refused;     // why not, if offloads were asked for and refused
  std::string offload_features;    // what the devices took, in words
  FileDescriptor inner_namespace;  // where the user's command runs
  FileDescriptor command_userns;   // rootless: the command's user namespace, entered first
  FileDescriptor intercepted;      // with intercept (mm-record): where the namespace's TCP connections go
  DnsRelaySockets dns;             // empty unless the caller's resolver is on loopback
  ForwardingGrant forwarding;      // destroyed first (slot_claim still open): the last clean-up step
};

constexpr const char* kInnerDevice = "ingress";

// The TCP of the servers in an isolated namespace (mm-replay --server-...): that namespace's own
// sysctls, which a user could set in a namespace of their own too. Empty/unset: the defaults the
// namespace inherits.
struct ServerTcpSettings {
  std::string congestion_control;             // net.ipv4.tcp_congestion_control
  std::optional<bool> slow_start_after_idle;  // net.ipv4.tcp_slow_start_after_idle
  // The initial congestion window in segments (0: the kernel's, 10): a route metric, so the
  // namespace gets "unreachable default initcwnd N", and each shell started inside copies it onto
  // its peer route, the route the servers' connections to the command take.
  uint32_t initial_window = 0;
  std::optional<int> ecn;  // net.ipv4.tcp_ecn: 0, 1 or 2 (mm-replay --tcp-ecn)
};
constexpr uint32_t kMaxInitialWindow = 1024;

// Creates the namespace, both TUN devices, addresses, routes, sysctls and NAT for a shell of
// the given kind (its device's name: shell_device_name). avoid is an address that must stay
// reachable (MAHIMAHI_BASE), never allocated.
// With `offload`, the TUN devices take and give TCP super-packets where the kernel can
// (ShellNetwork::offload says whether it could).
// With `intercept`, every TCP connection leaving the namespace goes to the listening socket
// ShellNetwork::intercepted (on the outer address; the accepted sockets' SO_ORIGINAL_DST is where
// the program connected), and if refuse_quic, UDP to port 443 is answered with ICMP port
// unreachable.
struct ShellNetworkOptions {
  bool offload = false;
  bool intercept = false;
  bool refuse_quic = true;
  std::optional<Ipv4> dns_upstream;  // ask this address for every loopback resolver (rootless way out)
  bool base_to_host = false;         // a rootless outside's: add_outside_base_redirect (nat.hh)
  // With base_to_host: resolvers at the host's own addresses, and where pasta takes their DNS.
  std::vector<Ipv4> host_resolvers;
  Ipv4 host_dns_forward;
  std::optional<int> tcp_ecn;     // net.ipv4.tcp_ecn of the new namespace: 0, 1 or 2 (unset: the kernel's)
  bool outermost = false;         // no other shell around this one (ForwardingGrant)
  ServerTcpSettings command_tcp;  // the new namespace's TCP (its ecn is tcp_ecn above)
};
ShellNetwork create_shell_network(ShellKind kind, const Ipv4Net& pool, std::optional<Ipv4> avoid,
                                  const ShellNetworkOptions& options);

// MAHIMAHI_OFFLOAD: unset or "1", TUN offloads where the kernel has them ("1": and say why
// not when it has not); "0", none (one packet per read and write, as before).
constexpr const char* kOffloadVariable = "MAHIMAHI_OFFLOAD";

// The priority for the ferry (before its threads start): nice -5, a little above the programs it
// carries, so that a packet due now is sent soon when other programs keep every core busy, without
// taking the CPU those programs need to send and receive -- but for a caller who is not root only
// as far as the caller's own RLIMIT_NICE (soft limit `nice_limit`) allows, or the administrator's
// ferry-nice setting (which may go further); otherwise kNoPriorityChange (the inherited
// priority). MAHIMAHI_REALTIME=0 keeps the inherited priority.
constexpr const char* kRealtimeVariable = "MAHIMAHI_REALTIME";
constexpr int kNoPriorityChange = 100;
int ferry_nice(const UserIdentity& user, const AdministratorConfig& config, rlim_t nice_limit);
int ferry_nice(const UserIdentity& user, const AdministratorConfig& config);  // the caller's RLIMIT_NICE
// Sets the calling process's nice value to `nice` if that raises its priority. Failure is not an error.
void raise_priority(int nice);

// Whether `name` is spelt as the kernel's congestion controls are (1-15 of a-z, 0-9, _).
bool is_congestion_control_name(std::string_view name);

// A namespace with no way out (mm-replay): only lo, up, with no address but 127.0.0.1/8 yet;
// ports below 1024 bindable by the user (the servers run with the user's rights); ping for all;
// the servers' TCP as `tcp` asks (UserError naming the choices the kernel allows if it refuses).
// The calling process stays in (returns to) its namespace; the new one is returned.
// Returns a ShellNetwork with only inner_namespace (and, rootless, command_userns) set.
ShellNetwork create_isolated_namespace(const ServerTcpSettings& tcp = {});

// Validates the addresses (check_isolated_addresses) and puts each one, as a /32, on lo of the
// namespace created by create_isolated_namespace(); the calling process stays in its own
// namespace. Nothing is added unless the whole list is valid.
void add_isolated_addresses(const ShellNetwork& net, const std::vector<Ipv4>& addresses);

// Moves the calling process into a namespace (needs CAP_SYS_ADMIN over it).
void enter_namespace(const FileDescriptor& ns);
// Moves the calling process into the namespace of the shell's command (rootless: its user
// namespace first), as the guard and an isolated shell's ferry do.
void enter_shell_namespace(const ShellNetwork& net);
