// SPDX-License-Identifier: GPL-3.0-or-later
// Per-peer paths (mm-paths): the file's syntax, each path's delay, rate, loss and queue, order
// within a path, and no path holding up another.
#include <cstring>
#include <vector>

#include "expect.hh"
#include "packet/peer_paths.hh"
#include "util/byte_order.hh"
#include "util/exception.hh"

namespace {
constexpr uint32_t ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return uint32_t{a} << 24 | uint32_t{b} << 16 | uint32_t{c} << 8 | d;
}
const uint32_t kInside = ip(100, 64, 0, 2);

// An IPv4 TCP packet of `length` bytes from the inside to `peer` (or back) whose byte 40 is `tag`.
std::vector<uint8_t> packet(uint32_t from, uint32_t to, uint8_t tag, uint32_t length = 1500) {
  std::vector<uint8_t> p(length);
  p[0] = 0x45;
  store_be16(&p[2], static_cast<uint16_t>(length));
  p[9] = 6;
  store_be32(&p[12], from);
  store_be32(&p[16], to);
  store_be16(&p[20], 40000);
  store_be16(&p[22], 80);
  if (length > 40) p[40] = tag;
  return p;
}

void push(PeerPathQueue& q, Nanos now, const std::vector<uint8_t>& p) {
  auto space = q.reserve();
  ASSERT_GE(space.size(), p.size());
  std::memcpy(space.data(), p.data(), p.size());
  q.commit(now, static_cast<uint32_t>(p.size()), 0);
}

// (time released, tag) of every packet due by `now`, releasing at each due time in turn.
std::vector<std::pair<Nanos, int>> drain(PeerPathQueue& q, Nanos until) {
  std::vector<std::pair<Nanos, int>> out;
  for (Nanos t = q.next_departure(); t <= until; t = q.next_departure())
    q.release(t, [&](std::span<const uint8_t> p, uint32_t) { out.push_back({t, p.size() > 40 ? p[40] : 0}); });
  return out;
}

PeerPath path(const char* line) { return *parse_peer_path(line, "test"); }
}  // namespace

TEST(PeerPaths, parses_lines_and_files) {
  const PeerPath a = path("10.0.0.7 delay=20 rate=10Mbit/s loss=0.01,0 queue=50");
  EXPECT_EQ(a.peer, (PeerAddress{ip(10, 0, 0, 7), 32, 0}));
  EXPECT_EQ(a.to, (PathDirection{ms_to_nanos(20), 10e6, 0.01, 50}));
  EXPECT_EQ(a.from, (PathDirection{ms_to_nanos(20), 10e6, 0, 50}));
  const PeerPath b = path("10.1.0.0/16:443 delay=5,45.5 rate=2Mbit/s,500kbit/s");
  EXPECT_EQ(b.peer, (PeerAddress{ip(10, 1, 0, 0), 16, 443}));
  EXPECT_EQ(b.to.delay, ms_to_nanos(5));
  EXPECT_EQ(b.from.delay, ms_to_nanos(45.5));
  EXPECT_EQ(b.from.rate_bps, 500e3);
  EXPECT_EQ(b.to.queue, 1000u);  // the default
  EXPECT_FALSE(parse_peer_path("   # nothing", "test"));
  const auto all = parse_peer_paths("# clients\n\n10.0.0.1 delay=1\n10.0.0.2\t loss=0.5 # half\n", "f");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].to.loss, 0.5);
  EXPECT_EQ(all[1].to.delay, 0);
}

TEST(PeerPaths, refuses_bad_tables_naming_the_line) {
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1\nnonsense delay=1\n", "f"), "f line 2: \"nonsense\"");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 dleay=3\n", "f"), "unknown setting \"dleay\"");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 delay\n", "f"), "is no setting");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 delay=-1\n", "f"), "not a delay");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 delay=1 delay=2\n", "f"), "given twice");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 rate=fast\n", "f"), "\"fast\" is not a rate");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 loss=1.5\n", "f"), "not a loss probability");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 queue=0\n", "f"), "whole number of packets");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 queue=2.5\n", "f"), "whole number of packets");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 delay=1\n10.0.0.1 delay=2\n", "f"),
                    "f line 2: the peer of line 1 again");
  std::string many;
  for (size_t i = 0; i <= kMaxPeerPaths; i++)
    many +=
        "10." + std::to_string(i >> 16) + "." + std::to_string((i >> 8) & 255) + "." + std::to_string(i & 255) + "\n";
  EXPECT_THROW_WITH(UserError, parse_peer_paths(many, "f"), "more than 65536 paths");
}

