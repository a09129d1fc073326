// SPDX-License-Identifier: GPL-3.0-or-later
// IPv4 addresses and subnets (see address.hh).
#include "util/address.hh"

#include <arpa/inet.h>

#include <charconv>

std::optional<Ipv4> Ipv4::parse(std::string_view text) {
  in_addr a{};
  std::string s(text);
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
  return from_in_addr(a);
}

std::string Ipv4::str() const {
  char buf[INET_ADDRSTRLEN];
  in_addr a = to_in_addr();
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

in_addr Ipv4::to_in_addr() const { return in_addr{htonl(value)}; }
Ipv4 Ipv4::from_in_addr(in_addr a) { return Ipv4{ntohl(a.s_addr)}; }

sockaddr_in socket_address(Ipv4 address, uint16_t port) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr = address.to_in_addr();
  sin.sin_port = htons(port);
  return sin;
}

Ipv4Net Ipv4Net::of(Ipv4 addr, int prefix) {
  Ipv4Net n{addr, prefix};
  n.base.value &= ~n.host_mask();
  return n;
}

std::optional<Ipv4Net> Ipv4Net::parse(std::string_view text) {
  auto slash = text.find('/');
  auto addr = Ipv4::parse(text.substr(0, slash));
  if (!addr) return std::nullopt;
  int prefix = 32;
  if (slash != std::string_view::npos) {
    auto digits = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || prefix < 0 || prefix > 32)
      return std::nullopt;
  }
  Ipv4Net net = of(*addr, prefix);
  if (net.base != *addr) return std::nullopt;  // host bits set: probably a typo
  return net;
}

std::string Ipv4Net::str() const { return base.str() + "/" + std::to_string(prefix); }

std::optional<sockaddr_in> parse_ipv4_endpoint(std::string_view text, bool port_zero) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= text.size() || text.size() > 64)
    return std::nullopt;
  const std::optional<Ipv4> address = Ipv4::parse(text.substr(0, colon));
  const std::string_view port = text.substr(colon + 1);
  if (!address || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  const unsigned long value = std::stoul(std::string(port));
  if (value > 65535 || (value == 0 && !port_zero)) return std::nullopt;
  return socket_address(*address, static_cast<uint16_t>(value));
}
