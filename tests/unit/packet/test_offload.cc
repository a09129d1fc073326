// SPDX-License-Identifier: GPL-3.0-or-later
// Super-packets cut into wire segments and merged back (packet/offload.hh), checked field by
// field against what the kernel's segmentation makes, and through a real socket for the writes.
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "expect.hh"
#include "packet/offload.hh"
#include "tcp_packets.hh"
#include "util/byte_order.hh"
#include "util/file_descriptor.hh"

namespace {

std::vector<std::vector<uint8_t>> cut(const std::vector<uint8_t>& super) {
  Segments segments;
  EXPECT_TRUE(segments.parse(super, kMss));
  std::vector<std::vector<uint8_t>> out;
  for (uint32_t i = 0; i < segments.count(); i++) {
    std::vector<uint8_t> segment(20 + 32 + kMss);
    segment.resize(segments.write(i, segment.data()));
    out.push_back(segment);
  }
  return out;
}

class CoalescerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, fds), 0);
    writer_ = FileDescriptor(fds[0]);
    reader_ = FileDescriptor(fds[1]);
    int size = 4 << 20;
    ::setsockopt(writer_.get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  }
  std::vector<TunMessage> written() {
    std::vector<TunMessage> out;
    std::vector<uint8_t> buffer(70000);
    for (;;) {
      const ssize_t n = ::recv(reader_.get(), buffer.data(), buffer.size(), 0);
      if (n <= 0) return out;
      TunMessage w;
      std::memcpy(&w.header, buffer.data(), sizeof w.header);
      w.packet.assign(buffer.begin() + sizeof w.header, buffer.begin() + n);
      out.push_back(w);
    }
  }
  // Completes the partial checksum of a written packet, as the kernel would.
  static std::vector<uint8_t> completed(const TunMessage& w) {
    std::vector<uint8_t> p = w.packet;
    if (w.header.flags & vnet::kNeedsChecksum) complete_checksum(p, w.header.csum_start, w.header.csum_offset);
    return p;
  }
  FileDescriptor writer_, reader_;
};

}  // namespace

TEST(Segments, cuts_as_the_kernel_does) {
  const std::vector<uint8_t> super = tcp_packet(3 * kMss + 500, 1'000'000, kAck | kPsh | kCwr);
  const auto segments = cut(super);
  ASSERT_EQ(segments.size(), 4u);
  std::vector<uint8_t> payload;
  for (size_t i = 0; i < segments.size(); i++) {
    const std::vector<uint8_t>& s = segments[i];
    const uint32_t length = i < 3 ? kMss : 500;
    ASSERT_EQ(s.size(), 52 + length);
    EXPECT_EQ(load_be16(&s[2]), 52 + length);                // IP total length
    EXPECT_EQ(load_be16(&s[4]), 1000 + i);                   // consecutive IDs
    EXPECT_EQ(load_be32(&s[24]), 1'000'000 + i * kMss);      // sequence numbers
    EXPECT_EQ(load_be32(&s[28]), 777777u);                   // same acknowledgement
    EXPECT_EQ((s[33] & kCwr) != 0, i == 0) << i;             // CWR on the first only
    EXPECT_EQ((s[33] & kPsh) != 0, i == 3) << i;             // PSH on the last only
    EXPECT_EQ(std::memcmp(&s[40], &super[40], 12), 0) << i;  // options copied
    std::vector<uint8_t> done = s;
    complete_checksum(done, 20, 16);
    EXPECT_TRUE(checksums_valid(done)) << i;
    payload.insert(payload.end(), s.begin() + 52, s.end());
  }
  EXPECT_EQ(payload, std::vector<uint8_t>(super.begin() + 52, super.end()));
}