TEST(PeerPaths, each_peer_has_its_delay_by_direction_and_others_pass) {
  const uint32_t a = ip(10, 0, 0, 1), b = ip(10, 0, 0, 2), other = ip(192, 168, 1, 1);
  const std::vector<PeerPath> table{path("10.0.0.1 delay=10"), path("10.0.0.0/24 delay=3,30")};
  PeerPathQueue up(table, PeerPathQueue::Direction::ToPeers, 1);
  PeerPathQueue down(table, PeerPathQueue::Direction::FromPeers, 1);
  push(up, 0, packet(kInside, a, 1));
  push(up, 0, packet(kInside, b, 2));
  push(up, 0, packet(kInside, other, 3));
  push(down, 0, packet(b, kInside, 4));
  EXPECT_EQ(drain(up, kNever - 1),
            (std::vector<std::pair<Nanos, int>>{{0, 3}, {ms_to_nanos(3), 2}, {ms_to_nanos(10), 1}}));
  EXPECT_EQ(drain(down, kNever - 1), (std::vector<std::pair<Nanos, int>>{{ms_to_nanos(30), 4}}));
  EXPECT_EQ(up.path_of(packet(kInside, a, 0)), 1u);
  EXPECT_EQ(up.path_of(packet(kInside, b, 0)), 2u);
  EXPECT_EQ(up.path_of(packet(kInside, other, 0)), 0u);
}

TEST(PeerPaths, a_rate_sends_one_after_another_and_a_backlog_holds_up_only_its_path) {
  // 12 Mbit/s: a 1500-byte packet takes 1 ms. Five at once to A leave 1, 2, ... 5 ms (+ 2 ms);
  // B's one packet, unlimited, leaves at once, not behind A's backlog.
  const uint32_t a = ip(10, 0, 0, 1), b = ip(10, 0, 0, 2);
  PeerPathQueue up({path("10.0.0.1 delay=2 rate=12Mbit/s"), path("10.0.0.2 delay=1")},
                   PeerPathQueue::Direction::ToPeers, 1);
  for (uint8_t i = 1; i <= 5; i++) push(up, 0, packet(kInside, a, i));
  push(up, 0, packet(kInside, b, 9));
  const auto out = drain(up, kNever - 1);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0], (std::pair<Nanos, int>{ms_to_nanos(1), 9}));
  for (int i = 1; i <= 5; i++) EXPECT_EQ(out[i], (std::pair<Nanos, int>{ms_to_nanos(2 + i), i}));
  // Idle again: the next packet starts at its arrival, not after the old backlog.
  push(up, ms_to_nanos(100), packet(kInside, a, 7));
  EXPECT_EQ(drain(up, kNever - 1), (std::vector<std::pair<Nanos, int>>{{ms_to_nanos(103), 7}}));
}

TEST(PeerPaths, a_full_queue_drops_the_arrival) {
  // queue=3 at 12 Mbit/s: 3 ms of backlog at most; the 5th of a burst at once would wait 4 ms.
  PeerPathQueue up({path("10.0.0.1 rate=12Mbit/s queue=3")}, PeerPathQueue::Direction::ToPeers, 1);
  for (uint8_t i = 1; i <= 6; i++) push(up, 0, packet(kInside, ip(10, 0, 0, 1), i));
  const auto out = drain(up, kNever - 1);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out.back().second, 4);
  EXPECT_EQ(up.counters(1).overflowed, 2u);
  EXPECT_EQ(up.counters(1).packets, 6u);
}

