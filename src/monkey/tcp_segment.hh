// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One TCP segment decoded from an IPv4 or IPv6 packet as a capture holds it: addresses, ports,
// sequence numbers, flags, the options a connection negotiates (MSS, window scale, SACK,
// timestamps), the IP header's ECN field, and the payload's length on the wire (a capture's snap
// length may have cut the bytes themselves). Every field is read within the captured bytes.
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

struct TcpEndpoint {
  std::array<uint8_t, 16> address{};  // IPv4 in the first 4 bytes
  bool v6 = false;
  uint16_t port = 0;
  auto operator<=>(const TcpEndpoint&) const = default;
  std::string address_text() const;
};

namespace tcp_flag {
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10, kUrg = 0x20, kEce = 0x40,
                  kCwr = 0x80;
}

struct TcpSegment {
  TcpEndpoint source, destination;
  uint32_t seq = 0, ack = 0;
  uint8_t flags = 0;
  uint16_t window = 0;                        // as sent (unscaled)
  uint32_t payload = 0;                       // payload bytes on the wire
  uint32_t headers = 0;                       // IP and TCP header bytes
  std::span<const uint8_t> captured_payload;  // what the capture kept of them
  uint8_t ecn = 0;                            // the IP header's ECN field (3: CE)
  std::optional<uint16_t> mss;
  std::optional<uint8_t> window_scale;
  bool sack_permitted = false;
  bool timestamps = false;
  std::optional<std::pair<uint32_t, uint32_t>> first_sack;  // the first SACK block (a DSACK if below ack)
  bool has(uint8_t flag) const { return (flags & flag) != 0; }
};

// The TCP segment in `ip` (an IPv4 or IPv6 packet from its first byte, as captured; `wire_length`
// its length as sent), or nothing: another protocol, a fragment, or headers cut or malformed.
std::optional<TcpSegment> decode_tcp(std::span<const uint8_t> ip, uint32_t wire_length);
