// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Source NAT for shells' inner addresses, and mm-record's interception, as sets and maps of the
// namespace's one shared nftables table (forwarding.hh): its chains are made once, by the first
// shell, and each shell adds and deletes only its own elements, so a shell's set-up and clean-up
// cost the same however many shells run. Only root helpers (privileged.hh) use nftables.
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "shell/nftables.hh"
#include "util/address.hh"

// mm-record's redirection: every TCP connection from the shell's inner address arriving on its
// device goes to outer:port (a listening socket of the shell's), and if refuse_quic, UDP to port
// 443 is answered with ICMP port unreachable.
struct Intercept {
  Ipv4 outer;
  uint16_t port = 0;
  bool refuse_quic = false;
};

// The kinds of shell with an outer device. Each names its device <kind>-<supervisor's pid>
// (shell_device_name), and the shared table tells shells' devices from the host's by that name
// (is_shell_device_name): this list is the only one.
enum class ShellKind { Delay, Loss, OnOff, Intermittent, Link, Meter, Record, Cumulus, Paths, Eth };
inline constexpr std::array<std::pair<ShellKind, std::string_view>, 10> kShellKinds = {{
    {ShellKind::Delay, "delay"},
    {ShellKind::Loss, "loss"},
    {ShellKind::OnOff, "onoff"},
    {ShellKind::Intermittent, "inter"},
    {ShellKind::Link, "link"},
    {ShellKind::Meter, "meter"},
    {ShellKind::Record, "record"},
    {ShellKind::Cumulus, "cumulus"},
    {ShellKind::Paths, "paths"},
    {ShellKind::Eth, "eth"},
}};
std::string shell_device_name(ShellKind kind, pid_t pid);
// Whether `name` is spelt as a shell's device (a kind of kShellKinds, a dash, a number).
bool is_shell_device_name(std::string_view name);

// What one shell adds to the shared table. Its elements are keyed by its device's name or index
// and its inner address, and the inner address is its slot's (claim_address_slot): whoever holds
// the slot owns the elements of that address. A name can be a dead shell's too (another pid
// namespace's, or a pid used again), never an index (the kernel numbers a namespace's devices in
// turn and reuses no number before 2^31): the slot keeps both, so that what a dead shell left is
// told from what a live one has.
struct ShellEntry {
  std::string device;    // the outer TUN device, e.g. delay-1234
  uint32_t ifindex = 0;  // its index
  Ipv4 inner;
  std::optional<Intercept> intercept;
  // Whose shell it is (the caller's real uid), if only that user and root may open connections
  // into it from the caller's namespace (not rootless shells: their namespaces are the user's).
  std::optional<uid_t> owner;
};

// Adds the NAT part of the shared table to transaction: its sets, maps and chains. Packets
// from a shell's inner address are masqueraded unless they leave by the shell's own device;
// mm-record's TCP is redirected to its socket (map intercepts); UDP/443 from a device in
// quic_refused is refused.
void add_nat_definitions(nft::Transaction& transaction);

// Adds to transaction the additions (add) or the deletions (!add) of the shell's NAT elements;
// without name_keyed, not those keyed by its device's name alone (quic_refused), which another
// shell of that name may hold now.
void add_nat_elements(nft::Transaction& transaction, bool add, const ShellEntry& entry, bool name_keyed = true);

// A rootless shell's outside (shell/rootless.hh): TCP and UDP the shell sends to its outer
// address (MAHIMAHI_BASE) go to the outside's loopback instead, where pasta forwards each port
// to the same port of the host's loopback, as the setuid shells' MAHIMAHI_BASE reaches the
// host's servers. Its own table, mahimahi_outside, in the outside's namespace (gone with it);
// its chain comes before the shared table's (mm-record's redirection sees what it left). Not
// `relay_port` (UDP, if not 0): the shell's DNS relay listens there (shell/dns_relay.hh).
// DNS (port 53, UDP and TCP) the shell sends to one of `host_resolvers` (resolvers at the host's
// own addresses, which pasta gives the outside too, so that they would answer there) goes to
// `forward_to` instead, which pasta forwards to the host's resolver (--dns-forward).
void add_outside_base_redirect(const std::string& device, Ipv4 outer, uint16_t relay_port,
                               const std::vector<Ipv4>& host_resolvers = {}, Ipv4 forward_to = {});
