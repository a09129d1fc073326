// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The addresses of a new shell: the pool they come from (MAHIMAHI_ADDRESS_POOL), the policy on
// which pools a user may choose, and a free /30 of it that this network namespace does not use.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/address.hh"

// Each shell uses one aligned /30 of the pool: .1 outside (the host side), .2 inside.
struct AddressPair {
  Ipv4 outer;
  Ipv4 inner;
};

constexpr std::string_view kDefaultAddressPool = "100.64.0.0/10";
constexpr const char* kAddressPoolVariable = "MAHIMAHI_ADDRESS_POOL";

// First /30 of pool that overlaps none of in_use; nullopt if the pool is exhausted.
std::optional<AddressPair> allocate_pair(const Ipv4Net& pool, const std::vector<Ipv4Net>& in_use);

// Every address and subnet this network namespace already uses or talks to: interface addresses
// with their subnets and peers; every route of every routing table but the default ones, and the
// gateways of all (default routes included); the resolvers of /etc/resolv.conf. A shell must
// take none of these: its route would divert them.
std::vector<Ipv4Net> networks_in_use();

// The pool named by MAHIMAHI_ADDRESS_POOL (value given), or the default 100.64.0.0/10.
// Throws UsageError for a malformed value or a pool smaller than a /30.
Ipv4Net address_pool_from(const char* env_value);

// Private and shared address space (10/8, 172.16/12, 192.168/16, 100.64/10): the only ranges
// an ordinary user's shells take addresses from, unless the administrator allows more.
const std::vector<Ipv4Net>& private_address_space();

// Checks that a shell may take its addresses from pool: nobody may use 0/8, loopback, link-local,
// multicast or reserved space (240/4, broadcast); a caller who is not root must stay inside
// private_address_space() or one of administrator_pools (from the root-owned configuration file
// named in config_path). Throws UserError naming the pool and the fix.
void check_address_pool(const Ipv4Net& pool, bool caller_is_root, const std::vector<Ipv4Net>& administrator_pools,
                        const std::string& config_path);
