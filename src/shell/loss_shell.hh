// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-loss's options and ferry: each direction's loss model (a rate, Gilbert-Elliott, netem's four
// states, a loss trace), logged and metered as mm-link's (shell/shell_watch.hh).
#include "shell/packet_shell.hh"
#include "util/args.hh"

// Scans mm-loss's arguments (after the program's name) with `info`'s help and builds the
// shell's spec; throws UsageError for what the user got wrong.
ShellSpec loss_shell(const ProgramInfo& info, int ac, char** av);
