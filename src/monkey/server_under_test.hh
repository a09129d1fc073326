// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A real server under test in a Monkey Do replay (mm-monkey do --server PORT -- COMMAND...):
// mm-monkey serve --stop-fifo FIFO -- COMMAND... runs COMMAND (nginx, Apache, the user's own) in
// mm-paths's namespace, in a process group of its own, until mm-monkey do writes the replay's
// status to FIFO ("STATUS\n"); it then ends the server (SIGTERM to its group; SIGKILL after
// kStopGrace) and exits with that status. The server ending on its own first with a failure ends
// the replay (its status is the exit status); ending with 0 is taken as a server that went into
// the background (nginx without "daemon off"), which the shell ends with everything else at the end.
#include <string>
#include <vector>

#include "util/clock.hh"

constexpr Nanos kStopGrace = 5 * kNanosPerSec;

int run_server_under_test(const std::string& stop_fifo, const std::vector<std::string>& command);

// mm-monkey do's side: asks the controller behind `stop_fifo` to stop with `status`. False if
// nobody is reading it (the controller has already ended).
bool stop_server_under_test(const std::string& stop_fifo, int status);
