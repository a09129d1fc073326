// SPDX-License-Identifier: GPL-3.0-or-later
// CE marking with the header checksum kept valid (see ecn.hh).
#include "packet/ecn.hh"

namespace ecn {

bool mark_ce(std::span<uint8_t> packet) {
  const Codepoint old = codepoint(packet);
  if (old == kNotEct) return false;
  if (old == kCe) return true;
  // RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), over the 16-bit word holding version/IHL and TOS.
  const uint16_t before = static_cast<uint16_t>(packet[0] << 8 | packet[1]);
  packet[1] |= kCe;
  const uint16_t after = static_cast<uint16_t>(packet[0] << 8 | packet[1]);
  uint32_t sum = static_cast<uint16_t>(~(packet[10] << 8 | packet[11]));
  sum += static_cast<uint16_t>(~before);
  sum += after;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  const uint16_t checksum = static_cast<uint16_t>(~sum);
  packet[10] = static_cast<uint8_t>(checksum >> 8);
  packet[11] = static_cast<uint8_t>(checksum);
  return true;
}

}  // namespace ecn