TEST(Segments, cuts_a_udp_super_packet_into_datagrams) {
  // As a program sending with UDP_SEGMENT 1400 hands the kernel 4300 bytes: 4 datagrams.
  std::vector<uint8_t> p(28 + 4300);
  p[0] = 0x45;
  store_be16(&p[2], static_cast<uint32_t>(p.size()));
  store_be16(&p[4], 7);
  p[8] = 64;
  p[9] = 17;
  store_be32(&p[12], 0x0a000001);
  store_be32(&p[16], 0x0a000002);
  store_be16(&p[20], 5000);
  store_be16(&p[22], 6000);
  store_be16(&p[24], 8 + 4300);
  for (uint32_t i = 0; i < 4300; i++) p[28 + i] = static_cast<uint8_t>(i);
  store_be16(&p[26], checksum_fold(pseudo_header_sum(p, 8 + 4300)));
  Segments segments;
  ASSERT_TRUE(segments.parse(p, 1400));
  ASSERT_EQ(segments.count(), 4u);
  EXPECT_EQ(segments.meta(), packet_meta::partial_udp(20));
  for (uint32_t i = 0; i < 4; i++) {
    std::vector<uint8_t> d(28 + 1400);
    d.resize(segments.write(i, d.data()));
    const uint32_t length = i < 3 ? 1400 : 100;
    ASSERT_EQ(d.size(), 28 + length);
    EXPECT_EQ(load_be16(&d[2]), 28 + length);
    EXPECT_EQ(load_be16(&d[4]), 7 + i);
    EXPECT_EQ(load_be16(&d[24]), 8 + length);  // UDP length
    EXPECT_EQ(d[28], static_cast<uint8_t>(i * 1400));
    complete_checksum(d, 20, 6);
    EXPECT_EQ(checksum_fold(checksum_add({d.data(), 20})), 0xffff);
    EXPECT_EQ(checksum_fold(checksum_add({d.data() + 20, d.size() - 20}, pseudo_header_sum(d, 8 + length))), 0xffff);
  }
  // Written whole (mm-delay), it keeps its kind.
  const VnetHeader h = packet_meta::to_header(packet_meta::kSuper | 1400u << 16 | packet_meta::partial_udp(20), p);
  EXPECT_EQ(h.gso_type, vnet::kGsoUdpL4);
  EXPECT_EQ(h.hdr_len, 28);
  EXPECT_EQ(h.gso_size, 1400);
}

TEST(Segments, refuses_what_is_not_a_tcp_or_udp_super_packet) {
  Segments segments;
  std::vector<uint8_t> icmp = tcp_packet(3000, 1, kAck);
  icmp[9] = 1;
  EXPECT_FALSE(segments.parse(icmp, kMss));
  EXPECT_FALSE(segments.parse(tcp_packet(0, 1, kAck), kMss));  // no payload
  std::vector<uint8_t> truncated = tcp_packet(3000, 1, kAck);
  truncated.resize(1000);  // total length disagrees
  EXPECT_FALSE(segments.parse(truncated, kMss));
  EXPECT_FALSE(segments.parse(tcp_packet(3000, 1, kAck), 0));
}

TEST(PacketMeta, keeps_the_header_in_32_bits) {
  VnetHeader h{vnet::kNeedsChecksum, vnet::kGsoTcp4 | vnet::kGsoEcn, 52, 1448, 20, 16};
  const auto meta = packet_meta::from_header(h);
  ASSERT_TRUE(meta.has_value());
  const std::vector<uint8_t> p = tcp_packet(5000, 1, kAck);
  const VnetHeader back = packet_meta::to_header(*meta, p);
  EXPECT_EQ(back.flags, h.flags);
  EXPECT_EQ(back.gso_type, h.gso_type);
  EXPECT_EQ(back.gso_size, 1448);
  EXPECT_EQ(back.hdr_len, 52);  // from the packet's own headers
  EXPECT_EQ(back.csum_start, 20);
  EXPECT_EQ(back.csum_offset, 16);
  EXPECT_EQ(packet_meta::from_header(VnetHeader{}), 0u);                                // plain
  EXPECT_FALSE(packet_meta::from_header(VnetHeader{0, 3, 0, 1400, 0, 0}).has_value());  // UDP UFO
  EXPECT_FALSE(packet_meta::from_header(VnetHeader{vnet::kNeedsChecksum, 0, 0, 0, 300, 16}).has_value());
  EXPECT_EQ(*packet_meta::from_header(VnetHeader{vnet::kNeedsChecksum, 0, 0, 0, 20, 16}), packet_meta::partial_tcp(20));
}

