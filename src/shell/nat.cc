// SPDX-License-Identifier: GPL-3.0-or-later
// Shells' NAT in the shared nftables table (see nat.hh).
#include "shell/nat.hh"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <netinet/in.h>

#include <stdexcept>

#include "util/file_descriptor.hh"

using nft::Bytes;
using nft::Rule;

std::string shell_device_name(ShellKind kind, pid_t pid) {
  for (const auto& [k, name] : kShellKinds) {
    if (k == kind) return std::string(name) + "-" + std::to_string(pid);
  }
  throw std::logic_error("a shell kind missing from kShellKinds");
}

bool is_shell_device_name(std::string_view name) {
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash + 1 == name.size() ||
      name.find_first_not_of("0123456789", dash + 1) != std::string_view::npos)
    return false;
  for (const auto& [unused, kind] : kShellKinds) {
    if (name.substr(0, dash) == kind) return true;
  }
  return false;
}

void add_nat_definitions(nft::Transaction& t) {
  using namespace nft;
  t.add_set("inners", kIpv4Type, 4);
  t.add_set("own_paths", concatenation(kIpv4Type, kIfnameType), 4 + 16);
  t.add_set("intercepts", concatenation(kIfnameType, kIpv4Type), 16 + 4, concatenation(kIpv4Type, kServiceType), 4 + 4);
  t.add_set("quic_refused", kIfnameType, 16);
  t.add_set("listeners", concatenation(kIpv4Type, kServiceType), 4 + 4);

  // ip saddr . oifname @own_paths return; ip saddr @inners masquerade
  t.add_base_chain("postrouting", "nat", NF_INET_POST_ROUTING, 100);  // srcnat
  Rule own_path;
  own_path.payload(NFT_PAYLOAD_NETWORK_HEADER, 12, 4, kReg1)
      .meta(NFT_META_OIFNAME, kReg32_01)
      .lookup(kReg1, "own_paths")
      .verdict(NFT_RETURN);
  t.add_rule("postrouting", own_path);
  Rule masquerade;
  masquerade.payload(NFT_PAYLOAD_NETWORK_HEADER, 12, 4, kReg1).lookup(kReg1, "inners").masquerade();
  t.add_rule("postrouting", masquerade);

  // meta l4proto tcp dnat ip to iifname . ip saddr map @intercepts
  t.add_base_chain("prerouting", "nat", NF_INET_PRE_ROUTING, -100);  // dstnat
  const uint8_t tcp = IPPROTO_TCP;
  Rule intercept;
  intercept.meta(NFT_META_L4PROTO, kReg1)
      .equals(kReg1, &tcp, 1)
      .meta(NFT_META_IIFNAME, kReg1)
      .payload(NFT_PAYLOAD_NETWORK_HEADER, 12, 4, kReg2)
      .map(kReg1, "intercepts", kReg1)
      .dnat(kReg1, kReg32_01);
  t.add_rule("prerouting", intercept);

  // iifname @quic_refused udp dport 443 reject: browsers fall back from QUIC to TCP at once
  // when UDP/443 is refused (ICMP port unreachable).
  t.add_base_chain("quic", "filter", NF_INET_FORWARD, 0);
  const uint8_t udp = IPPROTO_UDP;
  const uint16_t https = htons(443);
  Rule refuse;
  refuse.meta(NFT_META_IIFNAME, kReg1)
      .lookup(kReg1, "quic_refused")
      .meta(NFT_META_L4PROTO, kReg1)
      .equals(kReg1, &udp, 1)
      .payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, kReg1)
      .equals(kReg1, &https, 2)
      .reject_port_unreachable();
  t.add_rule("quic", refuse);

  // meta l4proto tcp ip daddr . tcp dport @listeners ct status & dnat == 0 reject: an interception
  // listener (on the shell's outer address, where every local user can connect) takes only the
  // connections the rule above redirected to it from its shell; anyone else's is refused.
  t.add_base_chain("listeners_in", "filter", NF_INET_LOCAL_IN, 0);
  const uint32_t zero = 0;
  Rule direct;
  direct.meta(NFT_META_L4PROTO, kReg1)
      .equals(kReg1, &tcp, 1)
      .payload(NFT_PAYLOAD_NETWORK_HEADER, 16, 4, kReg1)
      .payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, kReg32_01)
      .lookup(kReg1, "listeners")
      .ct(NFT_CT_STATUS, kReg1)
      .bitwise_and(kReg1, IPS_DST_NAT)
      .equals(kReg1, &zero, 4)
      .reject_port_unreachable();
  t.add_rule("listeners_in", direct);
}

