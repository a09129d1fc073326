// SPDX-License-Identifier: GPL-3.0-or-later
// Super-packets cut into wire segments, and wire segments merged back (see offload.hh).
#include "packet/offload.hh"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "util/byte_order.hh"

namespace {

constexpr uint8_t kTcpProtocol = 6, kUdpProtocol = 17;
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10, kUrg = 0x20, kCwr = 0x80;
constexpr uint32_t kMaxIpLength = 65535;

// IP and TCP header bytes of a TCP/IPv4 packet without IP options (what the coalescer merges).
uint32_t tcp4_headers(const uint8_t* ip) { return 20 + (ip[32] >> 4) * 4u; }

// The TCP checksum field of a segment whose checksum the kernel completes (NEEDS_CSUM).
void set_partial_tcp_checksum(uint8_t* ip, uint32_t ip_header_length, uint32_t tcp_length) {
  store_be16(ip + ip_header_length + 16, checksum_fold(pseudo_header_sum({ip, 20}, tcp_length)));
}
void set_partial_udp_checksum(uint8_t* ip, uint32_t ip_header_length, uint32_t udp_length) {
  store_be16(ip + ip_header_length + 6, checksum_fold(pseudo_header_sum({ip, 20}, udp_length)));
}

}  // namespace

namespace packet_meta {

std::optional<uint32_t> from_header(const VnetHeader& header) {
  uint32_t meta = header.flags & kFlagsMask;
  const uint8_t gso = header.gso_type & ~vnet::kGsoEcn;
  if (gso == vnet::kGsoTcp4 || gso == vnet::kGsoUdpL4) {
    meta |= kSuper | static_cast<uint32_t>(header.gso_size) << 16;
    if (header.gso_type & vnet::kGsoEcn) meta |= kEcn;
  } else if (gso != vnet::kGsoNone) {
    return std::nullopt;
  }
  if (header.flags & vnet::kNeedsChecksum) {
    if (header.csum_start > 255 || header.csum_offset % 2 != 0 || header.csum_offset > 30) return std::nullopt;
    meta |= static_cast<uint32_t>(header.csum_offset / 2) << 4 | static_cast<uint32_t>(header.csum_start) << 8;
  }
  return meta;
}

VnetHeader to_header(uint32_t meta, std::span<const uint8_t> packet) {
  VnetHeader header{};
  header.flags = static_cast<uint8_t>(meta & kFlagsMask);
  if (meta & vnet::kNeedsChecksum) {
    header.csum_start = static_cast<uint16_t>(meta >> 8 & 0xff);
    header.csum_offset = static_cast<uint16_t>((meta >> 4 & 0xf) * 2);
    header.hdr_len = static_cast<uint16_t>(header.csum_start + header.csum_offset + 2);
  }
  if ((meta & kSuper) && packet.size() >= 20) {
    const uint32_t ip_header = (packet[0] & 0xf) * 4u;
    header.gso_size = static_cast<uint16_t>(meta >> 16);
    if (packet[9] == kUdpProtocol) {
      header.gso_type = vnet::kGsoUdpL4;
      header.hdr_len = static_cast<uint16_t>(ip_header + 8);
    } else {
      header.gso_type = vnet::kGsoTcp4 | ((meta & kEcn) ? vnet::kGsoEcn : 0);
      if (packet.size() >= ip_header + 13)
        header.hdr_len = static_cast<uint16_t>(ip_header + (packet[ip_header + 12] >> 4) * 4u);
    }
  }
  return header;
}

uint32_t partial_tcp(uint32_t ip_header_length) {
  return vnet::kNeedsChecksum | (16u / 2) << 4 | ip_header_length << 8;
}

uint32_t partial_udp(uint32_t ip_header_length) { return vnet::kNeedsChecksum | (6u / 2) << 4 | ip_header_length << 8; }

}  // namespace packet_meta

uint64_t checksum_add(std::span<const uint8_t> bytes, uint64_t sum) {
  size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) sum += static_cast<uint32_t>(bytes[i] << 8 | bytes[i + 1]);
  if (i < bytes.size()) sum += static_cast<uint32_t>(bytes[i] << 8);
  return sum;
}

