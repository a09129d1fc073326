// SPDX-License-Identifier: GPL-3.0-or-later
// mm-loss uplink|downlink MODEL [uplink|downlink MODEL] [--seed N] [--] [COMMAND...]
#include <optional>
#include <vector>

#include "packet/loss_model.hh"
#include "packet/queues.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"

namespace {
const ProgramInfo kInfo{"mm-loss", "uplink|downlink MODEL [uplink|downlink MODEL] [--seed N] [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace where packets are lost\n"
                        "in the given direction as MODEL says. uplink: packets leaving the shell; downlink: packets\n"
                        "entering it. Both directions may be given at once, e.g. mm-loss uplink 0.01 downlink 0.02.\n"
                        "\n"
                        "MODEL (probabilities from 0 to 1, or as percentages: 1%):\n"
                        "  RATE                     each packet lost independently with probability RATE\n"
                        "  gemodel p [r [1-h [1-k]]]\n"
                        "                           bursts, Gilbert-Elliott as netem: lost with 1-k in the Good state\n"
                        "                           and 1-h in Bad, which it enters with p and leaves with r (Bad\n"
                        "                           lasts 1/r packets on average); defaults r = 1-p, 1-h = 1, 1-k = 0\n"
                        "  state p13 [p31 [p32 [p23 [p14]]]]\n"
                        "                           netem's 4-state model (1 gap, 2 burst, 3 lost in a burst, 4 an\n"
                        "                           isolated loss); defaults p31 = 1-p13, p32 = 0, p23 = 1, p14 = 0\n"
                        "\n"
                        "Options:\n"
                        "  --seed N    seed the random drops, so that a run can be repeated exactly\n" +
                            std::string(kHelpAndVersionLines)};

enum Direction { kUplink, kDownlink };
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<LossModel> model[2];
    std::vector<std::string> words;  // the model being read: its name and probabilities
    std::optional<Direction> pending;
    std::optional<uint64_t> seed;
    ShellSpec spec;
    auto finish = [&] {  // the model after `pending`, complete
      model[*pending] = LossModel::parse(words);
      words.clear();
      pending.reset();
    };
    ArgScanner scanner(kInfo, {ArgScanner::seed_option(seed), ArgScanner::verbose_option(spec.verbose)});
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (pending) {
        if (words.empty()) {
          words.emplace_back(word);
          if (LossModel::parameters_of(word) == 0) finish();  // a RATE
          return true;
        }
        // A model's probabilities, as many as parse (a command after them needs no "--"; one
        // too many is an error, not a command named 0.5).
        if (parse_loss_probability(word)) {
          words.emplace_back(word);
          return true;
        }
        finish();
      }
      if (word == "uplink" || word == "downlink") {
        const Direction d = word == "uplink" ? kUplink : kDownlink;
        if (model[d]) throw UsageError(std::string(word) + " given twice");
        pending = d;
        return true;
      }
      if (!model[kUplink] && !model[kDownlink]) {
        throw UsageError("unknown direction \"" + std::string(word) + "\" (expected uplink or downlink)");
      }
      return false;
    });
    if (pending && words.empty())
      throw UsageError("missing loss rate or model after " + std::string(*pending == kUplink ? "uplink" : "downlink"));
    if (pending) finish();
    if (!model[kUplink] && !model[kDownlink]) throw UsageError("missing direction and loss model");
    spec.device_kind = "loss";
    if (model[kUplink]) spec.tag += "[loss up=" + model[kUplink]->describe() + "] ";
    if (model[kDownlink]) spec.tag += "[loss down=" + model[kDownlink]->describe() + "] ";
    uint64_t base_seed = seed ? *seed : Random::fresh_seed();
    const uint64_t up_seed = Random::splitmix(base_seed), down_seed = Random::splitmix(base_seed);
    const LossModel up = model[kUplink].value_or(LossModel::bernoulli(0));
    const LossModel down = model[kDownlink].value_or(LossModel::bernoulli(0));
    spec.ferry = [=](const FerryEndpoints& tuns, const std::function<void()>& ready) {
      GateQueue uplink(LossGate(up, up_seed)), downlink(LossGate(down, down_seed));
      return run_ferry_pair(tuns, uplink, downlink, ready);
    };
    return spec;
  });
}
