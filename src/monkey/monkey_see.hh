// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Monkey See (the seed "Monkey See, Monkey Do", §3): from TCP segments captured next to a server,
// what each connection's network, client and server did. Connections are followed as the
// capture streams by (memory: the connections open at once, each bounded) and each is reported
// when it ends, or when the capture does. The inference, per connection, the server being the
// side a SYN went to:
//  - round-trip time: the smallest of the handshake's (the server's SYN-ACK to the client's ACK)
//    and of each server segment's to the client's first ACK covering it (not retransmitted
//    segments: Karn); the client's ACK delays only add to a sample, so the least is the path's;
//  - bottleneck bandwidth (§3.2): pairs of the client's ACKs that each acknowledge new data sent
//    in one burst of the server's: the later ACK's new bytes over the time between the two (the
//    bottleneck spread the burst's packets so), counting the segments' IP and TCP headers (the
//    rate of IP bytes, as a rate: link's); the median of them. The timestamps' resolution
//    bounds it: with microseconds, 1448 bytes 1 us apart is 11.6 Gbit/s;
//  - loss towards the client: the server's retransmissions less the spurious ones (of data the
//    client had acknowledged already, or that it reported received twice: D-SACK) over the
//    server's data segments;
//  - the negotiated MSS, window scaling, SACK, timestamps and ECN, the client's window in its
//    first request, and its ACKs per data segment (1: an ACK for each, 0.5: delayed, every other);
//  - the application, by bursts: a burst of the client's data is a request, the server's data
//    until the client's next burst its response (HTTP/1.x is marked as such when it is; TLS and
//    other protocols are read the same way). The server's delay is from the request's last byte
//    to the response's first, the response time from the request's first byte to the
//    response's last (the paper's, at the server). A response comes in parts (§4.2's header and
//    search result): a segment below the MSS ends what the server had written; the pause before
//    the next part is the application's unless the part left within a millisecond of an ACK
//    that let it go (Nagle's wait, which the same kernel repeats in a replay).
// A connection that cannot be judged in part keeps its record, flagged with the reason.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "monkey/capture_reader.hh"
#include "monkey/tcp_segment.hh"
#include "util/clock.hh"

// A part of a response: the bytes the server wrote at once (its send buffer ran empty after them,
// as a segment below the MSS shows), and the pause of the application before them (0 when the
// server sent the moment an ACK let it: TCP's wait, not the application's).
struct ResponsePart {
  uint64_t bytes = 0;
  Nanos pause = 0;
  bool operator==(const ResponsePart&) const = default;
};
constexpr size_t kMaxResponseParts = 32;  // more: the rest join the last
constexpr size_t kMaxLostPackets = 4096;  // per connection

struct MonkeyExchange {
  Nanos request_start = 0, request_end = 0;  // at the server (capture times)
  uint64_t request_bytes = 0;
  std::optional<Nanos> response_start, response_end;
  uint64_t response_bytes = 0;
  std::vector<ResponsePart> parts;  // the response as the server wrote it
  bool http = false;                // the request began as an HTTP/1.x request line
  // Its method and target, and its Host field, as far as the capture kept them (empty: not HTTP,
  // or cut off by the snap length): what a replay against a real server asks for.
  std::string method, target, host;
};
constexpr size_t kMaxRequestTarget = 2048, kMaxRequestHost = 255;

struct MonkeyConnection {
  uint64_t id = 0;  // in the order the connections began in the capture
  Nanos start = 0, end = 0;
  TcpEndpoint client, server;
  std::string ended_by;  // fin, rst, capture-end, idle, evicted
  std::optional<Nanos> rtt, handshake_rtt;
  uint64_t rtt_samples = 0;
  uint16_t client_mss = 0, server_mss = 0;  // as the SYNs announced them (0: not seen)
  uint32_t largest_server_segment = 0;
  int client_window_scale = -1, server_window_scale = -1;  // -1: not offered
  bool sack = false, timestamps = false, ecn = false;
  // The server sent a segment below the MSS while an earlier one was unacknowledged: Nagle's
  // algorithm was off (TCP_NODELAY). Not seen: on, or no occasion to tell.
  bool nodelay = false;
  uint64_t ce_marks = 0;
  uint64_t client_window = 0;  // bytes, scaled: the window of the client's first request
  std::optional<double> bandwidth_bps;
  uint64_t bandwidth_samples = 0;
  uint64_t server_segments = 0, retransmissions = 0, spurious = 0;
  std::optional<double> loss;
  // The server's data packets that were lost (sent again, not spuriously), by their place among
  // all it sent (from 1, retransmissions counted): what a replay loses to repeat the trace.
  std::vector<uint64_t> lost_packets;
  uint64_t client_acks = 0, acked_segments = 0;  // advancing ACKs, and the segments they covered
  uint64_t client_bytes = 0, server_bytes = 0;
  std::vector<MonkeyExchange> exchanges;
  std::vector<std::string> flags;  // why a figure is missing or uncertain (see docs)
};

struct MonkeySeeOptions {
  Nanos idle_end = 600 * kNanosPerSec;  // a connection silent this long (capture time) is reported
  size_t max_open = 200'000;            // open connections at once; beyond, the longest silent is reported
  size_t max_exchanges = 100'000;       // per connection; beyond, the rest join the last one (flagged)
};

class MonkeySee {
 public:
  using Sink = std::function<void(MonkeyConnection&&)>;
  explicit MonkeySee(Sink sink, MonkeySeeOptions options = {});
  ~MonkeySee();
  void segment(Nanos time, const TcpSegment& s);
  // The capture has ended: every connection still open is reported.
  void finish();
  uint64_t reported() const { return reported_; }

 private:
  struct Tracked;
  void report(Tracked& t, const std::string& ended_by);
  static void add_to_parts(Tracked& t, MonkeyExchange& e, Nanos time, uint64_t fresh);
  void sweep(Nanos now, const Tracked* keep = nullptr);  // never evicts `keep`

  Sink sink_;
  MonkeySeeOptions options_;
  std::map<std::pair<TcpEndpoint, TcpEndpoint>, std::unique_ptr<Tracked>> open_;
  uint64_t next_id_ = 1, reported_ = 0;
  Nanos last_sweep_ = 0;
};

// The inferred figures of a finished connection (RTT, bandwidth, loss, flags) from what was
// followed: exposed for the unit tests.
void conclude(MonkeyConnection& c);

// Feeds every TCP segment of `reader`'s capture to `see`, then finishes it. Returns the segments
// read and the other frames (not TCP, or cut before their TCP header).
struct SeenCapture {
  uint64_t segments = 0, other = 0;
};
SeenCapture see_capture(CaptureReader& reader, MonkeySee& see);
