// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// TCP/IPv4 packets as the kernel hands them to a TUN device with checksum offload, for the tests
// of offloads (test_offload.cc, test_ferry.cc).
#include <cstring>
#include <vector>

#include "packet/offload.hh"
#include "util/byte_order.hh"

inline constexpr uint32_t kMss = 1448;
inline constexpr uint8_t kAck = 0x10, kPsh = 0x08, kCwr = 0x80, kFin = 0x01;

// A TCP/IPv4 packet as the kernel hands it over with checksum offload: IP checksum complete,
// TCP checksum partial (the pseudo-header sum). 12 bytes of options (timestamps, as Linux sends).
inline std::vector<uint8_t> tcp_packet(uint32_t payload, uint32_t sequence, uint8_t flags, uint16_t id = 1000,
                                       uint16_t source_port = 40000) {
  std::vector<uint8_t> p(20 + 32 + payload);
  p[0] = 0x45;
  store_be16(&p[2], static_cast<uint32_t>(p.size()));
  store_be16(&p[4], id);
  store_be16(&p[6], 0x4000);  // DF
  p[8] = 64;
  p[9] = 6;
  store_be32(&p[12], 0x0a000001);
  store_be32(&p[16], 0x0a000002);
  set_ip_checksum(p.data(), 20);
  uint8_t* tcp = &p[20];
  store_be16(tcp, source_port);
  store_be16(tcp + 2, 5201);
  store_be32(tcp + 4, sequence);
  store_be32(tcp + 8, 777777);
  tcp[12] = 8 << 4;
  tcp[13] = flags;
  store_be16(tcp + 14, 501);
  const uint8_t options[12] = {1, 1, 8, 10, 0, 0, 0, 42, 0, 0, 0, 7};
  std::memcpy(tcp + 20, options, sizeof options);
  for (uint32_t i = 0; i < payload; i++) p[52 + i] = static_cast<uint8_t>((sequence + i) * 7);
  store_be16(tcp + 16, checksum_fold(pseudo_header_sum(p, 32 + payload)));
  return p;
}

// True if the (completed) TCP checksum and the IP checksum of `p` are right.
inline bool checksums_valid(const std::vector<uint8_t>& p) {
  const uint32_t ip_header = (p[0] & 0xf) * 4u;
  const uint32_t tcp_length = static_cast<uint32_t>(p.size()) - ip_header;
  return checksum_fold(checksum_add({p.data(), ip_header})) == 0xffff &&
         checksum_fold(checksum_add({p.data() + ip_header, tcp_length}, pseudo_header_sum(p, tcp_length))) == 0xffff;
}

// What a TUN device opened with IFF_VNET_HDR reads or is written: a header, then a packet.
struct TunMessage {
  VnetHeader header;
  std::vector<uint8_t> packet;
};
