// SPDX-License-Identifier: GPL-3.0-or-later
// Monkey See on captures written here with libpcap: a connection whose every time is known (a
// 40 ms path, a 10 Mbit/s bottleneck, a server that thinks 5 ms, one lost segment), read back
// through the capture reader and the TCP decoder, then the inference.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "monkey/capture_reader.hh"
#include "monkey/monkey_see.hh"
#include "monkey/tcp_segment.hh"
#include "monkey/workload.hh"
#include "util/byte_order.hh"
#include "util/exception.hh"

namespace {
constexpr Nanos kMs = kNanosPerMs;
constexpr uint32_t kClientIp = 0x0a000002, kServerIp = 0x0a000001;
constexpr uint16_t kClientPort = 40000, kServerPort = 80;
constexpr uint32_t kClientIsn = 1000, kServerIsn = 5000;

struct Frame {
  Nanos time;
  std::vector<uint8_t> bytes;
};

// An Ethernet frame carrying one IPv4 TCP segment; `options` raw TCP options (padded to 4).
Frame tcp_frame(Nanos time, bool from_client, uint32_t seq, uint32_t ack, uint8_t flags, uint32_t payload,
                std::vector<uint8_t> options = {}, const std::string& data = "") {
  while (options.size() % 4) options.push_back(1);
  const uint32_t tcp_length = 20 + static_cast<uint32_t>(options.size());
  std::vector<uint8_t> f(14 + 20 + tcp_length + payload, 0);
  f[12] = 0x08;  // IPv4
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  store_be16(ip + 2, 20 + tcp_length + payload);
  ip[8] = 64;
  ip[9] = 6;
  store_be32(ip + 12, from_client ? kClientIp : kServerIp);
  store_be32(ip + 16, from_client ? kServerIp : kClientIp);
  uint8_t* tcp = ip + 20;
  store_be16(tcp, from_client ? kClientPort : kServerPort);
  store_be16(tcp + 2, from_client ? kServerPort : kClientPort);
  store_be32(tcp + 4, seq);
  store_be32(tcp + 8, ack);
  tcp[12] = static_cast<uint8_t>((tcp_length / 4) << 4);
  tcp[13] = flags;
  store_be16(tcp + 14, 65535);
  std::copy(options.begin(), options.end(), tcp + 20);
  std::copy(data.begin(), data.end(), tcp + tcp_length);
  return {time, f};
}

std::string write_capture(const std::vector<Frame>& frames, int snaplen = 65535) {
  char path[] = "/tmp/mm-monkey-test.XXXXXX";
  const int fd = ::mkstemp(path);
  ::close(fd);
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, snaplen, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* dumper = pcap_dump_open(dead, path);
  for (const Frame& f : frames) {
    pcap_pkthdr h{};
    h.ts.tv_sec = f.time / kNanosPerSec;
    h.ts.tv_usec = f.time % kNanosPerSec;  // nanoseconds: the dumper was opened so
    h.len = static_cast<uint32_t>(f.bytes.size());
    h.caplen = std::min<uint32_t>(h.len, static_cast<uint32_t>(snaplen));
    pcap_dump(reinterpret_cast<u_char*>(dumper), &h, f.bytes.data());
  }
  pcap_dump_close(dumper);
  pcap_close(dead);
  return path;
}

std::vector<MonkeyConnection> see(const std::string& path) {
  std::vector<MonkeyConnection> out;
  MonkeySee see([&](MonkeyConnection&& c) { out.push_back(std::move(c)); });
  CaptureReader reader(path);
  while (auto p = reader.next())
    if (auto s = decode_tcp(p->ip, p->wire_length)) see.segment(p->time, *s);
  see.finish();
  return out;
}

using namespace tcp_flag;
const std::vector<uint8_t> kSynOptions = {2, 4, 0x05, 0xb4, 4, 2, 3, 3, 7};  // MSS 1460, SACK ok, wscale 7

// A 40 ms round trip (20 each way from the server's side), a 10 Mbit/s bottleneck towards the
// client (a 1460-byte segment every 1.168 ms), a request of 300 bytes, the server's 5 ms, a
// response of 10 segments sent in bursts of 2, 4 and 4 as slow start would, the 6th lost
// and sent again after three duplicate ACKs.
std::vector<Frame> known_connection(Nanos t0) {
  std::vector<Frame> f;
  const Nanos serial = 1'168'000;
  f.push_back(tcp_frame(t0, true, kClientIsn, 0, kSyn, 0, kSynOptions));
  f.push_back(tcp_frame(t0 + 100'000, false, kServerIsn, kClientIsn + 1, kSyn | kAck, 0, kSynOptions));
  f.push_back(tcp_frame(t0 + 100'000 + 40 * kMs, true, kClientIsn + 1, kServerIsn + 1, kAck, 0));
  const Nanos request = t0 + 40 * kMs + 200'000;
  f.push_back(tcp_frame(request, true, kClientIsn + 1, kServerIsn + 1, kAck | kPsh, 300, {},
                        "GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  const Nanos answer = request + 5 * kMs;
  auto data = [&](Nanos t, int i) {
    return tcp_frame(t, false, kServerIsn + 1 + i * 1460, kClientIsn + 301, kAck, 1460);
  };
  auto ack = [&](Nanos t, int upto) {
    return tcp_frame(t, true, kClientIsn + 301, kServerIsn + 1 + upto * 1460, kAck, 0);
  };
  // Burst 1: segments 0-1; their ACKs come back spaced by the bottleneck.
  f.push_back(data(answer, 0));
  f.push_back(data(answer + 10'000, 1));
  f.push_back(ack(answer + 40 * kMs + serial, 1));
  f.push_back(ack(answer + 40 * kMs + 2 * serial, 2));
  // Burst 2: segments 2-5, sent as the ACKs came; segment 5 is lost.
  const Nanos b2 = answer + 40 * kMs + serial + 50'000;
  for (int i = 2; i <= 5; i++) f.push_back(data(b2 + (i - 2) * 10'000, i));
  f.push_back(ack(b2 + 40 * kMs + serial, 3));
  f.push_back(ack(b2 + 40 * kMs + 2 * serial, 4));
  f.push_back(ack(b2 + 40 * kMs + 3 * serial, 5));
  // Burst 3: segments 6-9; the client acknowledges 5 again, three times (6, 7, 8 arrived).
  const Nanos b3 = b2 + 40 * kMs + serial + 50'000;
  for (int i = 6; i <= 9; i++) f.push_back(data(b3 + (i - 6) * 10'000, i));
  for (int i = 1; i <= 3; i++) f.push_back(ack(b3 + 40 * kMs + (i + 1) * serial, 5));
  const Nanos resend = b3 + 40 * kMs + 4 * serial + 20'000;
  f.push_back(data(resend, 5));
  f.push_back(ack(resend + 40 * kMs + serial, 10));
  f.push_back(tcp_frame(resend + 41 * kMs + serial, true, kClientIsn + 301, kServerIsn + 1 + 14600, kAck | kFin, 0));
  f.push_back(
      tcp_frame(resend + 41 * kMs + serial + 50'000, false, kServerIsn + 1 + 14600, kClientIsn + 302, kAck | kFin, 0));
  f.push_back(tcp_frame(resend + 82 * kMs, true, kClientIsn + 302, kServerIsn + 14602, kAck, 0));
  return f;
}
}  // namespace

TEST(MonkeySee, a_known_connection_gives_back_its_path_client_and_server) {
  const std::string path = write_capture(known_connection(1'000 * kNanosPerSec));
  const std::vector<MonkeyConnection> found = see(path);
  ::unlink(path.c_str());
  ASSERT_EQ(found.size(), 1u);
  const MonkeyConnection& c = found[0];
  EXPECT_EQ(c.client.port, kClientPort);
  EXPECT_EQ(c.server.port, kServerPort);
  EXPECT_EQ(c.client.address_text(), "10.0.0.2");
  EXPECT_EQ(c.ended_by, "fin");
  ASSERT_TRUE(c.handshake_rtt);
  EXPECT_EQ(*c.handshake_rtt, 40 * kMs);
  ASSERT_TRUE(c.rtt);
  EXPECT_EQ(*c.rtt, 40 * kMs);  // no sample below the path's
  EXPECT_EQ(c.client_mss, 1460);
  EXPECT_EQ(c.client_window_scale, 7);
  EXPECT_EQ(c.server_window_scale, 7);
  EXPECT_TRUE(c.sack);
  EXPECT_FALSE(c.timestamps);
  EXPECT_EQ(c.server_segments, 10u);
  EXPECT_EQ(c.retransmissions, 1u);
  EXPECT_EQ(c.spurious, 0u);
  ASSERT_TRUE(c.loss);
  EXPECT_DOUBLE_EQ(*c.loss, 0.1);
  ASSERT_TRUE(c.bandwidth_bps);
  EXPECT_NEAR(*c.bandwidth_bps, 1500 * 8e9 / 1'168'000, 0.01e6);  // IP bytes: 10.27 Mbit/s
  EXPECT_GE(c.bandwidth_samples, 2u);
  ASSERT_EQ(c.exchanges.size(), 1u);
  const MonkeyExchange& e = c.exchanges[0];
  EXPECT_TRUE(e.http);
  EXPECT_EQ(e.method, "GET");
  EXPECT_EQ(e.target, "/");
  EXPECT_EQ(e.host, "x");
  EXPECT_EQ(e.request_bytes, 300u);
  EXPECT_EQ(e.response_bytes, 14600u);
  ASSERT_TRUE(e.response_start);
  EXPECT_EQ(*e.response_start - e.request_end, 5 * kMs);  // the server's delay
  EXPECT_TRUE(c.flags.empty()) << c.flags[0];
  const std::string lines = workload_lines(c);
  EXPECT_NE(lines.find("\t40.000\t40.000\t"), std::string::npos) << lines;
  EXPECT_NE(lines.find("\nE\t1\t1\t"), std::string::npos) << lines;
  EXPECT_NE(lines.find("\tGET /\tx\n"), std::string::npos) << lines;
}

TEST(MonkeySee, a_connection_joined_late_is_kept_and_flagged) {
  std::vector<Frame> all = known_connection(2'000 * kNanosPerSec);
  // The capture begins after the handshake, and ends before the connection does.
  std::vector<Frame> middle(all.begin() + 3, all.end() - 3);
  const std::string path = write_capture(middle);
  const std::vector<MonkeyConnection> found = see(path);
  ::unlink(path.c_str());
  ASSERT_EQ(found.size(), 1u);
  const MonkeyConnection& c = found[0];
  EXPECT_EQ(c.server.port, kServerPort);  // the higher port is the client's
  EXPECT_EQ(c.ended_by, "capture-end");
  auto flagged = [&](const std::string& f) { return std::find(c.flags.begin(), c.flags.end(), f) != c.flags.end(); };
  EXPECT_TRUE(flagged("no-handshake"));
  EXPECT_TRUE(flagged("open-at-capture-end"));
  EXPECT_FALSE(c.handshake_rtt);
  ASSERT_TRUE(c.rtt);  // from data and its ACKs
  EXPECT_GE(*c.rtt, 40 * kMs);
}

TEST(CaptureReader, refuses_what_is_not_a_capture_and_ends_a_cut_one_where_it_stops) {
  char path[] = "/tmp/mm-monkey-test.XXXXXX";
  const int fd = ::mkstemp(path);
  (void)!::write(fd, "hello, not a capture\n", 21);
  ::close(fd);
  try {
    CaptureReader reader(path);
    FAIL() << "a text file was read as a capture";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read capture"), std::string::npos) << e.what();
  }
  ::unlink(path);
  const std::string whole = write_capture(known_connection(3'000 * kNanosPerSec));
  std::ifstream in(whole, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(whole, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<long>(bytes.size() - 30));
  CaptureReader reader(whole);
  size_t packets = 0;
  while (reader.next()) packets++;
  ::unlink(whole.c_str());
  EXPECT_EQ(packets, known_connection(0).size() - 1);
  EXPECT_FALSE(reader.ended_early().empty());
}

TEST(TcpSegment, cut_or_foreign_headers_decode_to_nothing) {
  const Frame f = tcp_frame(0, true, 1, 2, kSyn, 0, kSynOptions);
  const std::span<const uint8_t> ip(f.bytes.data() + 14, f.bytes.size() - 14);
  ASSERT_TRUE(decode_tcp(ip, static_cast<uint32_t>(ip.size())));
  for (size_t cut = 0; cut < ip.size(); cut++) EXPECT_FALSE(decode_tcp(ip.first(cut), 1500)) << cut;
  std::vector<uint8_t> udp(ip.begin(), ip.end());
  udp[9] = 17;
  EXPECT_FALSE(decode_tcp(udp, 1500));
  const auto s = decode_tcp(ip, static_cast<uint32_t>(ip.size()));
  EXPECT_EQ(*s->mss, 1460);
  EXPECT_EQ(*s->window_scale, 7);
  EXPECT_TRUE(s->sack_permitted);
}

// Found by fuzz-capture: a pcapng timestamp is 64-bit, and one past the year 2262 overflowed
// nanoseconds (UBSan). It is held at the largest time there is; the packet is still read.
TEST(CaptureReader, a_timestamp_past_2262_is_held_not_overflowed) {
  std::vector<uint8_t> ng;
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; i++) ng.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  u32(0x0A0D0D0A), u32(28), u32(0x1A2B3C4D), u32(1), u32(0xffffffff), u32(0xffffffff), u32(28);  // a section

  u32(1), u32(20), u32(101), u32(65535), u32(20);  // an interface of raw IP
  std::vector<uint8_t> ip(20, 0);
  ip[0] = 0x45;
  u32(6), u32(52), u32(0), u32(0xffffffff), u32(0xfffff000), u32(20), u32(20);  // a packet, in us
  ng.insert(ng.end(), ip.begin(), ip.end());
  u32(52);
  FILE* file = fmemopen(ng.data(), ng.size(), "rb");
  ASSERT_NE(file, nullptr);
  CaptureReader reader(file, "huge-time.pcapng");
  const std::optional<CapturedPacket> packet = reader.next();
  ASSERT_TRUE(packet);
  EXPECT_GT(packet->time, 9'000'000'000 * kNanosPerSec);
  EXPECT_EQ(packet->ip.size(), 20u);
  EXPECT_FALSE(reader.next());
}

// A response in parts: a header of 200 bytes, then 2000 bytes the server wrote at once (a full
// segment goes at once, the 540-byte rest waits, as Nagle's algorithm holds it, for the header's
// ACK, 40 ms later, and leaves 100 us after it: TCP's wait, no pause of the application); then
// a second request whose answer's header leaves at once and the rest 300 ms later, long after
// the header's ACK: the application's pause (§4.2's query delay).
TEST(MonkeySee, a_response_comes_in_the_parts_the_server_wrote) {
  const Nanos t0 = 1'000 * kNanosPerSec;
  std::vector<Frame> f;
  f.push_back(tcp_frame(t0, true, kClientIsn, 0, kSyn, 0, kSynOptions));
  f.push_back(tcp_frame(t0 + 100'000, false, kServerIsn, kClientIsn + 1, kSyn | kAck, 0, kSynOptions));
  f.push_back(tcp_frame(t0 + 40 * kMs, true, kClientIsn + 1, kServerIsn + 1, kAck, 0));
  Nanos t = t0 + 41 * kMs;
  uint32_t client = kClientIsn + 1, server = kServerIsn + 1;
  auto request = [&](Nanos at) {
    f.push_back(tcp_frame(at, true, client, server, kAck | kPsh, 100, {}, "GET / HTTP/1.1\r\n"));
    client += 100;
  };
  auto data = [&](Nanos at, uint32_t bytes) {
    f.push_back(tcp_frame(at, false, server, client, kAck, bytes));
    server += bytes;
  };
  auto ack = [&](Nanos at) { f.push_back(tcp_frame(at, true, client, server, kAck, 0)); };
  request(t);
  data(t + 1 * kMs, 200);
  data(t + 1 * kMs + 50'000, 1460);
  ack(t + 41 * kMs);  // (acknowledges everything so far, for simplicity)
  data(t + 41 * kMs + 100'000, 540);
  ack(t + 82 * kMs);
  t += 100 * kMs;
  request(t);
  data(t + 2 * kMs, 200);
  ack(t + 42 * kMs);
  data(t + 302 * kMs, 1460);
  data(t + 302 * kMs + 10'000, 1000);
  ack(t + 343 * kMs);
  f.push_back(tcp_frame(t + 344 * kMs, true, client, server, kAck | kFin, 0));
  f.push_back(tcp_frame(t + 345 * kMs, false, server, client + 1, kAck | kFin, 0));
  const std::string path = write_capture(f);
  const std::vector<MonkeyConnection> found = see(path);
  ::unlink(path.c_str());
  ASSERT_EQ(found.size(), 1u);
  ASSERT_EQ(found[0].exchanges.size(), 2u);
  EXPECT_EQ(found[0].exchanges[0].parts, (std::vector<ResponsePart>{{200, 0}, {2000, 50'000}}));
  EXPECT_EQ(found[0].exchanges[1].parts, (std::vector<ResponsePart>{{200, 0}, {2460, 300 * kMs}}));
  EXPECT_FALSE(found[0].nodelay);
}

// Two segments below the MSS with the first unacknowledged: Nagle's algorithm was off.
TEST(MonkeySee, small_segments_back_to_back_say_nagle_was_off) {
  const Nanos t0 = 1'000 * kNanosPerSec;
  std::vector<Frame> f;
  f.push_back(tcp_frame(t0, true, kClientIsn, 0, kSyn, 0, kSynOptions));
  f.push_back(tcp_frame(t0 + 100'000, false, kServerIsn, kClientIsn + 1, kSyn | kAck, 0, kSynOptions));
  f.push_back(tcp_frame(t0 + 40 * kMs, true, kClientIsn + 1, kServerIsn + 1, kAck, 0));
  f.push_back(tcp_frame(t0 + 41 * kMs, true, kClientIsn + 1, kServerIsn + 1, kAck | kPsh, 100));
  f.push_back(tcp_frame(t0 + 42 * kMs, false, kServerIsn + 1, kClientIsn + 101, kAck, 200));
  f.push_back(tcp_frame(t0 + 43 * kMs, false, kServerIsn + 201, kClientIsn + 101, kAck, 300));
  const std::string path = write_capture(f);
  const std::vector<MonkeyConnection> found = see(path);
  ::unlink(path.c_str());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].nodelay);
  EXPECT_EQ(found[0].exchanges[0].parts, (std::vector<ResponsePart>{{200, 0}, {300, 1 * kMs}}));
}

// A capture made next to the client: the SYN-ACK 50 ms after the SYN, the ACK 30 us after it.
TEST(MonkeySee, a_capture_next_to_the_client_is_flagged) {
  const Nanos t0 = 1'000 * kNanosPerSec;
  std::vector<Frame> f;
  f.push_back(tcp_frame(t0, true, kClientIsn, 0, kSyn, 0, kSynOptions));
  f.push_back(tcp_frame(t0 + 50 * kMs, false, kServerIsn, kClientIsn + 1, kSyn | kAck, 0, kSynOptions));
  f.push_back(tcp_frame(t0 + 50 * kMs + 30'000, true, kClientIsn + 1, kServerIsn + 1, kAck, 0));
  const std::string path = write_capture(f);
  const std::vector<MonkeyConnection> found = see(path);
  ::unlink(path.c_str());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(std::find(found[0].flags.begin(), found[0].flags.end(), "captured-at-client"), found[0].flags.end());
}
