// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which of a table's peers a packet belongs to: the remote side of the shell, an IPv4 prefix and
// optionally one port, as "ADDRESS[/LEN][:PORT]" names it. The per-destination delays of
// mm-delay (destination_delay.hh) and mm-paths's per-peer paths (peer_paths.hh) both sort
// packets so. A packet leaving the shell (uplink) is matched by its destination, one entering it
// (downlink) by its source. Most specific first: an exact address with the port, the exact
// address, then prefixes from the longest (with a port before without). Fragments after an IP
// datagram's first carry no port: they follow their address's entry, not a port's.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct PeerAddress {
  uint32_t address = 0;  // host byte order, host bits clear
  int prefix = 32;       // 0..32
  uint16_t port = 0;     // 0: any port
  bool operator==(const PeerAddress&) const = default;
  auto operator<=>(const PeerAddress&) const = default;
};

// "ADDRESS[/LEN][:PORT]"; throws UserError starting with `where`, with the fix.
PeerAddress parse_peer_address(std::string_view text, const std::string& where);

class PeerMatch {
 public:
  // Packets of `peer` classify as `value`. Call finish() once all are added; a peer added twice
  // keeps the first value (callers merge their duplicates first).
  void add(const PeerAddress& peer, uint32_t value);
  void finish();
  // The value of the peer the packet belongs to (by its destination if by_destination, else its
  // source), or `otherwise` (also for a packet that is not IPv4).
  uint32_t classify(std::span<const uint8_t> packet, bool by_destination, uint32_t otherwise) const;

 private:
  struct Exact {  // a /32 entry: key = address << 17 | has_port << 16 | port
    uint64_t key;
    uint32_t value;
  };
  struct Prefix {
    uint32_t address, mask;
    uint16_t port;
    uint32_t value;
  };
  std::vector<Exact> exact_;      // sorted by key
  std::vector<Prefix> prefixes_;  // most specific first
};
