// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Monkey Do's server emulator (mm-monkey serve): answers each request (monkey_wire.hh) with the
// recorded number of bytes after the recorded server delay, on the TCP of the namespace it runs
// in, and keeps, per exchange, when the request's first byte was read and when the response's
// last byte was sent: the replayed response time at the server, the paper's measure. One thread,
// one epoll loop, every connection bounded (its head, its pending bytes). A response goes in the
// parts the plan gives (each written once the one before has left, after the application's
// pause), with Nagle's algorithm on unless the plan says the traced server had it off: the same
// kernel then holds a part's last small segment as the traced server's did.
#include <cstdint>
#include <functional>
#include <string>

#include "monkey/monkey_wire.hh"
#include "util/address.hh"

struct MonkeyServerOptions {
  Ipv4 address;
  uint16_t port = 8000;
  size_t max_connections = 100'000;  // open at once; more are closed as they come
  std::string congestion_control;    // TCP_CONGESTION of every connection (empty: the namespace's)
  ServerPlan plan;                   // how each response is written (monkey_wire.hh)
};

// Serves until a stop request and returns its status; `listening` is called once it listens.
int run_monkey_server(const MonkeyServerOptions& options, const std::function<void()>& listening);
