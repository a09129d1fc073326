// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// TUN offloads. With IFF_VNET_HDR and TUNSETOFFLOAD the kernel hands the ferry a TCP (or UDP,
// from programs that send with UDP_SEGMENT) "super-packet" of up to 64 KiB in one read(), preceded by a virtio-net
// header (GSO type, segment size, where the partial checksum goes), and takes super-packets back the same way: one
// system call and one trip through the stack per 64 KiB instead of per 1500 bytes.
//
// A super-packet stands for the k wire packets the kernel would otherwise have sent, and the
// shells must behave as if those had crossed one by one. So the queues that decide per packet
// (loss, on/off, the link and its disciplines, the meters) are given wire packets:
// Segments cuts a super-packet into exactly the segments the kernel's own segmentation makes
// (lengths, IP IDs, sequence numbers, flags, partial checksums), and Coalescer merges the
// consecutive TCP segments of one flow that leave together back into one super-packet
// (userspace GRO; UDP datagrams leave one by one, as without offloads). mm-delay moves
// super-packets whole: its segments arrive together and leave together.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

// The virtio-net header before each packet (as in linux/virtio_net.h, which C++ cannot include:
// a field there is named `class`). Fields in the machine's byte order, as the TUN driver's default.
struct VnetHeader {
  uint8_t flags;
  uint8_t gso_type;
  uint16_t hdr_len;      // bytes of headers (IP + TCP)
  uint16_t gso_size;     // payload bytes per segment
  uint16_t csum_start;   // where the checksummed bytes begin
  uint16_t csum_offset;  // where the checksum goes, from csum_start
};
static_assert(sizeof(VnetHeader) == 10);
namespace vnet {
constexpr uint8_t kNeedsChecksum = 1, kDataValid = 2;
constexpr uint8_t kGsoNone = 0, kGsoTcp4 = 1, kGsoUdpL4 = 5, kGsoEcn = 0x80;
}  // namespace vnet

// A packet's offload state, kept beside it in the packet ring (PacketRing::Record::meta): its
// virtio-net header in 32 bits. 0 is a plain packet with a complete checksum.
//   bits 0-1   flags: vnet::kNeedsChecksum (the checksum field holds the pseudo-header
//              sum; the kernel completes it), vnet::kDataValid
//   bit  2     a super-packet: TCP (VIRTIO_NET_HDR_GSO_TCPV4) or UDP (VIRTIO_NET_HDR_GSO_UDP_L4),
//              as the packet's own IP header says
//   bit  3     vnet::kGsoEcn (its first segment carries CWR)
//   bits 4-7   csum_offset / 2
//   bits 8-15  csum_start
//   bits 16-31 gso_size (payload bytes per segment)
namespace packet_meta {
constexpr uint32_t kFlagsMask = 3, kSuper = 4, kEcn = 8;
// The header as 32 bits, or nothing if it does not fit (a kind of super-packet the ferry does
// not take apart, or checksum fields no TCP/UDP/ICMP packet uses).
std::optional<uint32_t> from_header(const VnetHeader& header);
// The header to write before `packet` (hdr_len is taken from the packet's own headers).
VnetHeader to_header(uint32_t meta, std::span<const uint8_t> packet);
// A single wire packet whose TCP (UDP) checksum is partial, at the usual place.
uint32_t partial_tcp(uint32_t ip_header_length);
uint32_t partial_udp(uint32_t ip_header_length);
}  // namespace packet_meta

// The Internet checksum's running sum of bytes (big-endian 16-bit words; an odd length is
// padded with a zero byte), and its fold to 16 bits.
uint64_t checksum_add(std::span<const uint8_t> bytes, uint64_t sum = 0);
uint16_t checksum_fold(uint64_t sum);
// The sum of the TCP/UDP pseudo-header of an IPv4 packet for a transport length.
uint64_t pseudo_header_sum(std::span<const uint8_t> ip_packet, uint32_t transport_length);
// Writes the IPv4 header checksum of the header_length bytes at `ip`.
void set_ip_checksum(uint8_t* ip, uint32_t header_length);
// Completes a partial checksum (NEEDS_CSUM) in place, as the kernel would: for a packet that
// cannot be handed on with its header.
void complete_checksum(std::span<uint8_t> packet, uint32_t csum_start, uint32_t csum_offset);

// A TCP or UDP/IPv4 super-packet read with a GSO header, seen as the wire segments (UDP: the
// datagrams) it stands for.
class Segments {
 public:
  // False if `packet` is not a well-formed TCP or UDP/IPv4 packet with payload to cut into
  // segments of `mss` bytes; then nothing else may be called. `packet` must outlive the calls
  // that follow.
  bool parse(std::span<const uint8_t> packet, uint32_t mss);
  uint32_t count() const { return count_; }
  // Writes segment i, headers and payload, at `out` (room for headers + mss bytes) and returns
  // its length. Every segment's checksum is partial (meta()), as the kernel leaves it for a
  // device with checksum offload.
  uint32_t write(uint32_t i, uint8_t* out) const;
  uint32_t meta() const { return udp_ ? packet_meta::partial_udp(ip_header_) : packet_meta::partial_tcp(ip_header_); }

 private:
  const uint8_t* packet_ = nullptr;
  bool udp_ = false;
  uint32_t ip_header_ = 0, headers_ = 0, payload_ = 0, mss_ = 0, count_ = 0;
};

// Writes wire packets to a TUN device opened with IFF_VNET_HDR, merging those of one TCP flow
// that follow each other (same headers but for lengths, consecutive IP IDs and sequence
// numbers, full-size segments but for the last, no PSH or FIN but on the last) into one
// super-packet, which the kernel cuts back into exactly the same segments wherever it has to.
// Packets are written in the order given; flush() writes what is held (the ferry calls it
// after every batch of departures, so nothing waits for a later one).
class Coalescer {
 public:
  explicit Coalescer(int fd);
  void send(std::span<const uint8_t> packet, uint32_t meta);
  void flush();

 private:
  bool mergeable(std::span<const uint8_t> packet, uint32_t meta) const;
  bool follows(std::span<const uint8_t> packet) const;
  void write_single(std::span<const uint8_t> packet, uint32_t meta);

  int fd_;
  std::unique_ptr<uint8_t[]> buffer_;  // virtio-net header, then the packet being built
  uint32_t length_ = 0;                // IP bytes held (0: none)
  uint32_t meta_ = 0;                  // the first packet's
  uint32_t segments_ = 0;
  uint32_t mss_ = 0;            // the first segment's payload
  uint32_t next_sequence_ = 0;  // where the next segment must start
  uint16_t next_id_ = 0;        // the IP ID it must carry
  uint32_t last_payload_ = 0;   // the last segment's payload
  bool closed_ = false;         // the last segment had PSH or FIN
};