uint16_t checksum_fold(uint64_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

uint64_t pseudo_header_sum(std::span<const uint8_t> ip_packet, uint32_t transport_length) {
  const uint8_t* ip = ip_packet.data();
  return uint64_t{load_be16(ip + 12)} + load_be16(ip + 14) + load_be16(ip + 16) + load_be16(ip + 18) + ip[9] +
         transport_length;
}

void set_ip_checksum(uint8_t* ip, uint32_t header_length) {
  store_be16(ip + 10, 0);
  store_be16(ip + 10, static_cast<uint16_t>(~checksum_fold(checksum_add({ip, header_length}))));
}

void complete_checksum(std::span<uint8_t> packet, uint32_t csum_start, uint32_t csum_offset) {
  if (csum_start + csum_offset + 2 > packet.size()) return;
  const uint16_t folded = checksum_fold(checksum_add(packet.subspan(csum_start)));
  const uint16_t value = static_cast<uint16_t>(~folded);
  store_be16(packet.data() + csum_start + csum_offset, value == 0 ? 0xffff : value);
}

bool Segments::parse(std::span<const uint8_t> packet, uint32_t mss) {
  const uint8_t* ip = packet.data();
  if (packet.size() < 28 || (ip[0] >> 4) != 4 || (ip[9] != kTcpProtocol && ip[9] != kUdpProtocol) || mss == 0)
    return false;
  udp_ = ip[9] == kUdpProtocol;
  ip_header_ = (ip[0] & 0xf) * 4u;
  if (ip_header_ < 20 || load_be16(ip + 2) != packet.size() || (load_be16(ip + 6) & 0x3fff) != 0) return false;
  if (packet.size() < ip_header_ + (udp_ ? 8 : 20)) return false;
  headers_ = ip_header_ + (udp_ ? 8 : (ip[ip_header_ + 12] >> 4) * 4u);
  if (headers_ < ip_header_ + (udp_ ? 8 : 20) || headers_ >= packet.size()) return false;
  packet_ = ip;
  payload_ = static_cast<uint32_t>(packet.size()) - headers_;
  mss_ = mss;
  count_ = (payload_ + mss - 1) / mss;
  return true;
}

uint32_t Segments::write(uint32_t i, uint8_t* out) const {
  const uint32_t offset = i * mss_;
  const uint32_t length = std::min(mss_, payload_ - offset);
  std::memcpy(out, packet_, headers_);
  std::memcpy(out + headers_, packet_ + headers_ + offset, length);
  // As the kernel's own segmentation: lengths, consecutive IDs; TCP: advancing sequence numbers,
  // CWR on the first segment only, PSH and FIN on the last only.
  store_be16(out + 2, headers_ + length);
  store_be16(out + 4, load_be16(packet_ + 4) + i);
  set_ip_checksum(out, ip_header_);
  if (udp_) {  // a datagram of its own: its length, its checksum
    store_be16(out + ip_header_ + 4, 8 + length);
    set_partial_udp_checksum(out, ip_header_, 8 + length);
    return headers_ + length;
  }
  uint8_t* tcp = out + ip_header_;
  store_be32(tcp + 4, load_be32(packet_ + ip_header_ + 4) + offset);
  if (i > 0) tcp[13] &= static_cast<uint8_t>(~kCwr);
  if (i + 1 < count_) tcp[13] &= static_cast<uint8_t>(~(kPsh | kFin));
  set_partial_tcp_checksum(out, ip_header_, headers_ - ip_header_ + length);
  return headers_ + length;
}

Coalescer::Coalescer(int fd) : fd_(fd), buffer_(new uint8_t[sizeof(VnetHeader) + kMaxIpLength]) {}

bool Coalescer::mergeable(std::span<const uint8_t> packet, uint32_t meta) const {
  // A data segment of a TCP/IPv4 flow with no IP options, its checksum left to the kernel.
  if (meta != packet_meta::partial_tcp(20) || packet.size() < 41) return false;
  const uint8_t* ip = packet.data();
  if (ip[0] != 0x45 || ip[9] != kTcpProtocol || (load_be16(ip + 6) & 0x3fff) != 0 || load_be16(ip + 2) != packet.size())
    return false;
  const uint32_t headers = tcp4_headers(ip);
  const uint8_t flags = ip[33];
  return headers >= 40 && headers < packet.size() && (flags & kAck) && !(flags & (kSyn | kRst | kUrg | kCwr));
}

bool Coalescer::follows(std::span<const uint8_t> packet) const {
  const uint8_t* first = buffer_.get() + sizeof(VnetHeader);
  const uint8_t* ip = packet.data();
  const uint32_t headers = tcp4_headers(ip);
  const uint32_t payload = static_cast<uint32_t>(packet.size()) - headers;
  if (closed_ || last_payload_ != mss_ || payload > mss_ || length_ + payload > kMaxIpLength) return false;
  // IP: version, TOS, fragment field, TTL, protocol and addresses as the first's; the next ID.
  if (std::memcmp(ip, first, 2) != 0 || std::memcmp(ip + 6, first + 6, 4) != 0 ||
      std::memcmp(ip + 12, first + 12, 8) != 0 || load_be16(ip + 4) != next_id_)
    return false;
  // TCP: ports, acknowledgement, header length, window and options as the first's; flags too
  // but PSH and FIN; the next sequence number.
  const uint8_t* tcp = ip + 20;
  const uint8_t* first_tcp = first + 20;
  return std::memcmp(tcp, first_tcp, 4) == 0 && std::memcmp(tcp + 8, first_tcp + 8, 5) == 0 &&
         ((tcp[13] ^ first_tcp[13]) & ~(kPsh | kFin)) == 0 && std::memcmp(tcp + 14, first_tcp + 14, 2) == 0 &&
         std::memcmp(tcp + 20, first_tcp + 20, headers - 40) == 0 && load_be32(tcp + 4) == next_sequence_;
}

void Coalescer::send(std::span<const uint8_t> packet, uint32_t meta) {
  const bool candidate = mergeable(packet, meta);
  const uint8_t* ip = packet.data();
  if (candidate && length_ > 0 && follows(packet)) {
    const uint32_t headers = tcp4_headers(ip);
    const uint32_t payload = static_cast<uint32_t>(packet.size()) - headers;
    std::memcpy(buffer_.get() + sizeof(VnetHeader) + length_, ip + headers, payload);
    length_ += payload;
    segments_++;
    next_sequence_ += payload;
    next_id_++;
    last_payload_ = payload;
    if (ip[33] & (kPsh | kFin)) {
      buffer_[sizeof(VnetHeader) + 33] |= ip[33] & (kPsh | kFin);
      closed_ = true;
    }
    return;
  }
  flush();
  if (!candidate) {
    write_single(packet, meta);
    return;
  }
  std::memcpy(buffer_.get() + sizeof(VnetHeader), ip, packet.size());
  length_ = static_cast<uint32_t>(packet.size());
  meta_ = meta;
  segments_ = 1;
  const uint32_t headers = tcp4_headers(ip);
  mss_ = last_payload_ = length_ - headers;
  next_sequence_ = load_be32(ip + 24) + mss_;
  next_id_ = static_cast<uint16_t>(load_be16(ip + 4) + 1);
  closed_ = (ip[33] & (kPsh | kFin)) != 0;
}

void Coalescer::flush() {
  if (length_ == 0) return;
  uint8_t* ip = buffer_.get() + sizeof(VnetHeader);
  VnetHeader header;
  if (segments_ == 1) {
    header = packet_meta::to_header(meta_, {ip, length_});
  } else {
    const uint32_t headers = tcp4_headers(ip);
    store_be16(ip + 2, length_);
    set_ip_checksum(ip, 20);
    set_partial_tcp_checksum(ip, 20, length_ - 20);
    header = VnetHeader{};
    header.flags = vnet::kNeedsChecksum;
    header.gso_type = vnet::kGsoTcp4;
    header.hdr_len = static_cast<uint16_t>(headers);
    header.gso_size = static_cast<uint16_t>(mss_);
    header.csum_start = 20;
    header.csum_offset = 16;
  }
  std::memcpy(buffer_.get(), &header, sizeof header);
  // A packet the kernel refuses (device going away, no memory) is dropped, as a link would.
  (void)!::write(fd_, buffer_.get(), sizeof header + length_);
  length_ = 0;
  segments_ = 0;
  closed_ = false;
}

void Coalescer::write_single(std::span<const uint8_t> packet, uint32_t meta) {
  VnetHeader header = packet_meta::to_header(meta, packet);
  iovec parts[2] = {{&header, sizeof header}, {const_cast<uint8_t*>(packet.data()), packet.size()}};
  (void)!::writev(fd_, parts, 2);
}
