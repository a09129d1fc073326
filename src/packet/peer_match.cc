// SPDX-License-Identifier: GPL-3.0-or-later
// A packet's peer in a table of them (peer_match.hh).
#include "packet/peer_match.hh"

#include <algorithm>
#include <charconv>

#include "util/address.hh"
#include "util/byte_order.hh"
#include "util/exception.hh"
#include "util/text.hh"

PeerAddress parse_peer_address(std::string_view text, const std::string& where) {
  const std::string fix = " (write ADDRESS, ADDRESS/LEN or either with :PORT, e.g. 10.0.0.0/8 or 203.0.113.7:443)";
  PeerAddress peer;
  std::string_view net = text;
  if (const size_t colon = text.find(':'); colon != std::string_view::npos) {
    net = text.substr(0, colon);
    const std::string_view port = text.substr(colon + 1);
    unsigned value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || error != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
      throw UserError(where + ": \"" + printable(port, 20) + "\" is not a port from 1 to 65535" + fix);
    peer.port = static_cast<uint16_t>(value);
  }
  const auto parsed = Ipv4Net::parse(net);
  if (!parsed) throw UserError(where + ": \"" + printable(net, 40) + "\" is not an IPv4 address or prefix" + fix);
  peer.address = parsed->base.value;
  peer.prefix = parsed->prefix;
  return peer;
}

void PeerMatch::add(const PeerAddress& peer, uint32_t value) {
  if (peer.prefix == 32) {
    exact_.push_back({uint64_t{peer.address} << 17 | (peer.port ? 1u << 16 : 0u) | peer.port, value});
  } else {
    const uint32_t mask = peer.prefix == 0 ? 0 : ~uint32_t{0} << (32 - peer.prefix);
    prefixes_.push_back({peer.address, mask, peer.port, value});
  }
}

void PeerMatch::finish() {
  std::stable_sort(exact_.begin(), exact_.end(), [](const Exact& a, const Exact& b) { return a.key < b.key; });
  exact_.erase(std::unique(exact_.begin(), exact_.end(), [](const Exact& a, const Exact& b) { return a.key == b.key; }),
               exact_.end());
  std::stable_sort(prefixes_.begin(), prefixes_.end(), [](const Prefix& a, const Prefix& b) {
    if (a.mask != b.mask) return a.mask > b.mask;  // longer prefix first (masks compare as lengths)
    return (a.port != 0) > (b.port != 0);
  });
}

uint32_t PeerMatch::classify(std::span<const uint8_t> p, bool by_destination, uint32_t otherwise) const {
  if (p.size() < 20 || (p[0] >> 4) != 4) return otherwise;
  const uint32_t address = load_be32(&p[by_destination ? 16 : 12]);
  uint16_t port = 0;
  const size_t header = (p[0] & 0xfu) * 4u;
  const bool first_fragment = (load_be16(&p[6]) & 0x1fff) == 0;
  if ((p[9] == 6 || p[9] == 17 || p[9] == 132) && first_fragment && p.size() >= header + 4)
    port = load_be16(&p[header + (by_destination ? 2 : 0)]);
  if (!exact_.empty()) {
    auto find = [&](uint64_t key) -> const Exact* {
      auto it =
          std::lower_bound(exact_.begin(), exact_.end(), key, [](const Exact& e, uint64_t k) { return e.key < k; });
      return it != exact_.end() && it->key == key ? &*it : nullptr;
    };
    if (port != 0)
      if (const Exact* e = find(uint64_t{address} << 17 | 1u << 16 | port)) return e->value;
    if (const Exact* e = find(uint64_t{address} << 17)) return e->value;
  }
  for (const Prefix& r : prefixes_)
    if ((address & r.mask) == r.address && (r.port == 0 || r.port == port)) return r.value;
  return otherwise;
}
