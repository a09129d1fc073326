// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The framing a link adds to every packet, charged to its trace's delivery opportunities
// (mm-link --uplink-overhead / --downlink-overhead): bytes per packet, a least size, and cells,
// as netem's "rate RATE PACKETOVERHEAD CELLSIZE CELLOVERHEAD" and tc's "linklayer atm". None
// by default: the original's accounting, where each opportunity carries 1500 bytes of IP
// packets, so that existing traces mean what they meant.
#include <cstdint>
#include <string>
#include <string_view>

struct LinkOverhead {
  uint32_t bytes = 0;          // added to each IP packet
  uint32_t minimum = 0;        // the least a packet costs, framing included (0: none)
  uint32_t cell = 0;           // 0: no cells; else the packet and its bytes are cut into cells of this payload
  uint32_t cell_overhead = 0;  // each cell's own bytes on the wire
  std::string name = "none";   // the profile it started from, for the log header

  bool none() const { return bytes == 0 && minimum == 0 && cell == 0; }
  // What a packet of `length` IP bytes costs on the link.
  uint32_t charged(uint32_t length) const {
    uint32_t wire = length + bytes;
    if (cell) wire = (wire + cell - 1) / cell * (cell + cell_overhead);
    return wire < minimum ? minimum : wire;
  }
  // "ethernet [bytes=38, min=84]"
  std::string describe() const;

  // "none", "ethernet" (preamble and start delimiter 8, header 14, FCS 4, inter-frame gap 12:
  // 38 bytes, and the 64-byte least frame: 84), "atm" (DSL: AAL5's 8-byte trailer in 48-byte
  // cells of 53 bytes), or NAME=NUMBER,... among bytes, min, cell, cellovh, after a profile's
  // name or alone (e.g. "atm,bytes=40" for PPPoE over LLC). Throws UsageError naming `option`.
  static LinkOverhead parse(std::string_view text, std::string_view option);
};