void add_nat_elements(nft::Transaction& t, bool add, const ShellEntry& entry, bool name_keyed) {
  const auto element = [&](const char* set, const Bytes& key, const Bytes* value = nullptr) {
    if (add) {
      t.add_element(set, key, value);
    } else {
      t.delete_element(set, key);
    }
  };
  element("inners", Bytes().ipv4(entry.inner));
  element("own_paths", Bytes().ipv4(entry.inner).ifname(entry.device));
  if (entry.intercept) {
    const Bytes to = Bytes().ipv4(entry.intercept->outer).port(entry.intercept->port);
    element("intercepts", Bytes().ifname(entry.device).ipv4(entry.inner), &to);
    element("listeners", to);
    if (entry.intercept->refuse_quic && name_keyed) element("quic_refused", Bytes().ifname(entry.device));
  }
}

void add_outside_base_redirect(const std::string& device, Ipv4 outer, uint16_t relay_port,
                               const std::vector<Ipv4>& host_resolvers, Ipv4 forward_to) {
  using namespace nft;
  // A packet to 127.0.0.1 that came in on the device is a martian unless route_localnet is on.
  write_existing_file("/proc/sys/net/ipv4/conf/" + device + "/route_localnet", "1");
  nft::Transaction t("mahimahi_outside");
  t.create_table();
  t.add_base_chain("prerouting", "nat", NF_INET_PRE_ROUTING, -110);  // before dstnat's -100
  const Bytes name = Bytes().ifname(device);
  const Bytes address = Bytes().ipv4(outer);
  const Bytes loopback = Bytes().ipv4(*Ipv4::parse("127.0.0.1"));
  // iifname DEVICE ip daddr TO
  auto from_the_shell_to = [&](Rule& rule, const Bytes& to) -> Rule& {
    return rule.meta(NFT_META_IIFNAME, kReg1)
        .equals(kReg1, name.data, name.size)
        .payload(NFT_PAYLOAD_NETWORK_HEADER, 16, 4, kReg1)
        .equals(kReg1, to.data, 4);
  };
  if (relay_port) {
    // iifname DEVICE ip daddr OUTER udp dport RELAY accept
    const uint8_t udp = IPPROTO_UDP;
    const uint16_t port = htons(relay_port);
    Rule relay;
    from_the_shell_to(relay, address)
        .meta(NFT_META_L4PROTO, kReg1)
        .equals(kReg1, &udp, 1)
        .payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, kReg1)
        .equals(kReg1, &port, 2)
        .verdict(NF_ACCEPT);
    t.add_rule("prerouting", relay);
  }
  for (const uint8_t protocol : {uint8_t{IPPROTO_TCP}, uint8_t{IPPROTO_UDP}}) {
    // iifname DEVICE ip daddr OUTER meta l4proto PROTOCOL dnat ip to 127.0.0.1
    Rule redirect;
    from_the_shell_to(redirect, address)
        .meta(NFT_META_L4PROTO, kReg1)
        .equals(kReg1, &protocol, 1)
        .immediate(kReg1, loopback.data, 4)
        .dnat(kReg1, kVerdict);
    t.add_rule("prerouting", redirect);
  }
  // iifname DEVICE ip daddr RESOLVER meta l4proto PROTOCOL th dport 53 dnat ip to FORWARD_TO
  const Bytes forwarded = Bytes().ipv4(forward_to);
  const uint16_t dns = htons(53);
  for (const Ipv4 resolver : host_resolvers) {
    for (const uint8_t protocol : {uint8_t{IPPROTO_TCP}, uint8_t{IPPROTO_UDP}}) {
      Rule to_host_resolver;
      from_the_shell_to(to_host_resolver, Bytes().ipv4(resolver))
          .meta(NFT_META_L4PROTO, kReg1)
          .equals(kReg1, &protocol, 1)
          .payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, kReg1)
          .equals(kReg1, &dns, 2)
          .immediate(kReg1, forwarded.data, 4)
          .dnat(kReg1, kVerdict);
      t.add_rule("prerouting", to_host_resolver);
    }
  }
  // ... and seems to come from the outside's loopback too: pasta forwards only connections
  // made on the namespace's loopback (iifname DEVICE ip daddr 127.0.0.1 snat ip to 127.0.0.1).
  t.add_base_chain("input", "nat", NF_INET_LOCAL_IN, 100);  // srcnat
  Rule from_loopback;
  from_the_shell_to(from_loopback, loopback).immediate(kReg1, loopback.data, 4).snat(kReg1);
  t.add_rule("input", from_loopback);
  if (t.commit() != 0) throw std::runtime_error("adding the outside's redirection of MAHIMAHI_BASE to the host");
}
