// SPDX-License-Identifier: GPL-3.0-or-later
// The addresses of a new shell: the pool they come from, who may use which pool, and the
// choice of a /30 that nothing in this network namespace already uses (see address_pool.hh).
#include "shell/address_pool.hh"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "shell/resolv_conf.hh"
#include "shell/route_table.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

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

namespace {

int prefix_of_mask(uint32_t mask_host_order) {
  int n = 0;
  while (n < 32 && (mask_host_order & (0x80000000u >> n))) n++;
  return n;
}

void add_interface_addresses(std::vector<Ipv4Net>& nets) {
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
}

// Every IPv4 route of every table (policy routing included: VPNs such as Tailscale and WireGuard
// keep theirs outside the main table).
void add_routes(std::vector<Ipv4Net>& nets) {
  for_each_ipv4_route([&](const rtmsg& route, const rtattr* first, int attributes_length) {
    for (const rtattr* attribute = first; RTA_OK(attribute, attributes_length);
         attribute = RTA_NEXT(attribute, attributes_length)) {
      if (attribute->rta_type == RTA_DST && RTA_PAYLOAD(attribute) >= 4 && route.rtm_dst_len > 0) {
        nets.push_back(Ipv4Net::of(ipv4_attribute(attribute), route.rtm_dst_len));
      } else if ((attribute->rta_type == RTA_GATEWAY || attribute->rta_type == RTA_PREFSRC) &&
                 RTA_PAYLOAD(attribute) >= 4) {
        nets.push_back(Ipv4Net::of(ipv4_attribute(attribute), 32));
      } else if (attribute->rta_type == RTA_MULTIPATH) {
        auto* hop = static_cast<const rtnexthop*>(RTA_DATA(attribute));
        int hops_length = static_cast<int>(RTA_PAYLOAD(attribute));
        while (RTNH_OK(hop, hops_length)) {
          int hop_attributes_length = static_cast<int>(hop->rtnh_len) - static_cast<int>(sizeof(rtnexthop));
          for (const rtattr* a = RTNH_DATA(hop); RTA_OK(a, hop_attributes_length);
               a = RTA_NEXT(a, hop_attributes_length)) {
            if (a->rta_type == RTA_GATEWAY && RTA_PAYLOAD(a) >= 4) nets.push_back(Ipv4Net::of(ipv4_attribute(a), 32));
          }
          hops_length -= static_cast<int>(RTNH_ALIGN(hop->rtnh_len));
          hop = RTNH_NEXT(hop);
        }
      }
    }
    // A default route covers everything and is no conflict, but its gateway (added above) is.
  });
}

// The resolvers this namespace's programs ask, often reached through the default route.
void add_resolvers(std::vector<Ipv4Net>& nets) {
  for (Ipv4 resolver : resolv_conf_nameservers(read_resolv_conf())) nets.push_back(Ipv4Net::of(resolver, 32));
}

struct NamedNet {
  const char* text;
  const char* what;
};

Ipv4Net net_of(const char* text) { return *Ipv4Net::parse(text); }

}  // namespace

std::vector<Ipv4Net> networks_in_use() {
  std::vector<Ipv4Net> nets;
  add_interface_addresses(nets);
  add_routes(nets);
  add_resolvers(nets);
  std::sort(nets.begin(), nets.end(), [](const Ipv4Net& a, const Ipv4Net& b) {
    return a.base.value != b.base.value ? a.base.value < b.base.value : a.prefix < b.prefix;
  });
  nets.erase(std::unique(nets.begin(), nets.end(),
                         [](const Ipv4Net& a, const Ipv4Net& b) { return a.base == b.base && a.prefix == b.prefix; }),
             nets.end());
  return nets;
}

const std::vector<Ipv4Net>& private_address_space() {
  static const std::vector<Ipv4Net> space{net_of("10.0.0.0/8"), net_of("172.16.0.0/12"), net_of("192.168.0.0/16"),
                                          net_of("100.64.0.0/10")};
  return space;
}

void check_address_pool(const Ipv4Net& pool, bool caller_is_root, const std::vector<Ipv4Net>& administrator_pools,
                        const std::string& config_path) {
  static const NamedNet kNever[] = {{"0.0.0.0/8", "\"this network\" (0.0.0.0/8)"},
                                    {"127.0.0.0/8", "loopback"},
                                    {"169.254.0.0/16", "link-local space (cloud metadata lives there)"},
                                    {"224.0.0.0/4", "multicast space"},
                                    {"240.0.0.0/4", "reserved space and the broadcast address"}};
  const std::string named = std::string(kAddressPoolVariable) + "=" + pool.str();
  for (const NamedNet& never : kNever) {
    if (pool.overlaps(net_of(never.text))) {
      throw UserError(named + " is refused: it covers " + never.what +
                      ", which no shell may take; choose a range such as 10.200.0.0/16");
    }
  }
  if (caller_is_root) return;
  auto inside = [&](const Ipv4Net& range) { return range.first() <= pool.first() && pool.last() <= range.last(); };
  if (std::any_of(private_address_space().begin(), private_address_space().end(), inside)) return;
  if (std::any_of(administrator_pools.begin(), administrator_pools.end(), inside)) return;
  throw UserError(
      named +
      " is refused: an ordinary user's shells take their addresses only from private or shared address space "
      "(10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10), where they cannot divert the host's "
      "traffic to public addresses, or from ranges the administrator allows with allow-address-pool in " +
      config_path + "; choose a range such as 10.200.0.0/16");
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
