// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: mm-paths's tables (packet/peer_paths.hh) as the ferry reads them from a
// user's file, and the queue driven by the packets that follow the table in the input.
// Input: the table's text, a NUL byte, then packets, each a length byte and that many bytes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.hh"
#include "fuzz/fuzz_packets.hh"
#include "packet/peer_paths.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  std::vector<PeerPath> paths;
  try {
    paths = parse_peer_paths(input.substr(0, nul), "fuzz.paths");
  } catch (const UserError&) {
    return 0;
  }
  FUZZ_CHECK(paths.size() <= kMaxPeerPaths);
  for (const PeerPath& p : paths) {
    for (const PathDirection* d : {&p.to, &p.from}) {
      FUZZ_CHECK(d->loss >= 0 && d->loss <= 1 && d->rate_bps >= 0 && d->delay >= 0);
      FUZZ_CHECK(d->queue >= 1 && d->queue <= kMaxPathQueuePackets);
    }
  }
  for (auto direction : {PeerPathQueue::Direction::ToPeers, PeerPathQueue::Direction::FromPeers}) {
    PeerPathQueue queue(paths, direction, 1);
    // Every packet is released at most once, never before it arrived, and the packets of one
    // path in the order they came; what is not released was counted lost or overflowed.
    std::map<uint32_t, std::vector<std::string>> by_path;
    size_t sent = 0;
    feed_fuzz_packets(input, nul == std::string_view::npos ? size : nul + 1, queue, [&](const std::string& packet) {
      const uint32_t path = queue.path_of({reinterpret_cast<const uint8_t*>(packet.data()), packet.size()});
      FUZZ_CHECK(path < queue.paths());
      by_path[path].push_back(packet);
      sent++;
    });
    std::map<uint32_t, size_t> next;
    size_t released = 0;
    queue.release(kNever - 1, [&](std::span<const uint8_t> p, uint32_t) {
      const std::string packet(reinterpret_cast<const char*>(p.data()), p.size());
      const uint32_t path = queue.path_of(p);
      // Lost packets leave gaps: the next released is a later one of the same path.
      std::vector<std::string>& list = by_path[path];
      while (next[path] < list.size() && list[next[path]] != packet) next[path]++;
      FUZZ_CHECK(next[path] < list.size());
      next[path]++;
      released++;
    });
    uint64_t dropped = 0;
    for (uint32_t i = 0; i < queue.paths(); i++) dropped += queue.counters(i).lost + queue.counters(i).overflowed;
    FUZZ_CHECK(released + dropped == sent);
    FUZZ_CHECK(queue.next_departure() == kNever);
  }
  return 0;
}
