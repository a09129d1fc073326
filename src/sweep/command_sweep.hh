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

// Returns mm-sweep's exit status: 0 when every run is stored (whatever its status), 1 when the
// harness failed, 128+N when signal N interrupted it.
int run_command_sweep(const CommandSweepRequest& request, std::ostream& progress);