TEST(PeerPaths, loss_is_per_path_at_its_probability_and_repeats_with_its_seed) {
  const std::vector<PeerPath> table{path("10.0.0.1 loss=0.2,0"), path("10.0.0.2 loss=0")};
  auto run = [&](uint64_t seed) {
    PeerPathQueue up(table, PeerPathQueue::Direction::ToPeers, seed);
    std::vector<int> kept;
    for (int i = 0; i < 20000; i++) {
      push(up, i, packet(kInside, ip(10, 0, 0, 1 + (i & 1)), static_cast<uint8_t>(i)));
      up.release(i, [&](std::span<const uint8_t>, uint32_t) { kept.push_back(i); });
    }
    EXPECT_EQ(up.counters(2).lost, 0u);
    const double lost = static_cast<double>(up.counters(1).lost) / static_cast<double>(up.counters(1).packets);
    EXPECT_NEAR(lost, 0.2, 0.02);  // 10000 draws: 7 standard deviations
    return kept;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
  PeerPathQueue down(table, PeerPathQueue::Direction::FromPeers, 7);
  for (int i = 0; i < 100; i++) push(down, 0, packet(ip(10, 0, 0, 1), kInside, 0));
  EXPECT_EQ(down.counters(1).lost, 0u);  // loss=0.2,0: none from the peer
}

TEST(PeerPaths, thousands_of_paths_keep_each_its_own_order) {
  // 2000 peers, each with its own delay; packets interleaved across them leave in due order,
  // each path's in its arrival order.
  std::vector<PeerPath> table;
  for (int i = 0; i < 2000; i++) {
    PeerPath p;
    p.peer = {ip(10, 2, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i & 255)), 32, 0};
    p.to.delay = p.from.delay = (i % 50) * 100'000;
    table.push_back(p);
  }
  PeerPathQueue up(table, PeerPathQueue::Direction::ToPeers, 1);
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < 2000; i++)
      push(up, round,
           packet(kInside, ip(10, 2, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i & 255)),
                  static_cast<uint8_t>(round), 200));
  const auto out = drain(up, kNever - 1);
  ASSERT_EQ(out.size(), 6000u);
  for (size_t i = 1; i < out.size(); i++) ASSERT_LE(out[i - 1].first, out[i].first);
}

TEST(PeerPaths, drops_lose_the_numbered_data_packets_toward_the_peer) {
  // TCP packets with data are numbered from 1; the 2nd and 4th are lost, packets without data
  // (a pure ACK: 40 bytes) are not counted, and nothing from the peer is lost.
  const std::vector<PeerPath> table{path("10.0.0.1 drops=2,4")};
  PeerPathQueue up(table, PeerPathQueue::Direction::ToPeers, 1);
  PeerPathQueue down(table, PeerPathQueue::Direction::FromPeers, 1);
  auto tcp = [](uint32_t from, uint32_t to, uint8_t tag, uint32_t length) {
    std::vector<uint8_t> p = packet(from, to, tag, length);
    p[32] = 0x50;  // a TCP header of 20 bytes
    return p;
  };
  push(up, 0, tcp(kInside, ip(10, 0, 0, 1), 1, 100));
  push(up, 0, tcp(kInside, ip(10, 0, 0, 1), 0, 40));  // no data (released: its byte 40 is 0)
  for (uint8_t i = 2; i <= 5; i++) push(up, 0, tcp(kInside, ip(10, 0, 0, 1), i, 100));
  std::vector<int> tags;
  for (const auto& [t, tag] : drain(up, kNever - 1)) tags.push_back(tag);
  EXPECT_EQ(tags, (std::vector<int>{1, 0, 3, 5}));
  EXPECT_EQ(up.counters(1).lost, 2u);
  for (uint8_t i = 1; i <= 5; i++) push(down, 0, tcp(ip(10, 0, 0, 1), kInside, i, 100));
  EXPECT_EQ(down.counters(1).lost, 0u);
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 drops=3,2\n", "f"), "increasing packet numbers");
  EXPECT_THROW_WITH(UserError, parse_peer_paths("10.0.0.1 drops=0\n", "f"), "increasing packet numbers");
}
