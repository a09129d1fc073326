// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The resolvers named by /etc/resolv.conf, read the way each part of a shell needs them: all of
// them (addresses a new shell must not take), the loopback ones (relayed into a shell's
// namespace) and the ones the C library asks (to exist in mm-replay's namespace).
#include <string>
#include <vector>

#include "util/address.hh"

constexpr const char* kResolvConfPath = "/etc/resolv.conf";

// The text of /etc/resolv.conf; empty if there is none (or it cannot be read).
std::string read_resolv_conf();

// The IPv4 addresses of the "nameserver" lines of a resolv.conf text, in order.
std::vector<Ipv4> resolv_conf_nameservers(const std::string& text);

// The nameserver addresses of a resolv.conf text that are on loopback (at most three, as glibc).
std::vector<Ipv4> loopback_nameservers(const std::string& text);
// The nameservers (at most 3) of `text` that are not loopback but an address of the current
// network namespace (a machine that runs its own DNS server on its LAN address).
std::vector<Ipv4> own_address_nameservers(const std::string& text);

// The IPv4 resolvers the C library asks: those among the first three "nameserver" lines
// (glibc reads no more); 127.0.0.1 if there is no nameserver line at all.
std::vector<Ipv4> c_library_resolvers(const std::string& text);
