// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Running a sweep's loads: each load is one command line (sweep_grid.hh's load_command), a fresh
// stack of shells around one mm-pageload --runs 1, started as a process group of its own with
// its output in RESULTS/loads/ID/run-N.log, run by task_runner.hh (up to `jobs` at once, signals,
// hung loads). A load whose mm-pageload wrote its JSON is stored at once (sweep_store.hh),
// whatever its status; a load that wrote no JSON is a failure of the harness (a shell that
// cannot start, a missing program) and stops the sweep, with the command and the end of its log.
#include <ostream>
#include <string>
#include <vector>

#include "sweep/sweep_grid.hh"
#include "sweep/sweep_store.hh"
#include "sweep/task_runner.hh"

// A load that runs this long beyond --timeout (shell set-up and tear-down, browser start and
// exit included) is taken as hung: stopped as above, and the sweep fails.
inline constexpr double kHungLoadSeconds = 120;

struct LoadTask {
  Configuration config;
  int run;
};

// The loads of `configs` not yet stored, baselines first (the optimal needs them), then each
// configuration's runs in order.
std::vector<LoadTask> pending_loads(const ResultStore& store, const std::vector<Configuration>& configs);

// The last `count` lines of a file (each cut at 300 bytes, "  | " before each), for a failure's
// message.
std::string tail_lines(const std::filesystem::path& path, size_t count);

// Runs `tasks`, up to `jobs` at once, writing a line per finished load (and the estimated time
// left) to `progress`.
TaskRun run_loads(const ResultStore& store, const SweepSettings& settings, const SweepPrograms& programs,
                  const std::vector<LoadTask>& tasks, int jobs, std::ostream& progress);
