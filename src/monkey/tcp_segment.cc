// SPDX-License-Identifier: GPL-3.0-or-later
#include "monkey/tcp_segment.hh"

#include <arpa/inet.h>

#include <algorithm>

#include "util/byte_order.hh"

std::string TcpEndpoint::address_text() const {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(v6 ? AF_INET6 : AF_INET, address.data(), text, sizeof text);
  return text;
}

namespace {
constexpr uint8_t kTcp = 6;

// The options of a TCP header (`options`: the bytes after its fixed 20).
void decode_options(std::span<const uint8_t> options, TcpSegment& s) {
  size_t i = 0;
  while (i < options.size()) {
    const uint8_t kind = options[i];
    if (kind == 0) return;  // end of options
    if (kind == 1) {        // no-op
      i++;
      continue;
    }
    if (i + 1 >= options.size()) return;
    const uint8_t length = options[i + 1];
    if (length < 2 || i + length > options.size()) return;
    const uint8_t* value = options.data() + i + 2;
    switch (kind) {
      case 2:
        if (length == 4) s.mss = load_be16(value);
        break;
      case 3:
        if (length == 3) s.window_scale = std::min<uint8_t>(value[0], 14);
        break;
      case 4:
        s.sack_permitted = length == 2;
        break;
      case 5:
        if (length >= 10) s.first_sack = std::make_pair(load_be32(value), load_be32(value + 4));
        break;
      case 8:
        s.timestamps = length == 10;
        break;
      default:
        break;
    }
    i += length;
  }
}
}  // namespace

std::optional<TcpSegment> decode_tcp(std::span<const uint8_t> ip, uint32_t wire_length) {
  TcpSegment s;
  size_t header = 0;
  uint64_t ip_length = 0;  // the IP packet's bytes as its header says
  if (ip.size() < 1) return std::nullopt;
  if ((ip[0] >> 4) == 4) {
    if (ip.size() < 20) return std::nullopt;
    header = (ip[0] & 0x0f) * 4u;
    if (header < 20 || ip.size() < header) return std::nullopt;
    if (ip[9] != kTcp) return std::nullopt;
    if ((load_be16(ip.data() + 6) & 0x3fff) != 0) return std::nullopt;  // a fragment
    ip_length = load_be16(ip.data() + 2);
    // 0 in a segmentation offload's super-packet captured on its host (over 64 KiB): the frame's.
    if (ip_length == 0) ip_length = wire_length;
    s.ecn = ip[1] & 3;
    std::copy_n(ip.data() + 12, 4, s.source.address.begin());
    std::copy_n(ip.data() + 16, 4, s.destination.address.begin());
  } else if ((ip[0] >> 4) == 6) {
    if (ip.size() < 40) return std::nullopt;
    s.source.v6 = s.destination.v6 = true;
    s.ecn = (load_be16(ip.data()) >> 4) & 3;
    std::copy_n(ip.data() + 8, 16, s.source.address.begin());
    std::copy_n(ip.data() + 24, 16, s.destination.address.begin());
    const uint16_t payload_length = load_be16(ip.data() + 4);
    ip_length = payload_length ? 40u + payload_length : wire_length;  // 0: a jumbogram or a super-packet
    uint8_t next = ip[6];
    header = 40;
    // Extension headers before TCP: hop-by-hop, routing, destination options (a fragment: skipped).
    for (int hops = 0; next != kTcp; hops++) {
      if (hops == 8 || (next != 0 && next != 43 && next != 60)) return std::nullopt;
      if (ip.size() < header + 8) return std::nullopt;
      next = ip[header];
      header += (ip[header + 1] + 1u) * 8u;
    }
  } else {
    return std::nullopt;
  }
  if (ip.size() < header + 20) return std::nullopt;
  const uint8_t* tcp = ip.data() + header;
  const size_t tcp_header = (tcp[12] >> 4) * 4u;
  if (tcp_header < 20 || ip.size() < header + tcp_header || ip_length < header + tcp_header) return std::nullopt;
  s.source.port = load_be16(tcp);
  s.destination.port = load_be16(tcp + 2);
  s.seq = load_be32(tcp + 4);
  s.ack = load_be32(tcp + 8);
  s.flags = tcp[13];
  s.window = load_be16(tcp + 14);
  decode_options(std::span<const uint8_t>(tcp + 20, tcp_header - 20), s);
  s.headers = static_cast<uint32_t>(header + tcp_header);
  s.payload = static_cast<uint32_t>(std::min<uint64_t>(ip_length - header - tcp_header, 1u << 30));
  const size_t captured = ip.size() - header - tcp_header;
  s.captured_payload = std::span<const uint8_t>(tcp + tcp_header, std::min<size_t>(captured, s.payload));
  return s;
}
