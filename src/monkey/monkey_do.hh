// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Monkey Do (mm-monkey do): a workload replayed, each connection at its recorded start, from its
// client's own address, through that client's own path, against the server emulator.
//
//   mm-monkey do: an isolated namespace (mm-replay's kind: nothing outside reaches it), the
//   |             clients' addresses on its lo; the ferry (the user's rights) reads the workload,
//   |             asks for the addresses, runs the client emulator (monkey_clients.hh), stops the
//   |             server and writes the results
//   `- mm-paths TABLE: every client's path (delay RTT/2 each way, its bandwidth, its loss toward it)
//      `- mm-monkey serve: the server emulator (monkey_server.hh), on the namespace's own TCP
//
// Or against a real server under test (--server PORT -- COMMAND...): COMMAND runs in mm-paths's
// namespace under mm-monkey serve --stop-fifo (server_under_test.hh), the clients send each
// exchange's recorded HTTP/1.x request (its method, target and Host, padded to its recorded size)
// and read the server's own response, and mm-paths --capture records the replay at the server,
// which Monkey See then reads as it read the trace.
//
// The replayed response time is measured where the trace's was, at the server: the request's
// first byte read to the response's last byte sent.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "monkey/monkey_clients.hh"
#include "monkey/monkey_wire.hh"
#include "monkey/workload.hh"
#include "shell/packet_shell.hh"
#include "util/address.hh"

// Where the clients' addresses come from: 172.16.0.1 on, one per client of the trace.
constexpr uint32_t kFirstClientAddress = 0xac100001;  // 172.16.0.1

struct MonkeyPlan {
  std::vector<Ipv4> clients;                      // one per client address of the trace, in order of appearance
  std::string paths;                              // mm-paths's table: each client's path
  std::string server;                             // the server emulator's plan: responses in parts, Nagle off
  std::vector<ClientConnectionPlan> connections;  // those replayed, in the workload's order
  // Per connection of the workload: its emulated client, and why it is not replayed (empty: it is).
  std::vector<Ipv4> emulated_client;
  std::vector<std::string> not_replayed;
  size_t without_rtt = 0;        // connections whose RTT was not measured (their client's, or the median)
  size_t without_bandwidth = 0;  // ... their bandwidth (no rate limit then)
};

// The plan of a replay: each client's path (its connections' smallest RTT, their median
// bandwidth, their mean loss), and each exchange's think time (the trace's gap less the round
// trip the client waited for) and server delay. Throws UserError if the workload has more
// clients than an isolated namespace takes addresses (kMaxIsolatedAddresses). `real_server`:
// each exchange is its recorded HTTP/1.x request (a connection with an exchange whose request
// line is unknown, as TLS's, is not replayed).
MonkeyPlan plan_replay(const std::vector<WorkloadConnection>& workload, size_t max_clients, bool real_server = false);

// An HTTP/1.1 request for exchange `e` of a connection to `server` (its Host if the trace had
// none), of the recorded size where the head is smaller: padded by a header field, or for a
// method with a body (POST, PUT, PATCH), by a body of the rest. Nothing if the trace did not
// keep the request line.
std::optional<HttpRequestPlan> http_request_plan(const WorkloadExchange& e, const std::string& server);

// The results: one CSV row per exchange (traced and replayed response times, their relative
// error), and the summary line.
struct MonkeyResults {
  std::string csv;
  std::string summary;
  size_t compared = 0, within_10 = 0, within_20 = 0;
  size_t other_size = 0, not_ok = 0;  // a real server's responses: of another size (> 10 %), status >= 400
};
MonkeyResults compare_replay(const std::vector<WorkloadConnection>& workload, const MonkeyPlan& plan,
                             const ClientRunResult& clients, const std::vector<ServedExchange>& served);

// mm-monkey do's command line (after "do") into the shell's spec.
ShellSpec monkey_do_shell(const ProgramInfo& info, int ac, char** av);
