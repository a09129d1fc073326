// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: mm-delay's destination maps (packet/destination_delay.hh) as the ferry reads
// them from a user's file, and the queue driven by the packets that follow the map in the input.
// Input: the map's text, a NUL byte, then packets, each a length byte and that many bytes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.hh"
#include "fuzz/fuzz_packets.hh"
#include "packet/destination_delay.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  DestinationDelays map{1'000'000, 2'000'000, {}};
  try {
    map.rules = parse_destination_file(input.substr(0, nul), "fuzz.map");
    check_destination_delays(map);
  } catch (const UserError&) {
    return 0;
  }
  FUZZ_CHECK(map.rules.size() <= kMaxDestinationRules);
  for (auto direction : {DestinationDelayQueue::Direction::Uplink, DestinationDelayQueue::Direction::Downlink}) {
    DestinationDelayQueue queue(map, direction);
    // Every packet is released once, no earlier than its delay, and packets of one delay in
    // the order they came.
    std::vector<std::string> sent;
    std::map<Nanos, std::vector<std::string>> by_delay;
    feed_fuzz_packets(input, nul == std::string_view::npos ? size : nul + 1, queue, [&](const std::string& packet) {
      by_delay[queue.delay_of({reinterpret_cast<const uint8_t*>(packet.data()), packet.size()})].push_back(packet);
      sent.push_back(packet);
    });
    std::map<Nanos, size_t> next;
    size_t released = 0;
    queue.release(kNever - 1, [&](std::span<const uint8_t> p, uint32_t) {
      const std::string packet(reinterpret_cast<const char*>(p.data()), p.size());
      const Nanos delay = queue.delay_of(p);
      FUZZ_CHECK(next[delay] < by_delay[delay].size() && by_delay[delay][next[delay]] == packet);
      next[delay]++;
      released++;
    });
    FUZZ_CHECK(released == sent.size());
    FUZZ_CHECK(queue.next_departure() == kNever);
  }
  return 0;
}
