// SPDX-License-Identifier: GPL-3.0-or-later
// Per-peer paths: the table's parsing and the queue (peer_paths.hh).
#include "packet/peer_paths.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>

#include "packet/trace.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
constexpr const char* kLineForm =
    "\"PEER [delay=MS[,MS]] [rate=RATE[,RATE]] [loss=P[,P]] [queue=N[,N]] [drops=N,N,...]\" (two values: toward "
    "the peer, from it)";

double parse_number(std::string_view text, const std::string& where, std::string_view what, double max) {
  double value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !(value >= 0) || value > max)
    throw UserError(where + ": \"" + printable(text, 40) + "\" is not " + std::string(what));
  return value;
}

// "A" (both directions) or "A,B" (toward the peer, from it), each through `parse`.
template <class Parse>
void both_ways(std::string_view value, PathDirection& to, PathDirection& from, Parse&& parse) {
  const size_t comma = value.find(',');
  parse(value.substr(0, comma), to);
  parse(comma == std::string_view::npos ? value.substr(0, comma) : value.substr(comma + 1), from);
}

// An IPv4 TCP segment with a payload.
bool carries_tcp_data(std::span<const uint8_t> p) {
  if (p.size() < 20 || (p[0] >> 4) != 4 || p[9] != 6) return false;
  const size_t header = (p[0] & 0xfu) * 4u;
  if (p.size() < header + 13) return false;
  const size_t total = static_cast<size_t>(p[2]) << 8 | p[3];
  const size_t tcp_header = (p[header + 12] >> 4) * 4u;
  return total > header + tcp_header;
}

// A line's settings after the peer.
void parse_path_settings(const std::vector<std::string_view>& words, PeerPath& path, const std::string& where) {
  std::map<std::string_view, bool> seen;
  for (std::string_view word : words) {
    const size_t equals = word.find('=');
    const std::string_view name = word.substr(0, equals);
    if (equals == std::string_view::npos || equals + 1 == word.size())
      throw UserError(where + ": \"" + printable(word, 40) + "\" is no setting; write " + kLineForm);
    if (seen[name]) throw UserError(where + ": " + std::string(name) + "= is given twice");
    seen[name] = true;
    const std::string_view value = word.substr(equals + 1);
    if (name == "delay") {
      both_ways(value, path.to, path.from, [&](std::string_view v, PathDirection& d) {
        d.delay =
            ms_to_nanos(parse_number(v, where, "a delay in milliseconds (0 to 3600000, e.g. 12.5)", kMaxPathDelayMs));
      });
    } else if (name == "rate") {
      both_ways(value, path.to, path.from, [&](std::string_view v, PathDirection& d) {
        try {
          d.rate_bps = Trace::parse_rate(v);
        } catch (const UsageError& e) {
          throw UserError(where + ": " + e.what());
        }
      });
    } else if (name == "loss") {
      both_ways(value, path.to, path.from, [&](std::string_view v, PathDirection& d) {
        d.loss = parse_number(v, where, "a loss probability (0 to 1, e.g. 0.01)", 1);
      });
    } else if (name == "drops") {
      std::string_view list = value;
      while (!list.empty()) {
        const size_t comma = list.find(',');
        const std::string_view item = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        uint64_t n = 0;
        const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), n);
        if (item.empty() || error != std::errc() || end != item.data() + item.size() || n == 0 ||
            (!path.drops.empty() && n <= path.drops.back()) || path.drops.size() == kMaxPathDrops)
          throw UserError(where + ": drops= takes increasing packet numbers from 1 (" + std::to_string(kMaxPathDrops) +
                          " at most), not \"" + printable(item, 40) + "\"");
        path.drops.push_back(n);
      }
    } else if (name == "queue") {
      both_ways(value, path.to, path.from, [&](std::string_view v, PathDirection& d) {
        const double n = parse_number(v, where, "a queue in packets (1 to 100000)", kMaxPathQueuePackets);
        if (n < 1 || n != std::floor(n)) throw UserError(where + ": queue= is a whole number of packets, 1 to 100000");
        d.queue = static_cast<uint32_t>(n);
      });
    } else {
      throw UserError(where + ": unknown setting \"" + printable(name, 40) + "\"; write " + kLineForm);
    }
  }
}

}  // namespace

