// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A reaper is the subreaper of everything its main child starts: a process whose parent ends
// (a pipeline's members when bash is killed, a background job, a daemon) becomes its child. When
// it ends, for whatever reason, it ends them all (politely, then for good), so that nothing keeps
// running in a namespace whose link is gone. It signals only its own children, whose pids stay
// theirs until it reaps them. There are two, one inside the other (see run_shell):
//  - the guard, with the user's rights, whose main child is the command. It also ends everything
//    when the supervisor vanishes (killed with SIGKILL): it notices as end-of-file on a pipe.
//  - the supervisor, whose main child is the guard, and which also watches the ferry. If the
//    guard is killed, the command's processes come to the supervisor, which ends them.
#include <sys/types.h>

#include <string>
#include <vector>

#include "util/clock.hh"
#include "util/signals.hh"

// The ferry a reaper watches (the supervisor's; the guard has none).
struct ReapedFerry {
  pid_t pid = -1;
  int status_fd = -1;  // the ferry writes a byte (or dies) when it has stopped
};

// How long the processes of a shell that is ending get after the polite signal (SIGHUP for the
// command, SIGTERM for the others) before SIGKILL. A shell inside another gets a little less than
// the one around it, so that the outer shell's SIGKILL does not cut short the inner one's own
// clean-up (its stragglers, its ferry, its daemons).
Nanos ending_grace(const std::string& outer_prefix);

// Runs a reaper until its main child and everything it started have ended; returns the shell's
// exit status. `supervisor_fd`: the guard's end of a pipe the supervisor holds open (-1 for the
// supervisor). `spared`: children that are not the command's and end after the reaper
// (a rootless shell's way out, mm-eth's dnsmasq).
int run_reaper(const std::string& program, const std::string& command_name, pid_t main_child, ReapedFerry ferry,
               int supervisor_fd, Nanos grace, const std::vector<pid_t>& spared, const SignalFd& signals);
