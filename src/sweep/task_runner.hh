// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Runs a sweep's tasks (page loads, runs of a command), each a process group of its own, up to
// `jobs` at once. What a task is, how it starts and what its end means are the caller's (the
// hooks); the runner keeps the count, the progress lines with the time left, the deadlines and
// the signals. SIGINT, SIGTERM or SIGHUP stop the sweep: every running task's process group gets
// SIGTERM (shells then end what runs inside them), is waited for, and is discarded; SIGKILL
// follows after kStopGraceSeconds. A task that runs beyond its deadline is taken as hung: stopped
// the same way, and the sweep fails. A task whose end the caller finds no result of (finish
// throws) fails the sweep: running tasks finish, no new one starts.
#include <sys/types.h>

#include <functional>
#include <ostream>
#include <string>

#include "util/clock.hh"

inline constexpr double kStopGraceSeconds = 20;

struct TaskHooks {
  // Starts task i in a new process group; returns its leader's pid. Throwing fails the sweep.
  std::function<pid_t(size_t i)> launch;
  // Task i ended by itself with `exit_code` (as a shell gives it): stores its result and returns
  // the progress line's text ("ID run N: ok, PLT 812 ms"); throws UserError (the whole message,
  // ending in a newline) when it left no result, which fails the sweep.
  std::function<std::string(size_t i, int exit_code)> finish;
  // Task i was stopped (interrupted, hung): removes what it left half-done.
  std::function<void(size_t i)> discard;
  // The message for task i when it hung (without "mm-sweep: " and the newline).
  std::function<std::string(size_t i)> hung_message;
};

struct TaskRun {
  enum class Outcome { Complete, Interrupted, Failed };
  Outcome outcome = Outcome::Complete;
  int signal = 0;  // the signal that interrupted it
  size_t stored = 0;
};

// Runs tasks 0 .. count-1 in order, up to `jobs` at once; each may run `hung_after` before it is
// taken as hung. `noun`: what a task is called in the messages ("load", "run").
TaskRun run_tasks(size_t count, int jobs, Nanos hung_after, const TaskHooks& hooks, const std::string& noun,
                  std::ostream& progress);

// "about 2 min 10 s": a duration for the progress lines.
std::string duration_text(double seconds);
