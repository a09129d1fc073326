// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One run of a command sweep, in a process of its own (a child of mm-sweep leading a process
// group): the server started in the caller's namespace (sh -c SERVER) and waited for until
// something listens on the run's port; the shells around the scheme's command (command_grid.hh's
// command_run_argv), with the run's time limit; the server ended; the link's logs read into
// figures (flow_figures.hh); the run's result written whole (RESULTS/runs/ID/run-N.json). Both
// commands get MM_SWEEP_PORT, MM_SWEEP_SCHEME, MM_SWEEP_CC, MM_SWEEP_RUN and
// MM_SWEEP_CONFIGURATION in their environment. SIGTERM (the sweep stopping) ends both, waits
// for them and writes nothing.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "sweep/command_grid.hh"

// How long the server may take to listen on its port, and to end once asked.
inline constexpr double kServerListenSeconds = 10;
inline constexpr double kServerStopSeconds = 5;

// A free port (TCP and UDP) on every address of this namespace, for a run's server.
uint16_t free_port();

struct CommandRunFiles {
  std::filesystem::path result, log, server_log, uplink_log, downlink_log;
};

struct CommandRun {
  const CommandSweepSettings& settings;
  const CommandConfiguration& config;
  int run;
  const CommandPrograms& programs;
  CommandRunFiles files;
  uint16_t port;
  bool keep_link_logs;
};

// The body of the run's process: returns its exit status (0 when it wrote the result, 1 when it
// was stopped or could not run the shells, which the log then says).
int run_command_once(const CommandRun& run);

// The run's status in its result: "ok" (the command ended with 0), "failed" (another status),
// "timeout" (stopped at --timeout), "server-failed" (the server ended before listening, or never
// listened); and the line the sweep prints for it.
std::string command_run_outcome(const nlohmann::json& result);
