// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-sweep --command: every run of a command sweep not yet stored, up to `jobs` at once (each
// in a process of its own, command_run.hh), then its report (command_report.hh).
#include <optional>
#include <ostream>
#include <string>

#include "sweep/command_grid.hh"
#include "sweep/task_runner.hh"

struct CommandSweepRequest {
  CommandSweepSettings settings;
  CommandPrograms programs;
  std::string out;
  std::optional<std::string> only;  // one configuration's id
  int jobs = 1;
  bool keep_link_logs = false;
};

// A run that lasts this long beyond --timeout (the server's start and end, the shells' set-up and
// tear-down) is taken as hung.
inline constexpr double kHungRunSeconds = 60;

// A run's server listens in mm-sweep's network namespace, where another user of the machine could
// connect to it during the run (and disturb or fail it). So a command sweep with a server runs
// inside a shell of its own, mm-delay 0, whose namespace other users cannot open connections
// into (a shell's owner guard: docs/security.md), with the runs' shells nested inside it; not
// when it runs in a shell already ($MAHIMAHI_BASE, or the mark this sets).
bool needs_private_shell(const CommandSweepSettings& settings);
// Replaces this process with programs.delay 0 -- (this program) argv[1]...: returns only by a
// SystemError, when the shell cannot be run.
[[noreturn]] void run_in_private_shell(const CommandPrograms& programs, int argc, char** argv);

// Returns mm-sweep's exit status: 0 when every run is stored (whatever its status), 1 when the
// harness failed, 128+N when signal N interrupted it.
int run_command_sweep(const CommandSweepRequest& request, std::ostream& progress);
