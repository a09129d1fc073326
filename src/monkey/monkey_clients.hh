// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Monkey Do's client emulator: every connection of a workload opened at its recorded start from
// its client's own address, each request sent its recorded think time after the previous
// response (or after the handshake), of its recorded size, and its response read whole. One
// thread and one epoll loop for all of them; connections open at once are bounded.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "monkey/monkey_wire.hh"
#include "util/address.hh"
#include "util/clock.hh"

// Against a real server (mm-monkey do --server): an HTTP/1.1 request instead of the emulator's
// head, its response read as HTTP frames it (its length is the server's, not the trace's).
struct HttpRequestPlan {
  std::string method;  // what the response is to (HEAD: no body)
  std::string head;    // the request's head, whole
  uint64_t body = 0;   // bytes after it (Content-Length)
};

struct ClientExchangePlan {
  Nanos think = 0;  // after the handshake (the first) or the previous response
  MonkeyRequest request;
  std::optional<HttpRequestPlan> http;
};

struct ClientConnectionPlan {
  uint64_t id = 0;
  Ipv4 client;
  Nanos start = 0;  // from the replay's start
  std::vector<ClientExchangePlan> exchanges;
};

struct ClientExchangeResult {
  uint64_t connection = 0;
  uint32_t index = 0;
  Nanos sent = 0, received = 0;  // the request's first byte written, the response's last read
  bool done = false;
  uint64_t response_bytes = 0;  // as received (headers and body)
  int status = 0;               // HTTP: the response's status code
};

struct ClientRunResult {
  std::vector<ClientExchangeResult> exchanges;  // every planned one, in the plan's order
  std::vector<uint16_t> local_ports;            // each connection's own port (0: never bound)
  uint64_t connections = 0, failed = 0;
  std::vector<std::string> errors;  // the first few, each naming its connection
};

struct ClientOptions {
  size_t max_open = 20'000;          // connections open at once; later starts wait for a slot
  Nanos stall = 120 * kNanosPerSec;  // no progress at all for this long ends the run (failed)
  int stop_fd = -1;                  // readable: end now (a signal), the rest failed
};

ClientRunResult run_clients(const std::vector<ClientConnectionPlan>& plan, Ipv4 server, uint16_t port,
                            const ClientOptions& options);