std::optional<PeerPath> parse_peer_path(std::string_view line, const std::string& where) {
  if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  std::vector<std::string_view> words = blank_separated_words(line);
  if (words.empty()) return std::nullopt;
  PeerPath path;
  path.peer = parse_peer_address(words[0], where);
  words.erase(words.begin());
  parse_path_settings(words, path, where);
  return path;
}

std::vector<PeerPath> parse_peer_paths(std::string_view text, const std::string& source) {
  std::vector<PeerPath> paths;
  std::map<PeerAddress, size_t> line_of;
  size_t line_number = 0;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    line_number++;
    const std::string where = source + " line " + std::to_string(line_number);
    const std::optional<PeerPath> path = parse_peer_path(line, where);
    if (!path) continue;
    if (paths.size() == kMaxPeerPaths)
      throw UserError(source + ": more than " + std::to_string(kMaxPeerPaths) +
                      " paths; give a prefix the path its addresses share");
    if (const auto [it, added] = line_of.emplace(path->peer, line_number); !added)
      throw UserError(where + ": the peer of line " + std::to_string(it->second) + " again; give each peer one line");
    paths.push_back(*path);
  }
  return paths;
}

PeerPathQueue::PeerPathQueue(const std::vector<PeerPath>& paths, Direction direction, uint64_t seed)
    : to_peers_(direction == Direction::ToPeers), random_(seed) {
  if (paths.size() > kMaxPeerPaths) throw UserError("more than " + std::to_string(kMaxPeerPaths) + " paths");
  lines_.reserve(paths.size() + 1);
  lines_.push_back({PathDirection{}, 0, 0, 0, PacketRing(0), {}, {}, 0, 0});
  for (const PeerPath& p : paths) {
    const PathDirection& d = to_peers_ ? p.to : p.from;
    Line l{d, 0, 0, 0, PacketRing(0), {}, {}, 0, 0};
    if (d.rate_bps > 0) {
      l.ns_per_byte = 8e9 / d.rate_bps;
      l.queue_limit = static_cast<Nanos>(std::llround(static_cast<double>(d.queue) * 1500 * 8e9 / d.rate_bps));
    }
    if (to_peers_) l.drops = p.drops;
    match_.add(p.peer, static_cast<uint32_t>(lines_.size()));
    lines_.push_back(std::move(l));
  }
  match_.finish();
  due_.reserve(lines_.size());
}

void PeerPathQueue::commit(Nanos now, uint32_t length, uint32_t meta) {
  const uint32_t line = match_.classify(reserved_.first(std::min<size_t>(length, reserved_.size())), to_peers_, 0);
  Line& l = lines_[line];
  l.counters.packets++;
  if (l.next_drop < l.drops.size() && carries_tcp_data(reserved_.first(std::min<size_t>(length, reserved_.size()))) &&
      ++l.data_packets == l.drops[l.next_drop]) {
    l.next_drop++;
    l.counters.lost++;
    return;
  }
  if (l.settings.loss > 0 && random_.bernoulli(l.settings.loss)) {
    l.counters.lost++;
    return;  // never committed: the reserved space is handed out again
  }
  Nanos due = now + l.settings.delay;
  if (l.ns_per_byte > 0) {
    const Nanos start = std::max(now, l.free_at);
    if (start - now > l.queue_limit) {
      l.counters.overflowed++;
      return;
    }
    l.free_at = start + std::llround(length * l.ns_per_byte);
    due = l.free_at + l.settings.delay;
  }
  const bool was_empty = l.ring.empty();
  if (line != predicted_) {
    // Read into another path's space: copy it over (only when a packet's path differs from the
    // one before; a flow's run of packets costs no copy).
    const std::span<uint8_t> to = l.ring.reserve(length);
    std::memcpy(to.data(), reserved_.data(), length);
    predicted_ = line;
  }
  l.ring.commit(due, length, meta);  // the record's time: when it is due (the path keeps order)
  if (was_empty) push_due({due, line});
}

void PeerPathQueue::push_due(Due d) {
  due_.push_back(d);
  std::push_heap(due_.begin(), due_.end(), [](const Due& a, const Due& b) { return a.time > b.time; });
}

void PeerPathQueue::pop_due() {
  std::pop_heap(due_.begin(), due_.end(), [](const Due& a, const Due& b) { return a.time > b.time; });
  due_.pop_back();
}
