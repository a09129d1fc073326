// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What Monkey Do's client emulator and server emulator say to each other. A request is the
// recorded number of bytes: a head line that tells the server what to answer, padded to the
// recorded size; the answer is the recorded number of bytes after the recorded server delay.
//   "MKY1 CONNECTION INDEX REQUEST-BYTES RESPONSE-BYTES DELAY-US\n" then padding
//   "MKY1 stop STATUS\n": the server sends its log of what it served and exits with STATUS
// A recorded request smaller than its head is sent as the head alone (a few dozen bytes).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/clock.hh"

struct MonkeyRequest {
  uint64_t connection = 0;
  uint32_t index = 0;
  uint64_t request_bytes = 0, response_bytes = 0;
  uint64_t delay_us = 0;
  bool operator==(const MonkeyRequest&) const = default;
};

constexpr size_t kMaxRequestHead = 128;
constexpr uint64_t kMaxServerDelayUs = 600'000'000;  // ten minutes

std::string encode_request_head(const MonkeyRequest& request);

struct MonkeyStop {
  int status = 0;
};
// A complete head line (without its '\n'): a request, a stop, or nullopt if it is neither
// (the server then closes the connection).
struct ParsedHead {
  std::optional<MonkeyRequest> request;
  std::optional<MonkeyStop> stop;
};
ParsedHead parse_request_head(std::string_view line);

// One exchange as the server emulator served it, at the server: the request's first byte read,
// and its response's last byte sent (no byte of it left unsent in the socket).
struct ServedExchange {
  uint64_t connection = 0;
  uint32_t index = 0;
  Nanos first_byte = 0, last_byte_sent = 0;
  uint64_t response_bytes = 0;
};
std::string served_line(const ServedExchange& e);
std::optional<ServedExchange> parse_served_line(std::string_view line);

// How the server wrote each response, and whether its connections had Nagle's algorithm off: the
// server emulator's plan (mm-monkey serve --plan), one line per exchange:
//   "CONNECTION INDEX NODELAY BYTES,BYTES@PAUSE-US,..."
// A request the plan does not name is answered in one part, with Nagle's algorithm on.
struct ServerPart {
  uint64_t bytes = 0;
  Nanos pause = 0;
  bool operator==(const ServerPart&) const = default;
};
struct ServerPlan {
  std::map<std::pair<uint64_t, uint32_t>, std::vector<ServerPart>> parts;
  std::set<uint64_t> nodelay;  // connections
};
std::string server_plan_line(uint64_t connection, uint32_t index, bool nodelay, const std::vector<ServerPart>& parts);
// Throws UserError naming `source` and the line.
ServerPlan parse_server_plan(std::string_view text, const std::string& source);

// Timers by due time: (due, id) pairs, earliest first.
class DueQueue {
 public:
  void push(Nanos due, uint64_t id) { heap_.push({due, id}); }
  bool empty() const { return heap_.empty(); }
  Nanos next() const { return heap_.empty() ? kNever : heap_.top().first; }
  uint64_t pop() {
    const uint64_t id = heap_.top().second;
    heap_.pop();
    return id;
  }

 private:
  std::priority_queue<std::pair<Nanos, uint64_t>, std::vector<std::pair<Nanos, uint64_t>>, std::greater<>> heap_;
};
