// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Explicit Congestion Notification in IPv4 headers (RFC 3168): the two low bits of the TOS byte.
// The AQMs mark CE ("congestion experienced") instead of dropping a packet whose sender said it
// understands ECN (ECT(0), ECT(1), or CE already), and DualPI2 sorts packets by it (RFC 9332:
// ECT(1) and CE are L4S). A mark rewrites the TOS byte and updates the header checksum
// incrementally (RFC 1624), so the packet stays valid; the TCP/UDP checksums do not cover the TOS
// byte, partial (offloaded) ones included.
#include <cstdint>
#include <span>

namespace ecn {
enum Codepoint : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

// The codepoint of an IPv4 packet; kNotEct for anything else (too short, not IPv4).
inline Codepoint codepoint(std::span<const uint8_t> packet) {
  if (packet.size() < 20 || (packet[0] >> 4) != 4) return kNotEct;
  return static_cast<Codepoint>(packet[1] & 3);
}

// Whether the sender understands ECN: the packet may be marked instead of dropped.
inline bool capable(std::span<const uint8_t> packet) { return codepoint(packet) != kNotEct; }

// L4S traffic (RFC 9331): ECT(1), or CE (which may have been ECT(1)).
inline bool l4s(std::span<const uint8_t> packet) {
  const Codepoint c = codepoint(packet);
  return c == kEct1 || c == kCe;
}

// Sets CE on an ECN-capable IPv4 packet and corrects its header checksum; true if the packet
// now carries CE (it was capable), false (and unchanged) if it is not ECN-capable.
bool mark_ce(std::span<uint8_t> packet);
}  // namespace ecn
