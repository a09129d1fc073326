// SPDX-License-Identifier: GPL-3.0-or-later
// Per-destination delay: the map's syntax, the most specific rule, per-flow order, and no
// head-of-line blocking between destinations.
#include <sys/eventfd.h>

#include <cstring>
#include <vector>

#include "expect.hh"
#include "packet/destination_delay.hh"
#include "util/byte_order.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {
constexpr uint32_t ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return uint32_t{a} << 24 | uint32_t{b} << 16 | uint32_t{c} << 8 | d;
}

// An IPv4 packet of `length` bytes (protocol 6: ports after the header) whose byte 40 is `tag`.
std::vector<uint8_t> packet(uint32_t from, uint32_t to, uint16_t from_port, uint16_t to_port, uint8_t tag,
                            uint32_t length = 100, uint8_t protocol = 6) {
  std::vector<uint8_t> p(length);
  p[0] = 0x45;
  store_be16(&p[2], static_cast<uint16_t>(length));
  p[9] = protocol;
  store_be32(&p[12], from);
  store_be32(&p[16], to);
  store_be16(&p[20], from_port);
  store_be16(&p[22], to_port);
  p[40] = tag;
  return p;
}

void push(DestinationDelayQueue& q, Nanos now, const std::vector<uint8_t>& p) {
  auto space = q.reserve();
  ASSERT_GE(space.size(), p.size());
  std::memcpy(space.data(), p.data(), p.size());
  q.commit(now, static_cast<uint32_t>(p.size()), 0);
}

std::vector<uint8_t> drain(DestinationDelayQueue& q, Nanos now) {
  std::vector<uint8_t> tags;
  q.release(now, [&](std::span<const uint8_t> p, uint32_t) { tags.push_back(p[40]); });
  return tags;
}

const uint32_t kClient = ip(100, 64, 0, 2);
}  // namespace

TEST(DestinationDelay, parses_options_and_files) {
  const DestinationRule a = parse_destination_option("10.0.0.0/8=20", "--destination");
  EXPECT_EQ(a, (DestinationRule{ip(10, 0, 0, 0), 8, 0, ms_to_nanos(20), ms_to_nanos(20)}));
  const DestinationRule b = parse_destination_option("203.0.113.7:443=12.5,30", "--destination");
  EXPECT_EQ(b, (DestinationRule{ip(203, 0, 113, 7), 32, 443, ms_to_nanos(12.5), ms_to_nanos(30)}));
  const auto rules = parse_destination_file("# origins\n\n10.1.2.3 5   # near\n10.9.0.0/16:80\t40 60\n", "map");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0], (DestinationRule{ip(10, 1, 2, 3), 32, 0, ms_to_nanos(5), ms_to_nanos(5)}));
  EXPECT_EQ(rules[1], (DestinationRule{ip(10, 9, 0, 0), 16, 80, ms_to_nanos(40), ms_to_nanos(60)}));
}

TEST(DestinationDelay, refuses_bad_maps_naming_the_input) {
  EXPECT_THROW_WITH(UserError, parse_destination_option("10.0.0.1", "--destination"), "missing \"=MS\"");
  EXPECT_THROW_WITH(UserError, parse_destination_option("10.0.0.1=-3", "--destination"), "not a delay");
  EXPECT_THROW_WITH(UserError, parse_destination_option("10.0.0.1:0=3", "--destination"), "not a port");
  EXPECT_THROW_WITH(UserError, parse_destination_option("10.0.0.1/33=3", "--destination"), "not an IPv4");
  EXPECT_THROW_WITH(UserError, parse_destination_option("10.0.0.1/8=3", "--destination"), "not an IPv4");  // host bits
  EXPECT_THROW_WITH(UserError, parse_destination_option("10.0.0.1=9999999", "--destination"), "not a delay");
  EXPECT_THROW_WITH(UserError, parse_destination_file("10.0.0.1 1\nnonsense 3\n", "map"), "map line 2");
  EXPECT_THROW_WITH(UserError, parse_destination_file("10.0.0.1\n", "map"), "missing the delay");
  EXPECT_THROW_WITH(UserError, parse_destination_file("10.0.0.1 1 2 3\n", "map"), "4 words");
  DestinationDelays many;
  for (uint32_t i = 0; i <= kMaxDistinctDelays; i++) many.rules.push_back({ip(10, 0, 0, 0) + i, 32, 0, 1000 + i, 0});
  EXPECT_THROW_WITH(UserError, check_destination_delays(many), "distinct delays");
}

