// SPDX-License-Identifier: GPL-3.0-or-later
// mm-intermittent uplink|downlink ON-S OFF-S [--] [COMMAND...]
#include "shell/switching_shell.hh"

namespace {
const ProgramInfo kInfo{"mm-intermittent", "uplink|downlink ON-SECONDS OFF-SECONDS [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace where the given\n"
                        "direction is periodically on for ON-SECONDS (packets pass), then off for OFF-SECONDS\n"
                        "(every arriving packet is dropped), starting on. Fractions of seconds are allowed.\n"
                        "\n"
                        "Options:\n" +
                            std::string(kHelpAndVersionLines)};
}

int main(int argc, char** argv) {
  return run_switching_shell(argc, argv, kInfo, "intermittent", OnOffGate::Durations::Fixed);
}
