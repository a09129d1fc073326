// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Monkey's workload file: what Monkey See inferred, one line per connection ("C") followed by
// one per exchange ("E"), tab-separated, with '#' lines naming the columns (man mm-monkey,
// "WORKLOAD FILE"). Missing figures are "-". Read by awk, a spreadsheet, or Monkey Do.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "monkey/monkey_see.hh"

// The header: the format's line, the capture's description, and the two lines naming the columns.
std::string workload_header(const std::string& capture_description);
// A connection's lines.
std::string workload_lines(const MonkeyConnection& c);

// A workload as Monkey Do reads it back: per connection what Monkey See wrote, the figures it
// replays by (times in milliseconds from the connection's start, at the server).
struct WorkloadPart {
  uint64_t bytes = 0;
  double pause_ms = 0;  // the application's, before this part (the first's: 0; the server delay is apart)
};

struct WorkloadExchange {
  uint32_t index = 0;  // from 1
  double request_start_ms = 0, request_end_ms = 0;
  uint64_t request_bytes = 0;
  std::optional<double> response_start_ms, response_end_ms;
  uint64_t response_bytes = 0;
  std::optional<double> response_time_ms;  // the traced one: first request byte to last response byte
  std::vector<WorkloadPart> parts;         // as the server wrote it (format 1: none, one part)
  std::string method, target, host;        // HTTP/1.x (format 3): what was asked for, if known
};

struct WorkloadConnection {
  uint64_t id = 0;
  double start_s = 0;  // capture time
  std::string client, server;
  uint16_t client_port = 0, server_port = 0;
  std::optional<double> rtt_ms, bandwidth_mbps, loss;
  std::string flags;  // "-" for none
  bool nodelay = false;
  uint64_t server_segments = 0, retransmissions = 0;  // the server's data packets: their sum
  std::vector<uint64_t> lost_packets;                 // which of them were lost (format 2)
  bool has_lost_packets = false;                      // format 2: lost_packets says (empty: none)
  std::vector<WorkloadExchange> exchanges;
};

// Bounds on what a workload may hold (Monkey Do replays it all at once).
constexpr size_t kMaxWorkloadConnections = 1'000'000;
constexpr size_t kMaxWorkloadExchanges = 10'000'000;       // in all
constexpr uint64_t kMaxWorkloadBytes = uint64_t{1} << 36;  // one request or response: 64 GiB
constexpr double kMaxWorkloadMs = 7 * 24 * 3'600'000.0;    // a week

// Reads a workload file (workload_header()'s format 3, or the earlier 1 and 2). Throws UserError naming `source`, the
// line and what is wrong.
std::vector<WorkloadConnection> parse_workload(std::string_view text, const std::string& source);
