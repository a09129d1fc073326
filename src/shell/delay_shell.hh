// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-delay's options and ferry: a fixed one-way delay in each direction, or one per destination
// (--destination, --destinations), or a delay that varies over time (--delay-trace) with jitter,
// reordering and duplication; logged and metered as mm-link's (shell/shell_watch.hh).
#include "shell/packet_shell.hh"
#include "util/args.hh"

// Scans mm-delay's arguments (after the program's name) with `info`'s help and builds the
// shell's spec; throws UsageError for what the user got wrong.
ShellSpec delay_shell(const ProgramInfo& info, int ac, char** av);
