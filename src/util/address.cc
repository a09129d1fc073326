#include "address.hh"

#include <arpa/inet.h>
#include <ifaddrs.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "exception.hh"

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

std::optional<AddressPair> allocate_pair(const Ipv4Net& pool, const std::vector<Ipv4Net>& in_use) {
  if (pool.prefix > 30) return std::nullopt;
  uint64_t candidate = pool.first();
  const uint64_t end = static_cast<uint64_t>(pool.last()) + 1;
  while (candidate + 4 <= end) {
    const Ipv4Net slot{Ipv4{static_cast<uint32_t>(candidate)}, 30};
    uint64_t skip_to = 0;
    for (const auto& used : in_use) {
      if (used.overlaps(slot)) skip_to = std::max<uint64_t>(skip_to, static_cast<uint64_t>(used.last()) + 1);
    }
    if (skip_to == 0) return AddressPair{Ipv4{slot.first() + 1}, Ipv4{slot.first() + 2}};
    candidate = (skip_to + 3) & ~uint64_t{3};  // next aligned /30 past the conflict
  }
  return std::nullopt;
}

static int prefix_of_mask(uint32_t mask_host_order) {
  int n = 0;
  while (n < 32 && (mask_host_order & (0x80000000u >> n))) n++;
  return n;
}

std::vector<Ipv4Net> networks_in_use() {
  std::vector<Ipv4Net> nets;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw SystemError("getifaddrs");
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    Ipv4 addr = Ipv4::from_in_addr(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr);
    nets.push_back(Ipv4Net::of(addr, 32));
    if (i->ifa_netmask) {
      uint32_t mask = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr);
      int prefix = prefix_of_mask(mask);
      if (prefix > 0) nets.push_back(Ipv4Net::of(addr, prefix));
    }
    if (i->ifa_dstaddr && i->ifa_dstaddr->sa_family == AF_INET) {
      nets.push_back(Ipv4Net::of(Ipv4::from_in_addr(reinterpret_cast<sockaddr_in*>(i->ifa_dstaddr)->sin_addr), 32));
    }
  }
  freeifaddrs(list);

  // /proc/net/route: Iface Destination Gateway Flags RefCnt Use Metric Mask ... (hex, network order)
  std::ifstream routes("/proc/net/route");
  std::string line;
  std::getline(routes, line);  // header
  while (std::getline(routes, line)) {
    std::istringstream fields(line);
    std::string iface, dest_hex, gw_hex, flags, refcnt, use, metric, mask_hex;
    if (!(fields >> iface >> dest_hex >> gw_hex >> flags >> refcnt >> use >> metric >> mask_hex)) continue;
    uint32_t dest = static_cast<uint32_t>(std::stoul(dest_hex, nullptr, 16));
    uint32_t mask = static_cast<uint32_t>(std::stoul(mask_hex, nullptr, 16));
    int prefix = prefix_of_mask(ntohl(mask));
    if (prefix == 0) continue;  // the default route covers everything; it is not a conflict
    nets.push_back(Ipv4Net::of(Ipv4{ntohl(dest)}, prefix));
  }
  return nets;
}

Ipv4Net address_pool_from(const char* env_value) {
  std::string_view text = (env_value && *env_value) ? std::string_view(env_value) : kDefaultAddressPool;
  auto pool = Ipv4Net::parse(text);
  if (!pool || pool->prefix > 30) {
    throw UsageError(std::string(kAddressPoolVariable) + "=\"" + std::string(text) +
                     "\" is not a subnet of at least 4 addresses (expected e.g. 10.200.0.0/16)");
  }
  return *pool;
}
