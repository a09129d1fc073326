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
//
// That table, "mahimahi" (family ip), is the only one shells make: the chains and sets are made
// by the first shell, and each shell adds and deletes only its elements (nat.hh), one small
// transaction each, so the work under the namespace's lock costs the same with 1 shell or 1000.
// Its map "slots" tells which device holds each inner address (its name and index, and its
// owner): a shell that died without cleaning up (SIGKILL) is cleaned up by the next shell that
// takes its address slot, or removed with the table by the last shell to leave; every element is
// added exclusively, and a dead shell's are deleted by its identity, never a live namesake's
// (ShellEntry). Its output chain lets only a shell's owner and root open connections into it from
// the caller's namespace (sets "guarded" and "owners").
#include <sys/types.h>

#include <string>

#include "shell/nat.hh"
#include "util/file_descriptor.hh"

// The namespace's lock file, /run/mahimahi/netns-<inode of its network namespace>.lock (root's
// only): flock() on the whole file guards the forwarding state; one-byte OFD locks claim address
// slots (claim_address_slot). Never hand its descriptor to an unprivileged process.
// Rootless shells keep it in a directory of the user's (rootless_state_directory), set here.
constexpr const char* kStateDirectory = "/run/mahimahi";
void use_rootless_state_directory(const std::string& directory);
// Where this shell keeps its state: kStateDirectory, or the rootless one.
std::string state_directory();
// Removes the lock files (root's directory, or the rootless one) that no shell uses, left by
// shells killed before their clean-up (during their set-up, or with their namespace: an
// outermost rootless shell's dies with it), as the last shell of a namespace removes its file;
// one in use is left alone. Every shell's clean-up runs it, and a rootless shell's start.
void remove_unused_lock_files();
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

// The shared table's name (family ip).
constexpr const char* kSharedTable = "mahimahi";

// Call in the caller's namespace, after the shell's TUN device exists; slot_claim is the shell's
// claim on its addresses (claim_slot), by which shells tell whether others are alive, and
// entry.inner is its slot's inner address. Adds the shell's elements, with the table if it is the
// first, in one nftables transaction. All or nothing: if it throws, nothing remains to be closed.
void open_forwarding(const ShellEntry& entry, int slot_claim);
// Undoes open_forwarding for this shell (one transaction, deleting its elements); the last shell
// restores the namespace's settings and deletes the table. Releases the claim (slot_claim stays
// open): the shell's addresses are free again from then on.
void close_forwarding(const ShellEntry& entry, int slot_claim);
// close_forwarding after an interrupted open_forwarding, without waiting: if another shell of
// the namespace holds the lock, nothing (what the killed set-up made is left to the next shell
// on these addresses, or with the table to the last shell; the file to the last shell's end).
void close_forwarding_unless_busy(const ShellEntry& entry, int slot_claim);
