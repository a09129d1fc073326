// SPDX-License-Identifier: GPL-3.0-or-later
#include "monkey/monkey_see.hh"

#include <algorithm>
#include <deque>
#include <string_view>

#include "util/text.hh"

namespace {
constexpr Nanos kTombstone = 60 * kNanosPerSec;  // a closed connection's late segments are its own
constexpr size_t kMaxUnacked = 4096;             // server segments awaiting an ACK, per connection
constexpr size_t kMaxBandwidthSamples = 4096;
constexpr uint32_t kDefaultMss = 1460;

// The 64-bit sequence offset nearest `reference` whose low 32 bits are `relative`.
uint64_t unwrap(uint32_t relative, uint64_t reference) {
  const uint64_t base = reference & ~uint64_t{0xffffffff};
  uint64_t best = base | relative;
  if (best > reference && best - reference > (1ULL << 31) && best >= (1ULL << 32)) best -= 1ULL << 32;
  if (best < reference && reference - best > (1ULL << 31)) best += 1ULL << 32;
  return best;
}

bool http_request_line(std::span<const uint8_t> payload) {
  static constexpr std::string_view kMethods[] = {"GET ",     "POST ",  "HEAD ",    "PUT ",  "DELETE ",
                                                  "OPTIONS ", "PATCH ", "CONNECT ", "TRACE "};
  const std::string_view start(reinterpret_cast<const char*>(payload.data()), payload.size());
  for (std::string_view m : kMethods)
    if (start.substr(0, m.size()) == m) return true;
  return false;
}

// The request line's method and target and the Host field from the first bytes of an HTTP/1.x
// request, when the capture kept them whole: only visible ASCII, bounded (a target or host the
// capture cut short, or stranger than that, is left empty: the exchange is then not one a real
// server can be asked again).
void read_request_head(std::span<const uint8_t> payload, MonkeyExchange& e) {
  const std::string_view head(reinterpret_cast<const char*>(payload.data()), payload.size());
  const size_t line_end = head.find("\r\n");
  if (line_end == std::string_view::npos) return;
  const std::string_view line = head.substr(0, line_end);
  const size_t space = line.find(' '), last = line.rfind(' ');
  if (space == std::string_view::npos || last <= space || !line.substr(last + 1).starts_with("HTTP/1.")) return;
  const std::string_view target = line.substr(space + 1, last - space - 1);
  auto visible = [](std::string_view t) {
    return std::all_of(t.begin(), t.end(), [](char ch) { return ch > ' ' && ch < 0x7f; });
  };
  if (target.empty() || target.size() > kMaxRequestTarget || !visible(target)) return;
  e.method = std::string(line.substr(0, space));
  e.target = std::string(target);
  for (size_t at = line_end + 2; at < head.size();) {
    const size_t end = head.find("\r\n", at);
    if (end == std::string_view::npos || end == at) break;  // cut short, or the header section's end
    std::string_view field = head.substr(at, end - at);
    at = end + 2;
    if (field.size() < 5 || !equals_ignoring_case(field.substr(0, 5), "host:")) continue;
    field.remove_prefix(5);
    while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
    while (!field.empty() && (field.back() == ' ' || field.back() == '\t')) field.remove_suffix(1);
    if (!field.empty() && field.size() <= kMaxRequestHost && visible(field)) e.host = std::string(field);
    break;
  }
}

void flag(MonkeyConnection& c, const std::string& why) {
  if (std::find(c.flags.begin(), c.flags.end(), why) == c.flags.end()) c.flags.push_back(why);
}
}  // namespace

