// SPDX-License-Identifier: GPL-3.0-or-later
// mm-onoff uplink|downlink MEAN-ON-S MEAN-OFF-S [--seed N] [--] [COMMAND...]
#include "shell/switching_shell.hh"

namespace {
const ProgramInfo kInfo{"mm-onoff", "uplink|downlink MEAN-ON-SECONDS MEAN-OFF-SECONDS [--seed N] [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace where the given\n"
                        "direction alternates between on (packets pass) and off (every arriving packet is\n"
                        "dropped). Each on and off period lasts an exponentially distributed time with the given\n"
                        "mean, in seconds (fractions allowed). The link starts on.\n"
                        "\n"
                        "Options:\n"
                        "  --seed N    seed the random periods, so that a run can be repeated exactly\n" +
                            std::string(kHelpAndVersionLines)};
}

int main(int argc, char** argv) {
  return run_switching_shell(argc, argv, kInfo, "onoff", OnOffGate::Durations::Exponential);
}
