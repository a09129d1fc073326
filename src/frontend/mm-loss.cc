// SPDX-License-Identifier: GPL-3.0-or-later
// mm-loss uplink|downlink RATE [uplink|downlink RATE] [--seed N] [--] [COMMAND...]
#include <optional>

#include "packet/queues.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"

namespace {
const ProgramInfo kInfo{"mm-loss", "uplink|downlink RATE [uplink|downlink RATE] [--seed N] [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace where each packet\n"
                        "is dropped independently with probability RATE (0 to 1) in the given direction.\n"
                        "uplink: packets leaving the shell; downlink: packets entering it. Both directions may\n"
                        "be given at once, e.g. mm-loss uplink 0.01 downlink 0.02.\n"
                        "\n"
                        "Options:\n"
                        "  --seed N    seed the random drops, so that a run can be repeated exactly\n" +
                            std::string(kHelpAndVersionLines)};

enum Direction { kUplink, kDownlink };
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<double> rate[2];
    std::string typed[2];
    std::optional<uint64_t> seed;
    std::optional<Direction> pending;
    ShellSpec spec;
    ArgScanner scanner(kInfo, {ArgScanner::seed_option(seed), ArgScanner::verbose_option(spec.verbose)});
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (pending) {
        rate[*pending] = parse_probability(word, "loss rate");
        typed[*pending] = word;
        pending.reset();
        return true;
      }
      if (word == "uplink" || word == "downlink") {
        const Direction d = word == "uplink" ? kUplink : kDownlink;
        if (rate[d]) throw UsageError(std::string(word) + " given twice");
        pending = d;
        return true;
      }
      if (!rate[kUplink] && !rate[kDownlink]) {
        throw UsageError("unknown direction \"" + std::string(word) + "\" (expected uplink or downlink)");
      }
      return false;
    });
    if (pending)
      throw UsageError("missing loss rate after " + std::string(*pending == kUplink ? "uplink" : "downlink"));
    if (!rate[kUplink] && !rate[kDownlink]) throw UsageError("missing direction and loss rate");
    spec.device_kind = "loss";
    if (rate[kUplink]) spec.tag += "[loss up=" + typed[kUplink] + "] ";
    if (rate[kDownlink]) spec.tag += "[loss down=" + typed[kDownlink] + "] ";
    uint64_t base_seed = seed ? *seed : Random::fresh_seed();
    const uint64_t up_seed = Random::splitmix(base_seed), down_seed = Random::splitmix(base_seed);
    const double up_rate = rate[kUplink].value_or(0), down_rate = rate[kDownlink].value_or(0);
    spec.ferry = [=](const FerryEndpoints& tuns, const std::function<void()>& ready) {
      GateQueue uplink(LossGate(up_rate, up_seed)), downlink(LossGate(down_rate, down_seed));
      return run_ferry_pair(tuns, uplink, downlink, ready);
    };
    return spec;
  });
}