struct MonkeySee::Tracked {
  MonkeyConnection c;
  bool closed = false;
  Nanos last_packet = 0;
  bool client_sent = false, server_sent = false, client_fin = false, server_fin = false;
  bool client_isn_known = false, server_isn_known = false;
  uint32_t client_isn = 0, server_isn = 0;
  bool client_offers_ecn = false;
  Nanos synack_time = 0;
  bool saw_syn = false;  // the connection's start is its SYN's time
  int synacks = 0;
  bool handshake_done = false;
  // The server's data: the highest offset sent and acknowledged, what awaits an ACK, the bursts.
  struct Sent {
    uint64_t end;
    Nanos time;
    bool retransmitted;
    uint64_t burst;
    uint32_t segments;
    uint64_t ordinal;  // of its first packet among the server's data packets, from 1
  };
  uint64_t data_packets = 0;  // the server's, sent again or not, in the order they left
  uint64_t server_high = 1, acked = 1;
  uint32_t server_headers = 40;  // IP and TCP header bytes of the server's data segments
  std::deque<Sent> unacked;
  uint64_t burst = 0;
  Nanos last_server_data = 0;
  bool have_previous_ack = false;
  Nanos previous_ack_time = 0, previous_newest_sent = 0;
  uint64_t previous_ack = 0, previous_ack_burst = 0;
  std::vector<double> bandwidths;
  // The response being sent: its last fresh segment (time, and whether it was below the MSS),
  // the end of the last segment below the MSS, the last ACK that advanced.
  Nanos last_fresh_time = 0;
  bool last_fresh_small = false;
  uint64_t small_end = 0;
  Nanos last_advancing_ack = 0;
  // The client's data.
  uint64_t client_high = 1;
  bool answered = true;  // the last exchange has a response: the client's next data is a new request

  uint32_t mss() const {
    if (c.client_mss) return c.client_mss;
    return c.largest_server_segment ? c.largest_server_segment : kDefaultMss;
  }
  // The payload of a full segment: the MSS less the timestamps option every segment carries.
  uint32_t full_payload() const {
    const uint32_t options = c.timestamps ? 12 : 0;
    return std::max(c.largest_server_segment, mss() > options ? mss() - options : mss());
  }
};

MonkeySee::MonkeySee(Sink sink, MonkeySeeOptions options) : sink_(std::move(sink)), options_(options) {}
MonkeySee::~MonkeySee() = default;

void conclude(MonkeyConnection& c) {
  if (c.server_segments > 0) {
    const uint64_t lost = c.retransmissions > c.spurious ? c.retransmissions - c.spurious : 0;
    c.loss = std::min(1.0, static_cast<double>(lost) / static_cast<double>(c.server_segments));
  }
  if (!c.rtt) flag(c, "no-rtt");
  if (!c.bandwidth_bps) flag(c, "no-bandwidth");
  if (c.server_segments < 3) flag(c, "short");
  if (c.ended_by == "capture-end") flag(c, "open-at-capture-end");
}

void MonkeySee::report(Tracked& t, const std::string& ended_by) {
  MonkeyConnection& c = t.c;
  c.end = t.last_packet;
  c.ended_by = ended_by;
  if (!t.client_sent || !t.server_sent) flag(c, "one-sided");
  if (!t.bandwidths.empty()) {
    std::vector<double> b = t.bandwidths;
    std::nth_element(b.begin(), b.begin() + static_cast<long>(b.size() / 2), b.end());
    c.bandwidth_bps = b[b.size() / 2];
    c.bandwidth_samples = t.bandwidths.size();
  }
  conclude(c);
  t.closed = true;
  reported_++;
  sink_(std::move(c));
  c = MonkeyConnection{};
}

// A fresh server segment of `fresh` bytes joins the response's parts: a new part if the one
// before was below the MSS (the server's buffer had run empty), after the application's pause.
void MonkeySee::add_to_parts(Tracked& t, MonkeyExchange& e, Nanos time, uint64_t fresh) {
  const bool new_part = e.parts.empty() || (t.last_fresh_small && e.parts.size() < kMaxResponseParts);
  if (!new_part) {
    e.parts.back().bytes += fresh;
    return;
  }
  Nanos pause = 0;
  if (!e.parts.empty()) {
    // Sent the moment an ACK came (within a millisecond): TCP held it, not the application.
    const bool released_by_ack = t.last_advancing_ack > t.last_fresh_time && time - t.last_advancing_ack <= kNanosPerMs;
    pause = released_by_ack ? 0 : time - t.last_fresh_time;
  }
  e.parts.push_back({fresh, pause});
}

