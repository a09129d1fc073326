// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: Monkey's workload files as mm-monkey do's ferry reads them from a user's file
// (monkey/workload.hh), and the replay planned from them (monkey/monkey_do.hh), against the
// emulator and against a real server: what the plan hands on, the nested mm-paths and the server
// emulator must read, and every request for a real server must be one whole HTTP/1.1 request.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.hh"
#include "http/http_parser.hh"
#include "monkey/monkey_do.hh"
#include "monkey/monkey_wire.hh"
#include "monkey/workload.hh"
#include "packet/peer_paths.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<WorkloadConnection> workload;
  try {
    workload = parse_workload(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.workload");
  } catch (const UserError&) {
    return 0;
  }
  for (bool real_server : {false, true}) {
    MonkeyPlan plan;
    try {
      plan = plan_replay(workload, 64, real_server);
    } catch (const UserError&) {
      FUZZ_CHECK(workload.size() > 64);  // only for more clients than addresses
      return 0;
    }
    FUZZ_CHECK(plan.emulated_client.size() == workload.size() && plan.not_replayed.size() == workload.size());
    FUZZ_CHECK(plan.connections.size() <= workload.size());
    const std::vector<PeerPath> paths = parse_peer_paths(plan.paths, "plan.paths");  // throws: a bug
    FUZZ_CHECK(paths.size() == plan.clients.size());
    (void)parse_server_plan(plan.server, "plan.server");
    for (const ClientConnectionPlan& c : plan.connections) {
      for (const ClientExchangePlan& e : c.exchanges) {
        FUZZ_CHECK(e.think >= 0);
        FUZZ_CHECK(real_server == e.http.has_value());
        if (!e.http) continue;
        HttpParser parser(HttpParser::Direction::Request);
        parser.feed(e.http->head + std::string(e.http->body, 'x'));
        FUZZ_CHECK(parser.state() == HttpParser::State::Http && parser.has_completed() && !parser.in_message());
        // The recorded size, unless the head alone is larger (then no padding and no body), or
        // the padding reached its bound.
        const uint64_t total = e.http->head.size() + e.http->body, recorded = e.request.request_bytes;
        const bool padded = e.http->head.find("X-Monkey-Padding: ") != std::string::npos;
        FUZZ_CHECK(total == recorded || (total > recorded && !padded && e.http->body == 0) ||
                   (total < recorded && padded && e.http->head.size() > 60'000));
      }
    }
  }
  return 0;
}
