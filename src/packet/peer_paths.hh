// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Per-peer paths (mm-paths): one shell in which each peer on the far side (an address, a prefix,
// or either with a port: peer_match.hh) has a path of its own, with its own one-way delay, rate
// and loss in each direction, and every other packet passes as through mm-delay 0. Thousands of
// clients then sit on their own paths behind one shell and one ferry (Monkey Do's replay, or a
// server inside with many clients outside), where a shell each would cost a namespace, two TUN
// devices and a ferry per client.
//
// A path in one direction: a packet is lost with the path's probability; else it waits for the
// path's link to be free (packets of one path are sent one after another at its rate, each
// taking its size in bits over the rate), is dropped if that wait would pass the path's queue
// (`queue` packets of 1500 bytes at the rate: drop-tail), and leaves the path's delay after it
// was sent. A path's packets keep their order; one path's backlog never holds up another's.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "packet/packet_ring.hh"
#include "packet/peer_match.hh"
#include "util/clock.hh"
#include "util/random.hh"

struct PathDirection {
  Nanos delay = 0;
  double rate_bps = 0;    // 0: no rate limit
  double loss = 0;        // probability, 0..1
  uint32_t queue = 1000;  // packets of 1500 bytes waiting for the rate at most
  bool operator==(const PathDirection&) const = default;
};

struct PeerPath {
  PeerAddress peer;
  PathDirection to;    // toward the peer: the shell's uplink
  PathDirection from;  // from the peer: the shell's downlink
  // The TCP packets carrying data toward the peer that are lost, by their place among them
  // (from 1, increasing): a loss pattern, such as a capture's (mm-monkey do), besides `to.loss`.
  std::vector<uint64_t> drops;
  bool operator==(const PeerPath&) const = default;
};

// Bounds: a table is written by a person's tools, never unbounded.
constexpr size_t kMaxPeerPaths = 65536;
constexpr uint32_t kMaxPathQueuePackets = 100'000;
constexpr double kMaxPathDelayMs = 3'600'000;  // an hour
constexpr size_t kMaxPathDrops = 100'000;      // drops= numbers per path

// A paths file: one "PEER [delay=MS[,MS]] [rate=RATE[,RATE]] [loss=P[,P]] [queue=N[,N]]
// [drops=N,N,...]" per line, where two values are toward the peer and from it, and one is both; blank lines and "#"
// comments are skipped. A peer given twice is an error (the line of each named). At most
// kMaxPeerPaths lines. Throws UserError naming `source`, the line and the fix.
std::vector<PeerPath> parse_peer_paths(std::string_view text, const std::string& source);
// One path, as a line of the file (mm-paths --path); nullopt for a blank or comment line.
std::optional<PeerPath> parse_peer_path(std::string_view line, const std::string& where);

// What a direction of the queue did, for the shell's summary and the tests.
struct PathCounters {
  uint64_t packets = 0, lost = 0, overflowed = 0;
};

// The queue of one direction (a Ferry's queue, see queues.hh).
class PeerPathQueue {
 public:
  static constexpr bool kWholeSuperPackets = false;  // loss and rate act on wire packets
  enum class Direction { ToPeers, FromPeers };
  PeerPathQueue(const std::vector<PeerPath>& paths, Direction direction, uint64_t seed);

  std::span<uint8_t> reserve() {
    reserved_ = lines_[predicted_].ring.reserve();
    return reserved_;
  }
  void commit(Nanos now, uint32_t length, uint32_t meta);
  Nanos next_departure() const { return due_.empty() ? kNever : due_.front().time; }
  template <class Send>
  void release(Nanos now, Send&& send) {
    // The paths' first packets, earliest first: a heap of (due, path), one entry per busy path.
    while (!due_.empty() && due_.front().time <= now) {
      Line& l = lines_[due_.front().line];
      send(l.ring.front_data(), l.ring.front().meta);
      l.ring.pop();
      pop_due();
      if (!l.ring.empty()) push_due({l.ring.front().arrival, static_cast<uint32_t>(&l - lines_.data())});
    }
  }
  bool finished() const { return false; }

  // The path a packet takes (0: none of the table's; else its line in the table, from 1).
  uint32_t path_of(std::span<const uint8_t> packet) const { return match_.classify(packet, to_peers_, 0); }
  const PathCounters& counters(uint32_t path) const { return lines_[path].counters; }
  size_t paths() const { return lines_.size(); }

 private:
  struct Line {
    PathDirection settings;
    double ns_per_byte = 0;  // at the rate (0: no limit)
    Nanos queue_limit = 0;   // the longest wait for the rate
    Nanos free_at = 0;       // when the path's link has sent what it holds
    PacketRing ring;         // each packet's record holds the time it is due, not its arrival
    PathCounters counters;
    std::vector<uint64_t> drops;  // (toward the peers only) the data packets to lose, by place
    size_t next_drop = 0;
    uint64_t data_packets = 0;
  };
  struct Due {
    Nanos time;
    uint32_t line;
  };
  void push_due(Due d);
  void pop_due();

  bool to_peers_;
  std::vector<Line> lines_;  // [0]: packets of no path (no delay, rate or loss)
  PeerMatch match_;
  std::vector<Due> due_;  // a min-heap on time (capacity reserved: no allocation)
  Random random_;
  uint32_t predicted_ = 0;  // the line reserve() handed space from (the last packet's)
  std::span<uint8_t> reserved_;
};
