// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-eth's options (the paper's EthShell and UsbShell): the interface whose devices become the
// shell's clients, or a TAP for a VM; the devices' subnet. Its root acts: attached_device.hh.
#include "shell/packet_shell.hh"
#include "util/args.hh"

// Scans mm-eth's arguments (after the program's name) and builds the shell's spec; throws
// UsageError for what the user got wrong.
ShellSpec eth_shell(const ProgramInfo& info, int ac, char** av);
