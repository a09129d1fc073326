// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-paths's options and ferry: each peer on the far side of the shell on a path of its own
// (delay, rate, loss and queue in each direction: packet/peer_paths.hh), in one ferry.
#include "shell/packet_shell.hh"
#include "util/args.hh"

// Scans mm-paths's arguments (after the program's name) with `info`'s help and builds the
// shell's spec; throws UsageError for what the user got wrong.
ShellSpec paths_shell(const ProgramInfo& info, int ac, char** av);
