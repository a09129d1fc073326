// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// IPv4 forwarding for shells, without making the host a router. Only the privileged set-up uses
// this, and only in a root helper process the user cannot signal (see run_root_helper).
//
// A shell's packets enter the caller's namespace on its outer TUN device and its replies on
// whichever device they come back through; Linux forwards a packet only if forwarding is on for
// the device it came in on (net.ipv4.conf.DEV.forwarding; net.ipv4.ip_forward switches every
// device at once). So a shell switches forwarding on for its own TUN device and for each other
// device where it was off ("opened" devices), never globally, and one shared nftables table,
// mahimahi_forward, drops every forwarded packet that came in on an opened device unless it is a
// reply (or an ICMP error) to a connection of a shell, going into that shell: the host forwards
// nothing between its own networks that it did not forward before, and nothing from them into
// a shell that the shell did not ask for. The last shell of the namespace to leave switches the opened
// devices back off and removes the table; the table itself records which devices were opened
// and which shells are alive, so that nothing outlives the namespace.
#include <sys/types.h>

#include <string>

#include "util/file_descriptor.hh"

// The namespace's lock file, /run/mahimahi/netns-<inode of its network namespace>.lock (root's
// only): flock() on the whole file guards the forwarding state; one-byte OFD locks claim address
// slots (claim_address_slot). Never hand its descriptor to an unprivileged process.
constexpr const char* kStateDirectory = "/run/mahimahi";
std::string namespace_lock_path();
FileDescriptor open_namespace_lock_file();
// Claims address slot `index` of the namespace: an OFD write lock on that byte of the lock file,
// taken without waiting for other shells. Returns the descriptor holding it (the claim lasts as
// long as the descriptor), or an invalid one if another shell holds the slot. The last shell of
// the namespace removes the file (close_forwarding); a claim never lands in a removed file.
FileDescriptor claim_address_slot(off_t index);

// Serialises the shells of one network namespace while they change the shared forwarding
// state. Held only by a root helper process; waiting for it gives up after kLockTimeoutSeconds.
constexpr unsigned kLockTimeoutSeconds = 10;

// Call in the caller's namespace, after the shell's TUN device exists; slot_claim is the shell's
// claim on its addresses (claim_slot), by which shells tell whether others are alive. nat_script
// (nat.hh) adds the shell's own table, nat_table, in the same nftables transaction. All or
// nothing: if it throws, nothing remains to be closed.
void open_forwarding(const std::string& shell_device, int slot_claim, const std::string& nat_table,
                     const std::string& nat_script);
// Undoes open_forwarding for this shell, and deletes its NAT table (if not empty) in the same
// nftables transaction; the last shell restores the namespace's settings. Releases the claim
// (slot_claim stays open): the shell's addresses are free again from then on.
void close_forwarding(const std::string& shell_device, int slot_claim, const std::string& nat_table);