TEST(DestinationDelay, the_most_specific_rule_applies_by_direction) {
  DestinationDelays map{ms_to_nanos(1),
                        ms_to_nanos(2),
                        {{ip(10, 0, 0, 0), 8, 0, ms_to_nanos(10), ms_to_nanos(11)},
                         {ip(10, 1, 0, 0), 16, 0, ms_to_nanos(20), ms_to_nanos(21)},
                         {ip(10, 1, 0, 0), 16, 443, ms_to_nanos(25), ms_to_nanos(26)},
                         {ip(10, 1, 2, 3), 32, 0, ms_to_nanos(30), ms_to_nanos(31)},
                         {ip(10, 1, 2, 3), 32, 80, ms_to_nanos(40), ms_to_nanos(41)}}};
  DestinationDelayQueue up(map, DestinationDelayQueue::Direction::Uplink);
  DestinationDelayQueue down(map, DestinationDelayQueue::Direction::Downlink);
  auto to = [&](uint32_t a, uint16_t port) { return up.delay_of(packet(kClient, a, 40000, port, 0)); };
  auto from = [&](uint32_t a, uint16_t port) { return down.delay_of(packet(a, kClient, port, 40000, 0)); };
  EXPECT_EQ(to(ip(192, 168, 0, 1), 80), ms_to_nanos(1));
  EXPECT_EQ(from(ip(192, 168, 0, 1), 80), ms_to_nanos(2));
  EXPECT_EQ(to(ip(10, 9, 9, 9), 80), ms_to_nanos(10));
  EXPECT_EQ(to(ip(10, 1, 9, 9), 80), ms_to_nanos(20));
  EXPECT_EQ(to(ip(10, 1, 9, 9), 443), ms_to_nanos(25));
  EXPECT_EQ(from(ip(10, 1, 9, 9), 443), ms_to_nanos(26));
  EXPECT_EQ(to(ip(10, 1, 2, 3), 443), ms_to_nanos(30));  // the address beats a shorter prefix's port
  EXPECT_EQ(to(ip(10, 1, 2, 3), 80), ms_to_nanos(40));
  EXPECT_EQ(from(ip(10, 1, 2, 3), 80), ms_to_nanos(41));
  EXPECT_EQ(to(ip(10, 1, 2, 3), 0), ms_to_nanos(30));
  // No ports: ICMP, and a fragment after the first, follow the address's rule.
  EXPECT_EQ(up.delay_of(packet(kClient, ip(10, 1, 2, 3), 40000, 80, 0, 100, 1)), ms_to_nanos(30));
  auto fragment = packet(kClient, ip(10, 1, 2, 3), 40000, 80, 0);
  store_be16(&fragment[6], 185);
  EXPECT_EQ(up.delay_of(fragment), ms_to_nanos(30));
  EXPECT_EQ(up.distinct_delays(), 6u);
}

TEST(DestinationDelay, a_later_rule_for_the_same_destination_wins) {
  DestinationDelays map{0,
                        0,
                        {{ip(10, 0, 0, 1), 32, 0, ms_to_nanos(5), ms_to_nanos(5)},
                         {ip(10, 0, 0, 1), 32, 0, ms_to_nanos(7), ms_to_nanos(8)}}};
  DestinationDelayQueue up(map, DestinationDelayQueue::Direction::Uplink);
  EXPECT_EQ(up.delay_of(packet(kClient, ip(10, 0, 0, 1), 1, 2, 0)), ms_to_nanos(7));
}