void MonkeySee::segment(Nanos time, const TcpSegment& s) {
  if (time - last_sweep_ >= kNanosPerSec || time < last_sweep_) sweep(time);
  const bool from_low = s.source < s.destination;
  auto key = from_low ? std::make_pair(s.source, s.destination) : std::make_pair(s.destination, s.source);
  const bool opening = s.has(tcp_flag::kSyn) && !s.has(tcp_flag::kAck);
  auto it = open_.find(key);
  if (it != open_.end() && it->second->closed && !opening) return;  // a late segment of an ended one
  // A SYN with another initial sequence number than the one followed: the ports' reuse.
  const bool reused = it != open_.end() && opening &&
                      (it->second->closed || (it->second->client_isn_known && it->second->client_isn != s.seq));
  if (it == open_.end() || reused) {
    if (it != open_.end() && !it->second->closed) report(*it->second, "reused");
    auto tracked = std::make_unique<Tracked>();
    MonkeyConnection& c = tracked->c;
    c.id = next_id_++;
    c.start = time;
    if (opening) {
      c.client = s.source;
      c.server = s.destination;
      tracked->saw_syn = true;
    } else {
      flag(c, "no-handshake");
      // The SYN-ACK's receiver is the client; with neither SYN, the side with the higher port.
      const bool source_is_client = s.has(tcp_flag::kSyn) ? false : s.source.port > s.destination.port;
      c.client = source_is_client ? s.source : s.destination;
      c.server = source_is_client ? s.destination : s.source;
    }
    // Its own time first: the sweep that makes room must not take it for the longest silent.
    tracked->last_packet = time;
    const Tracked* added = tracked.get();
    it = open_.insert_or_assign(key, std::move(tracked)).first;
    if (open_.size() > options_.max_open) {
      sweep(time, added);
      it = open_.find(key);
    }
  }
  Tracked& t = *it->second;
  MonkeyConnection& c = t.c;
  t.last_packet = time;
  const bool from_client = s.source == c.client;
  if (s.ecn == 3) c.ce_marks++;

  if (from_client) {
    t.client_sent = true;
    if (s.has(tcp_flag::kSyn)) {
      t.client_isn = s.seq;
      t.client_isn_known = true;
      if (s.mss) c.client_mss = *s.mss;
      c.client_window_scale = s.window_scale ? *s.window_scale : -1;
      c.sack = s.sack_permitted;
      c.timestamps = s.timestamps;
      t.client_offers_ecn = s.has(tcp_flag::kEce) && s.has(tcp_flag::kCwr);
      return;
    }
    if (!t.client_isn_known) {  // joined after the handshake: offsets from here
      t.client_isn = s.seq - 1;
      t.client_isn_known = true;
    }
    if (s.has(tcp_flag::kAck) && !t.server_isn_known) {
      t.server_isn = s.ack - 1;
      t.server_isn_known = true;
    }
    if (s.has(tcp_flag::kAck) && t.server_isn_known) {
      const uint64_t a = unwrap(s.ack - t.server_isn, t.acked);
      if (!t.handshake_done && t.synacks > 0 && a == 1) {
        t.handshake_done = true;
        // Karn: a repeated SYN-ACK's ACK answers which? (And a capture's times may step back.)
        if (t.synacks == 1 && time >= t.synack_time) {
          c.handshake_rtt = time - t.synack_time;
          c.rtt = c.handshake_rtt;
          c.rtt_samples++;
          // The SYN-ACK came long after the SYN but the ACK at once: the capture was made next
          // to the client, where the round trip lies before the SYN-ACK, not after it.
          const Nanos before = t.synack_time - c.start;
          if (t.saw_syn && before > kNanosPerMs && before > 10 * *c.handshake_rtt) flag(c, "captured-at-client");
        }
      }
      if (s.first_sack) {
        const uint64_t sack_start = unwrap(s.first_sack->first - t.server_isn, a);
        if (sack_start < a && c.spurious < c.retransmissions) c.spurious++;  // D-SACK: received twice
      }
      if (a > t.acked && a <= t.server_high) {
        c.client_acks++;
        std::optional<Tracked::Sent> newest;
        uint64_t first_burst = UINT64_MAX, last_burst = 0, segments = 0;
        bool resent = false;
        while (!t.unacked.empty() && t.unacked.front().end <= a) {
          const Tracked::Sent& sent = t.unacked.front();
          resent = resent || sent.retransmitted;
          c.acked_segments += sent.segments;
          segments += sent.segments;
          first_burst = std::min(first_burst, sent.burst);
          last_burst = std::max(last_burst, sent.burst);
          newest = sent;
          t.unacked.pop_front();
        }
        if (newest && !newest->retransmitted && time >= newest->time) {
          const Nanos sample = time - newest->time;
          if (!c.rtt || sample < *c.rtt) c.rtt = sample;
          c.rtt_samples++;
        }
        // An ACK pair within one burst of the server's, whose segments the server sent much closer
        // together than the ACKs came back (the packet pair's premise: the bottleneck spread them,
        // not the server's own pace), and none of them sent again (an ACK that fills a hole
        // acknowledges at once what arrived over a long time): the bottleneck's spacing.
        if (newest && t.have_previous_ack && first_burst == last_burst && first_burst == t.previous_ack_burst &&
            time > t.previous_ack_time && !resent && newest->time >= t.previous_newest_sent &&
            newest->time - t.previous_newest_sent < (time - t.previous_ack_time) / 2 &&
            t.bandwidths.size() < kMaxBandwidthSamples) {
          // The bottleneck carried the segments' headers too: the rate of IP bytes.
          const uint64_t bytes = (a - t.previous_ack) + segments * t.server_headers;
          t.bandwidths.push_back(static_cast<double>(bytes) * 8e9 / static_cast<double>(time - t.previous_ack_time));
        }
        if (newest) {
          t.have_previous_ack = true;
          t.previous_ack_time = time;
          t.previous_newest_sent = newest->time;
          t.previous_ack = a;
          t.previous_ack_burst = last_burst;
        }
        t.acked = a;
        t.last_advancing_ack = time;
      }
    }
    if (s.payload > 0) {
      const uint64_t start = unwrap(s.seq - t.client_isn, t.client_high);
      const uint64_t end = start + s.payload;
      if (end > t.client_high) {
        const uint64_t fresh = end - std::max(start, t.client_high);
        t.client_high = end;
        c.client_bytes += fresh;
        // Data the client sent before it could have seen the answer (it reaches the server less
        // than a round trip after the answer began: TLS 1.3's Finished and then the request,
        // while the server's session tickets were on their way; a pipelined request) goes on with
        // the request rather than starting an exchange: it did not wait for the response.
        const bool unseen = t.answered && !c.exchanges.empty() && c.exchanges.back().response_start && c.rtt &&
                            time - *c.exchanges.back().response_start < *c.rtt * 3 / 4;
        if ((t.answered && !unseen) || c.exchanges.empty()) {
          if (c.exchanges.size() < options_.max_exchanges) {
            MonkeyExchange e;
            e.request_start = time;
            e.http = start <= 1 || t.answered ? http_request_line(s.captured_payload) : false;
            if (e.http) read_request_head(s.captured_payload, e);
            c.exchanges.push_back(e);
            if (c.exchanges.size() == 1) {
              const int scale = c.client_window_scale >= 0 && c.server_window_scale >= 0 ? c.client_window_scale : 0;
              c.client_window = static_cast<uint64_t>(s.window) << scale;
            }
          } else {
            flag(c, "too-many-exchanges");
          }
          t.answered = false;
        }
        MonkeyExchange& e = c.exchanges.back();
        e.request_bytes += fresh;
        e.request_end = time;
      }
    }
    if (s.has(tcp_flag::kFin)) t.client_fin = true;
  } else {
    t.server_sent = true;
    if (s.has(tcp_flag::kSyn)) {
      t.server_isn = s.seq;
      t.server_isn_known = true;
      t.synack_time = time;
      t.synacks++;
      if (s.mss) c.server_mss = *s.mss;
      c.server_window_scale = s.window_scale ? *s.window_scale : -1;
      c.sack = c.sack && s.sack_permitted;
      c.timestamps = c.timestamps && s.timestamps;
      c.ecn = t.client_offers_ecn && s.has(tcp_flag::kEce) && !s.has(tcp_flag::kCwr);
      return;
    }
    if (!t.server_isn_known) {
      t.server_isn = s.seq - 1;
      t.server_isn_known = true;
    }
    if (s.payload > 0) {
      t.server_headers = s.headers;
      c.largest_server_segment = std::max(c.largest_server_segment, std::min<uint32_t>(s.payload, t.mss()));
      const uint32_t mss = t.mss();
      const uint64_t start = unwrap(s.seq - t.server_isn, t.server_high);
      const uint64_t end = start + s.payload;
      const uint64_t ordinal = t.data_packets + 1;
      t.data_packets += std::max<uint64_t>(1, (s.payload + mss - 1) / mss);
      if (start < t.server_high) {  // sent before (in whole or in part): a retransmission
        const uint64_t repeated = std::min(end, t.server_high) - start;
        const uint64_t segments = std::max<uint64_t>(1, (repeated + mss - 1) / mss);
        c.retransmissions += segments;
        const bool spurious = std::min(end, t.server_high) <= t.acked;  // acknowledged already
        if (spurious) c.spurious += segments;
        for (Tracked::Sent& sent : t.unacked) {
          if (sent.end <= start || sent.end > end) continue;
          // The packet that was lost, by its place among the server's: a replay loses that one.
          if (!sent.retransmitted && !spurious && c.lost_packets.size() < kMaxLostPackets)
            c.lost_packets.push_back(sent.ordinal);
          sent.retransmitted = true;
        }
      }
      if (end > t.server_high) {
        const uint64_t fresh = end - std::max(start, t.server_high);
        const uint32_t segments = static_cast<uint32_t>(std::max<uint64_t>(1, (fresh + mss - 1) / mss));
        c.server_segments += segments;
        c.server_bytes += fresh;
        // A new burst after a pause longer than the packets of one burst take at the server (its
        // link is fast): waiting for ACKs, or the application.
        const Nanos gap = c.rtt ? std::max<Nanos>(*c.rtt / 4, 200'000) : kNanosPerMs;
        if (t.last_server_data && time - t.last_server_data > gap) t.burst++;
        t.last_server_data = time;
        if (t.unacked.size() == kMaxUnacked) t.unacked.pop_front();
        t.unacked.push_back({end, time, false, t.burst, segments, ordinal});
        t.server_high = end;
        if (c.exchanges.empty()) {  // the server spoke first (a banner): an exchange with no request
          if (c.exchanges.size() < options_.max_exchanges) {
            MonkeyExchange e;
            e.request_start = e.request_end = time;
            c.exchanges.push_back(e);
          }
        }
        MonkeyExchange& e = c.exchanges.back();
        if (e.parts.empty()) t.last_fresh_small = false;  // a response's first part has no pause
        add_to_parts(t, e, time, fresh);
        const bool small = s.payload < t.full_payload();
        if (small) {
          if (t.small_end > t.acked && start >= t.small_end) c.nodelay = true;  // Nagle would have held it
          t.small_end = end;
        }
        t.last_fresh_small = small;
        t.last_fresh_time = time;
        if (!e.response_start) e.response_start = time;
        e.response_end = time;
        e.response_bytes += fresh;
        t.answered = true;
      }
    }
    if (s.has(tcp_flag::kFin)) t.server_fin = true;
  }
  if (s.has(tcp_flag::kRst)) {
    report(t, "rst");
  } else if (t.client_fin && t.server_fin) {
    report(t, "fin");
  }
}

void MonkeySee::sweep(Nanos now, const Tracked* keep) {
  last_sweep_ = now;
  for (auto it = open_.begin(); it != open_.end();) {
    Tracked& t = *it->second;
    if (t.closed && now - t.last_packet > kTombstone) {
      it = open_.erase(it);
      continue;
    }
    if (!t.closed && now - t.last_packet > options_.idle_end) {
      report(t, "idle");
      it = open_.erase(it);
      continue;
    }
    ++it;
  }
  // Too many open at once: the longest silent (1 % more than the excess, so that this is rare)
  // are reported now, each with what it had.
  if (open_.size() > options_.max_open) {
    std::vector<std::pair<Nanos, decltype(open_)::iterator>> by_silence;
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (it->second.get() != keep) by_silence.emplace_back(it->second->last_packet, it);
    const size_t count = std::min(by_silence.size(), open_.size() - options_.max_open + options_.max_open / 100);
    std::partial_sort(by_silence.begin(), by_silence.begin() + static_cast<long>(count), by_silence.end(),
                      [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < count; i++) {
      Tracked& t = *by_silence[i].second->second;
      if (!t.closed) {
        flag(t.c, "evicted");
        report(t, "evicted");
      }
      open_.erase(by_silence[i].second);
    }
  }
}

void MonkeySee::finish() {
  for (auto& [key, t] : open_)
    if (!t->closed) report(*t, "capture-end");
  open_.clear();
}

SeenCapture see_capture(CaptureReader& reader, MonkeySee& see) {
  SeenCapture seen;
  while (const std::optional<CapturedPacket> packet = reader.next()) {
    const std::optional<TcpSegment> segment = decode_tcp(packet->ip, packet->wire_length);
    if (!segment) {
      seen.other++;
      continue;
    }
    seen.segments++;
    see.segment(packet->time, *segment);
  }
  see.finish();
  return seen;
}