TEST_F(CoalescerTest, merges_the_segments_back_into_the_same_super_packet) {
  const std::vector<uint8_t> super = tcp_packet(3 * kMss + 500, 5000, kAck | kPsh);
  Coalescer coalescer(writer_.get());
  for (const auto& s : cut(super)) coalescer.send(s, packet_meta::partial_tcp(20));
  coalescer.flush();
  const auto out = written();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].header.gso_type, vnet::kGsoTcp4);
  EXPECT_EQ(out[0].header.gso_size, kMss);
  EXPECT_EQ(out[0].header.hdr_len, 52);
  EXPECT_EQ(out[0].header.flags, vnet::kNeedsChecksum);
  EXPECT_EQ(out[0].header.csum_start, 20);
  EXPECT_EQ(out[0].header.csum_offset, 16);
  EXPECT_EQ(out[0].packet, super);  // byte for byte, partial checksum included
}

TEST_F(CoalescerTest, splits_where_a_segment_is_missing_and_keeps_the_order) {
  const auto segments = cut(tcp_packet(4 * kMss, 5000, kAck));
  std::vector<uint8_t> ping(84, 0);
  ping[0] = 0x45;
  ping[9] = 1;
  Coalescer coalescer(writer_.get());
  coalescer.send(segments[0], packet_meta::partial_tcp(20));
  coalescer.send(segments[1], packet_meta::partial_tcp(20));
  coalescer.send(ping, 0);                                    // not TCP: written alone, after what came before it
  coalescer.send(segments[3], packet_meta::partial_tcp(20));  // 2 was dropped
  coalescer.flush();
  const auto out = written();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].header.gso_type, vnet::kGsoTcp4);
  EXPECT_EQ(out[0].packet.size(), 52 + 2 * kMss);
  EXPECT_EQ(load_be32(&out[0].packet[24]), 5000u);
  EXPECT_TRUE(checksums_valid(completed(out[0])));
  EXPECT_EQ(out[1].packet, ping);
  EXPECT_EQ(out[1].header.flags, 0);
  EXPECT_EQ(out[2].header.gso_type, vnet::kGsoNone);  // one segment: as it came
  EXPECT_EQ(out[2].packet, segments[3]);
  EXPECT_TRUE(checksums_valid(completed(out[2])));
}

TEST_F(CoalescerTest, never_merges_across_flows_push_fin_or_a_short_segment) {
  Coalescer coalescer(writer_.get());
  const uint32_t p = packet_meta::partial_tcp(20);
  coalescer.send(tcp_packet(kMss, 0, kAck, 1), p);
  coalescer.send(tcp_packet(kMss, kMss, kAck, 2, 40001), p);  // another flow
  coalescer.send(tcp_packet(kMss, 2 * kMss, kAck | kPsh, 3, 40001), p);
  coalescer.send(tcp_packet(kMss, 3 * kMss, kAck, 4, 40001), p);  // after PSH
  coalescer.send(tcp_packet(100, 4 * kMss, kAck, 5, 40001), p);
  coalescer.send(tcp_packet(kMss, 4 * kMss + 100, kAck, 6, 40001), p);         // after a short one
  coalescer.send(tcp_packet(kMss, 5 * kMss + 100, kAck | kFin, 8, 40001), p);  // ID gap
  coalescer.send(tcp_packet(kMss, 6 * kMss + 100, kAck, 9, 40001), p);         // after FIN
  coalescer.flush();
  const auto out = written();
  std::vector<size_t> sizes;
  for (const auto& w : out) sizes.push_back(w.packet.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{52 + kMss, 52 + 2 * kMss, 52 + kMss + 100, 52 + kMss, 52 + kMss, 52 + kMss}));
  for (const auto& w : out) EXPECT_TRUE(checksums_valid(completed(w)));
}

TEST(Checksum, completes_a_partial_checksum_like_a_full_one) {
  std::vector<uint8_t> p = tcp_packet(999, 12345, kAck);  // odd length: the pad byte counts
  complete_checksum(p, 20, 16);
  EXPECT_TRUE(checksums_valid(p));
  p[60] ^= 1;
  EXPECT_FALSE(checksums_valid(p));
}
