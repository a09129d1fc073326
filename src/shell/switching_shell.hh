// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-onoff and mm-intermittent: one direction switches between on (forward) and off (drop).
#include <string>

#include "packet/queues.hh"
#include "util/args.hh"

// Scans the shell's arguments (uplink|downlink ON-SECONDS OFF-SECONDS; --seed with exponential
// durations) and runs it; returns the program's exit status.
int run_switching_shell(int argc, char** argv, const ProgramInfo& info, const std::string& tag_word,
                        OnOffGate::Durations durations);
