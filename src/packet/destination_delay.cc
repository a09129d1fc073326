// SPDX-License-Identifier: GPL-3.0-or-later
// Per-destination delay: the map's parsing and the queue's classification (destination_delay.hh).
#include "packet/destination_delay.hh"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "util/exception.hh"
#include "util/text.hh"

namespace {

// A delay in milliseconds, as mm-delay's DELAY-MS: decimal, fractional, 0 to an hour.
Nanos parse_delay_ms(std::string_view text, const std::string& where) {
  double ms = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !(ms >= 0) ||
      ms > kMaxDestinationDelayMs) {
    throw UserError(where + ": \"" + printable(text, 40) +
                    "\" is not a delay in milliseconds (a number from 0 to 3600000, e.g. 12.5)");
  }
  return ms_to_nanos(ms);
}

void set_destination(DestinationRule& rule, const PeerAddress& peer) {
  rule.address = peer.address;
  rule.prefix = peer.prefix;
  rule.port = peer.port;
}
}  // namespace

DestinationRule parse_destination_option(std::string_view text, std::string_view what) {
  const std::string where = std::string(what) + " " + printable(text, 80);
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos)
    throw UserError(where + ": missing \"=MS\" (write ADDRESS[/LEN][:PORT]=MS or =UP-MS,DOWN-MS)");
  DestinationRule rule;
  set_destination(rule, parse_peer_address(text.substr(0, equals), where));
  const std::string_view delays = text.substr(equals + 1);
  const size_t comma = delays.find(',');
  rule.uplink = parse_delay_ms(delays.substr(0, comma), where);
  rule.downlink = comma == std::string_view::npos ? rule.uplink : parse_delay_ms(delays.substr(comma + 1), where);
  return rule;
}

std::vector<DestinationRule> parse_destination_file(std::string_view text, const std::string& source) {
  std::vector<DestinationRule> rules;
  size_t line_number = 0;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    line_number++;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const std::vector<std::string_view> words = blank_separated_words(line);
    if (words.empty()) continue;
    const std::string where = source + " line " + std::to_string(line_number);
    if (words.size() > 3)
      throw UserError(where + ": expected \"ADDRESS[/LEN][:PORT] MS [DOWN-MS]\", found " +
                      std::to_string(words.size()) + " words");
    if (words.size() < 2) throw UserError(where + ": missing the delay (write \"ADDRESS[/LEN][:PORT] MS [DOWN-MS]\")");
    if (rules.size() == kMaxDestinationRules)
      throw UserError(source + ": more than " + std::to_string(kMaxDestinationRules) +
                      " destinations; use prefixes for ranges of addresses");
    DestinationRule rule;
    set_destination(rule, parse_peer_address(words[0], where));
    rule.uplink = parse_delay_ms(words[1], where);
    rule.downlink = words.size() == 3 ? parse_delay_ms(words[2], where) : rule.uplink;
    rules.push_back(rule);
  }
  return rules;
}

void check_destination_delays(const DestinationDelays& map) {
  if (map.rules.size() > kMaxDestinationRules)
    throw UserError("more than " + std::to_string(kMaxDestinationRules) + " destinations");
  std::set<Nanos> up{map.default_uplink}, down{map.default_downlink};
  for (const DestinationRule& r : map.rules) up.insert(r.uplink), down.insert(r.downlink);
  if (std::max(up.size(), down.size()) > kMaxDistinctDelays)
    throw UserError("the destinations have more than " + std::to_string(kMaxDistinctDelays) +
                    " distinct delays in a direction; round them (to 0.1 ms, say)");
}

DestinationDelayQueue::DestinationDelayQueue(const DestinationDelays& map, Direction direction, LinkEventRing* log)
    : direction_(direction), log_(log) {
  check_destination_delays(map);
  const bool up = direction == Direction::Uplink;
  lines_.reserve(kMaxDistinctDelays);
  line_for(up ? map.default_uplink : map.default_downlink);
  // The last rule for a destination wins: a later --destination overrides a file's line.
  std::map<std::tuple<int, uint32_t, uint16_t>, Nanos> unique;
  for (const DestinationRule& r : map.rules) unique[{r.prefix, r.address, r.port}] = up ? r.uplink : r.downlink;
  for (const auto& [key, delay] : unique) {
    const auto [prefix, address, port] = key;
    match_.add({address, prefix, port}, line_for(delay));
  }
  match_.finish();
  active_.reserve(lines_.size());
}

uint32_t DestinationDelayQueue::line_for(Nanos delay) {
  for (uint32_t i = 0; i < lines_.size(); i++)
    if (lines_[i].delay == delay) return i;
  // One FIFO per distinct delay; a ring starts small (two packets of 64 KiB) and grows with a backlog.
  lines_.push_back({delay, PacketRing(0)});
  return static_cast<uint32_t>(lines_.size() - 1);
}

void DestinationDelayQueue::commit(Nanos now, uint32_t length, uint32_t meta) {
  const uint32_t line = classify(reserved_.first(std::min<size_t>(length, reserved_.size())));
  Line& l = lines_[line];
  const bool was_empty = l.ring.empty();
  if (line != predicted_) {
    // The packet was read into another FIFO's space: copy it over (only when a packet's
    // destination differs from the one before; a flow's run of packets costs no copy).
    const std::span<uint8_t> to = l.ring.reserve(length);
    std::memcpy(to.data(), reserved_.data(), length);
    predicted_ = line;
  }
  l.ring.commit(now, length, meta);
  if (log_) log_->push({now, 0, length, 1, '+'});
  if (was_empty) {
    active_.push_back(line);
    next_ = std::min(next_, now + l.delay);
  }
}

void DestinationDelayQueue::recompute_next() {
  next_ = kNever;
  for (uint32_t line : active_) next_ = std::min(next_, lines_[line].ring.front().arrival + lines_[line].delay);
}
