// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-meter-view's side of the meter viewer (the ferry's side, and the protocol, are in
// shell/meter_viewer.hh): draws the live graphs of mm-delay and mm-loss (--meter-*) for the
// shell's ferry, in a process of its own, so that those shells load no graphing library.

// Runs the viewer on the socket at meter_view::kSocketFd, with the ferry's arguments (argv[1..8]);
// returns the process's exit status.
int run_meter_viewer(int argc, char** argv);
