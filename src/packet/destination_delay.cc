// SPDX-License-Identifier: GPL-3.0-or-later
// Per-destination delay: the map's parsing and the queue's classification (destination_delay.hh).
#include "packet/destination_delay.hh"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "util/address.hh"
#include "util/byte_order.hh"
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

// "ADDRESS[/LEN][:PORT]".
void parse_destination(std::string_view text, DestinationRule& rule, const std::string& where) {
  const std::string fix = " (write ADDRESS, ADDRESS/LEN or either with :PORT, e.g. 10.0.0.0/8 or 203.0.113.7:443)";
  std::string_view net = text;
  if (const size_t colon = text.find(':'); colon != std::string_view::npos) {
    net = text.substr(0, colon);
    const std::string_view port = text.substr(colon + 1);
    unsigned value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || error != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
      throw UserError(where + ": \"" + printable(port, 20) + "\" is not a port from 1 to 65535" + fix);
    rule.port = static_cast<uint16_t>(value);
  }
  const auto parsed = Ipv4Net::parse(net);
  if (!parsed) throw UserError(where + ": \"" + printable(net, 40) + "\" is not an IPv4 address or prefix" + fix);
  rule.address = parsed->base.value;
  rule.prefix = parsed->prefix;
}

}  // namespace

DestinationRule parse_destination_option(std::string_view text, std::string_view what) {
  const std::string where = std::string(what) + " " + printable(text, 80);
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos)
    throw UserError(where + ": missing \"=MS\" (write ADDRESS[/LEN][:PORT]=MS or =UP-MS,DOWN-MS)");
  DestinationRule rule;
  parse_destination(text.substr(0, equals), rule, where);
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
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    line_number++;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string_view> words;
    for (size_t at = 0; at < line.size();) {
      const size_t start = line.find_first_not_of(" \t\r", at);
      if (start == std::string_view::npos) break;
      const size_t end = std::min(line.find_first_of(" \t\r", start), line.size());
      words.push_back(line.substr(start, end - start));
      at = end;
    }
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
    parse_destination(words[0], rule, where);
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
    const uint32_t line = line_for(delay);
    if (prefix == 32) {
      exact_.push_back({uint64_t{address} << 17 | (port ? 1u << 16 : 0u) | port, line});
    } else {
      const uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
      prefixes_.push_back({address, mask, port, line});
    }
  }
  std::sort(exact_.begin(), exact_.end(), [](const Exact& a, const Exact& b) { return a.key < b.key; });
  std::stable_sort(prefixes_.begin(), prefixes_.end(), [](const Prefix& a, const Prefix& b) {
    if (a.mask != b.mask) return a.mask > b.mask;  // longer prefix first (masks compare as lengths)
    return (a.port != 0) > (b.port != 0);
  });
  active_.reserve(lines_.size());
}

uint32_t DestinationDelayQueue::line_for(Nanos delay) {
  for (uint32_t i = 0; i < lines_.size(); i++)
    if (lines_[i].delay == delay) return i;
  // One FIFO per distinct delay; a ring starts small (two packets of 64 KiB) and grows with a backlog.
  lines_.push_back({delay, PacketRing(0)});
  return static_cast<uint32_t>(lines_.size() - 1);
}

uint32_t DestinationDelayQueue::classify(std::span<const uint8_t> p) const {
  if (p.size() < 20 || (p[0] >> 4) != 4) return 0;  // not IPv4: the default
  const bool up = direction_ == Direction::Uplink;
  const uint32_t address = load_be32(&p[up ? 16 : 12]);
  uint16_t port = 0;
  const size_t header = (p[0] & 0xfu) * 4u;
  const bool first_fragment = (load_be16(&p[6]) & 0x1fff) == 0;
  if ((p[9] == 6 || p[9] == 17 || p[9] == 132) && first_fragment && p.size() >= header + 4)
    port = load_be16(&p[header + (up ? 2 : 0)]);
  if (!exact_.empty()) {
    auto find = [&](uint64_t key) -> const Exact* {
      auto it =
          std::lower_bound(exact_.begin(), exact_.end(), key, [](const Exact& e, uint64_t k) { return e.key < k; });
      return it != exact_.end() && it->key == key ? &*it : nullptr;
    };
    if (port != 0)
      if (const Exact* e = find(uint64_t{address} << 17 | 1u << 16 | port)) return e->line;
    if (const Exact* e = find(uint64_t{address} << 17)) return e->line;
  }
  for (const Prefix& r : prefixes_)
    if ((address & r.mask) == r.address && (r.port == 0 || r.port == port)) return r.line;
  return 0;
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