TEST(DestinationDelay, far_destinations_do_not_hold_up_near_ones_and_flows_keep_order) {
  const uint32_t near = ip(10, 0, 0, 1), far = ip(10, 0, 0, 2);
  DestinationDelays map{
      ms_to_nanos(50),
      ms_to_nanos(50),
      {{near, 32, 0, ms_to_nanos(5), ms_to_nanos(5)}, {far, 32, 0, ms_to_nanos(40), ms_to_nanos(40)}}};
  DestinationDelayQueue q(map, DestinationDelayQueue::Direction::Uplink);
  EXPECT_EQ(q.next_departure(), kNever);
  push(q, 0, packet(kClient, far, 1, 80, 1));
  push(q, 1'000, packet(kClient, far, 1, 80, 2, 1500));
  push(q, 2'000, packet(kClient, near, 1, 80, 3));
  push(q, 3'000, packet(kClient, ip(192, 0, 2, 9), 1, 80, 4));  // the default, 50 ms
  push(q, 4'000, packet(kClient, near, 1, 80, 5, 60000));
  EXPECT_EQ(q.next_departure(), 2'000 + ms_to_nanos(5));
  EXPECT_TRUE(drain(q, 2'000 + ms_to_nanos(5) - 1).empty());
  EXPECT_EQ(drain(q, 4'000 + ms_to_nanos(5)), (std::vector<uint8_t>{3, 5}));  // the near ones, at once
  EXPECT_EQ(q.next_departure(), ms_to_nanos(40));
  EXPECT_EQ(drain(q, ms_to_nanos(45)), (std::vector<uint8_t>{1, 2}));  // far: in order
  EXPECT_EQ(drain(q, ms_to_nanos(51)), (std::vector<uint8_t>{4}));
  EXPECT_EQ(q.next_departure(), kNever);
}

TEST(DestinationDelay, due_packets_leave_in_departure_order_across_destinations) {
  const uint32_t a = ip(10, 0, 0, 1), b = ip(10, 0, 0, 2);
  DestinationDelays map{0, 0, {{a, 32, 0, 10, 10}, {b, 32, 0, 20, 20}}};
  DestinationDelayQueue q(map, DestinationDelayQueue::Direction::Uplink);
  push(q, 0, packet(kClient, b, 1, 80, 1));   // due at 20
  push(q, 5, packet(kClient, a, 1, 80, 2));   // due at 15
  push(q, 12, packet(kClient, a, 1, 80, 3));  // due at 22
  push(q, 13, packet(kClient, b, 1, 80, 4));  // due at 33
  EXPECT_EQ(drain(q, 100), (std::vector<uint8_t>{2, 1, 3, 4}));
}

TEST(DestinationDelay, many_interleaved_flows_keep_their_bytes_and_order_through_growth) {
  DestinationDelays map{ms_to_nanos(1), ms_to_nanos(1), {}};
  for (uint32_t i = 0; i < 16; i++) map.rules.push_back({ip(10, 0, 1, 0) + i, 32, 0, ms_to_nanos(i), 0});
  DestinationDelayQueue q(map, DestinationDelayQueue::Direction::Uplink);
  std::vector<std::vector<uint8_t>> sent(16);
  for (uint32_t n = 0; n < 4000; n++) {
    const uint32_t flow = (n * 7 + n / 3) % 16;
    auto p = packet(kClient, ip(10, 0, 1, 0) + flow, 1, 80, static_cast<uint8_t>(n), 100 + (n * 37) % 9000);
    for (size_t k = 41; k < p.size(); k++) p[k] = static_cast<uint8_t>(n + k);
    sent[flow].push_back(static_cast<uint8_t>(n));
    push(q, n * 1000, p);
  }
  std::vector<std::vector<uint8_t>> got(16);
  q.release(ms_to_nanos(100), [&](std::span<const uint8_t> p, uint32_t) {
    const uint32_t flow = load_be32(&p[16]) - ip(10, 0, 1, 0);
    ASSERT_LT(flow, 16u);
    for (size_t k = 41; k < p.size(); k++) ASSERT_EQ(p[k], static_cast<uint8_t>(p[40] + k)) << "bytes intact";
    got[flow].push_back(p[40]);
  });
  EXPECT_EQ(got, sent);
}

TEST(DestinationDelay, its_log_gives_each_departure_its_destinations_delay) {
  const uint32_t a = ip(10, 0, 0, 1), b = ip(10, 0, 0, 2);
  DestinationDelays map{0, 0, {{a, 32, 0, ms_to_nanos(10), ms_to_nanos(10)}, {b, 32, 0, ms_to_nanos(30), 0}}};
  FileDescriptor wake(::eventfd(0, EFD_NONBLOCK));
  LinkEventRing ring(wake.get());
  DestinationDelayQueue q(map, DestinationDelayQueue::Direction::Uplink, &ring);
  push(q, 0, packet(kClient, b, 1, 80, 1, 200));
  push(q, ms_to_nanos(1), packet(kClient, a, 1, 80, 2, 300));
  EXPECT_EQ(drain(q, ms_to_nanos(100)), (std::vector<uint8_t>{2, 1}));
  std::vector<LinkEvent> events;
  ring.drain([&](const LinkEvent& e) { events.push_back(e); });
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, '+');
  EXPECT_EQ(events[0].bytes, 200u);
  EXPECT_EQ(events[2].kind, '-');
  EXPECT_EQ(events[2].bytes, 300u);
  EXPECT_EQ(events[2].arrival, ms_to_nanos(1));
  EXPECT_EQ(events[3].bytes, 200u);
  EXPECT_EQ(events[3].arrival, 0);
}
