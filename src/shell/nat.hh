// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Source NAT for shells' inner addresses, and mm-record's interception, as sets and maps of the
// namespace's one shared nftables table (forwarding.hh): its chains are made once, by the first
// shell, and each shell adds and deletes only its own elements, so a shell's set-up and clean-up
// cost the same however many shells run. Only root helpers (privileged.hh) run nftables.
#include <cstdint>
#include <optional>
#include <string>

#include "util/address.hh"

// mm-record's redirection: every TCP connection from the shell's inner address arriving on its
// device goes to outer:port (a listening socket of the shell's), and if refuse_quic, UDP to port
// 443 is answered with ICMP port unreachable.
struct Intercept {
  Ipv4 outer;
  uint16_t port = 0;
  bool refuse_quic = false;
};

// What one shell adds to the shared table. Its elements are keyed by its device and its inner
// address, and the inner address is its slot's (claim_address_slot): whoever holds the slot
// owns the elements of that address.
struct ShellEntry {
  std::string device;  // the outer TUN device, e.g. delay-1234
  Ipv4 inner;
  std::optional<Intercept> intercept;
};

// The nft commands that add the NAT part of table `table` (in family ip): its sets, maps and
// chains. Packets from a shell's inner address are masqueraded unless they leave by the shell's
// own device.
std::string nat_definitions(const std::string& table);

// The nft commands that add (verb "add") or delete ("delete") the shell's NAT elements.
std::string nat_elements(const std::string& verb, const std::string& table, const ShellEntry& entry);

// Loads libnftables now (a root helper does so before it takes a lock); throws what run_nft would.
void load_nftables();

// Runs one nft script with libnftables as one transaction, in a root helper (std::logic_error
// elsewhere); throws std::runtime_error with nft's message.
std::string run_nft(const std::string& script);
