// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// IPv4 addresses, subnets and socket addresses: parsing, printing and comparing.
#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct Ipv4 {
  uint32_t value = 0;  // host byte order

  static std::optional<Ipv4> parse(std::string_view text);
  std::string str() const;
  in_addr to_in_addr() const;
  static Ipv4 from_in_addr(in_addr a);
  bool operator==(const Ipv4&) const = default;
};

// A socket address for address:port.
sockaddr_in socket_address(Ipv4 address, uint16_t port);
// "a.b.c.d:PORT" (port 1 to 65535, or 0 too when `port_zero` is allowed: "any"), at most 64
// characters; nullopt otherwise.
std::optional<sockaddr_in> parse_ipv4_endpoint(std::string_view text, bool port_zero = false);

struct Ipv4Net {
  Ipv4 base;        // first address (host bits cleared)
  int prefix = 32;  // 0..32

  // "a.b.c.d/n" (host bits must be zero) or "a.b.c.d" (a /32).
  static std::optional<Ipv4Net> parse(std::string_view text);
  static Ipv4Net of(Ipv4 addr, int prefix);  // clears host bits
  uint32_t first() const { return base.value; }
  uint32_t last() const { return base.value | host_mask(); }
  uint32_t host_mask() const { return prefix == 0 ? 0xffffffffu : (prefix == 32 ? 0 : (1u << (32 - prefix)) - 1); }
  bool contains(Ipv4 a) const { return a.value >= first() && a.value <= last(); }
  bool overlaps(const Ipv4Net& o) const { return first() <= o.last() && o.first() <= last(); }
  std::string str() const;
};
