// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Source NAT for a shell's inner address, as one nftables table per shell.
// The table is named after the shell's outer TUN device; a table whose device no longer
// exists belonged to a shell that died without cleaning up (SIGKILL) and is removed by the
// next shell that starts in the same namespace. Only root helpers (privileged.hh) run nftables.
#include <cstdint>
#include <string>
#include <vector>

#include "util/address.hh"

// The name of the NAT table of the shell whose outer device is `device`: mahimahi_<kind>_<pid>.
std::string nat_table_name(const std::string& device);

// The nft commands that add that table, masquerading packets from `inner` that leave by any
// interface but `device`. Run with the shell's other rules, in one transaction (forwarding.hh).
std::string nat_table_script(const std::string& device, Ipv4 inner);

// The nft commands that add to that table: every TCP connection from `inner` arriving on `device`
// goes to outer:port (a listening socket of the shell's), and if refuse_quic, UDP to port 443 is
// answered with ICMP port unreachable.
std::string intercept_script(const std::string& device, Ipv4 inner, Ipv4 outer, uint16_t port, bool refuse_quic);

// Deletes every mahimahi_* table of this namespace whose device is gone; returns their names.
std::vector<std::string> remove_stale_nat_tables();

// Runs one nft script with libnftables, in a root helper (std::logic_error elsewhere); throws
// std::runtime_error with nft's message.
std::string run_nft(const std::string& script);
