// SPDX-License-Identifier: GPL-3.0-or-later
// mm-loss uplink|downlink MODEL [uplink|downlink MODEL] [--seed N] [--] [COMMAND...]
#include <optional>
#include <vector>

#include "frontend/meter_view.hh"
#include "frontend/shell_watch.hh"
#include "packet/loss_model.hh"
#include "packet/queues.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"
#include "util/file_descriptor.hh"

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
                        "  trace FILE               a loss probability that varies over time: \"TIME-MS PROBABILITY\"\n"
                        "                           per line, or one probability per line with --loss-interval\n"
                        "\n"
                        "Options:\n"
                        "  --loss-interval=MS   the time each line of a one-value loss trace covers\n"
                        "  --interpolate=step|linear   between a loss trace's points (default step)\n"
                        "  --once      hold a loss trace's last value after its end (default: it repeats)\n"
                        "  --seed N    seed the random drops, so that a run can be repeated exactly\n"
                        "  -u FILE, --uplink-log=FILE, -d FILE, --downlink-log=FILE\n"
                        "              log every arrival, drop and departure of that direction to FILE, in\n"
                        "              mm-link's format (mm-throughput-graph reads it)\n"
                        "  --meter-uplink, --meter-downlink, --meter-all,\n"
                        "  --meter-output=FILE.png|FILE.svg|DIR, --meter-snapshot-interval=S, --meter-stats\n"
                        "              live graphs of the traffic in and out, as mm-link's (see mm-link --help)\n" +
                            std::string(kHelpAndVersionLines)};

enum Direction { kUplink, kDownlink };
// A loss trace: 10 million points at most take well under this.
constexpr uint64_t kMaxLossTraceFileBytes = 256 << 20;
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<LossModel> model[2];
    std::vector<std::string> words;  // the model being read: its name and probabilities
    std::optional<Direction> pending;
    std::optional<uint64_t> seed;
    ShellSpec spec;
    LogOptions logs;
    MeterOptions meters;
    auto finish = [&] {  // the model after `pending`, complete
      model[*pending] = LossModel::parse(words);
      words.clear();
      pending.reset();
    };
    double interval_ms = 0;
    bool linear = false, once = false;
    std::vector<ArgScanner::Option> options{
        {"loss-interval", true,
         [&](std::string_view v) {
           interval_ms = parse_nonnegative(v, "--loss-interval");
           if (interval_ms <= 0 || interval_ms > kMaxDelayTraceMs)
             throw UsageError("--loss-interval must be above 0 and at most an hour");
         }},
        {"interpolate", true,
         [&](std::string_view v) {
           if (v != "step" && v != "linear")
             throw UsageError("--interpolate takes step or linear, not \"" + std::string(v) + "\"");
           linear = v == "linear";
         }},
        {"once", false, [&](std::string_view) { once = true; }},
        ArgScanner::seed_option(seed),
        ArgScanner::verbose_option(spec.verbose),
        ArgScanner::tcp_ecn_option(spec.tcp_ecn)};
    logs.add_options(options);
    meters.add_options(options, false);
    ArgScanner scanner(kInfo, std::move(options));
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (pending) {
        if (words.empty()) {
          words.emplace_back(word);
          if (LossModel::parameters_of(word) == 0) finish();  // a RATE
          return true;
        }
        if (words[0] == "trace") {  // its FILE, whatever it is called
          words.emplace_back(word);
          finish();
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
    auto is_trace = [&](int d) { return model[d] && model[d]->kind == LossModel::Kind::kTrace; };
    if (!is_trace(kUplink) && !is_trace(kDownlink) && (interval_ms > 0 || linear || once))
      throw UsageError("--loss-interval, --interpolate and --once go with a loss trace (trace FILE)");
    spec.follows_trace = is_trace(kUplink) || is_trace(kDownlink);
    spec.device_kind = ShellKind::Loss;
    logs.set_command_line(ac, av);
    meters.finish(spec, false);
    if (model[kUplink]) spec.tag += "[loss up=" + model[kUplink]->describe() + "] ";
    if (model[kDownlink]) spec.tag += "[loss down=" + model[kDownlink]->describe() + "] ";
    uint64_t base_seed = seed ? *seed : Random::fresh_seed();
    const uint64_t up_seed = Random::splitmix(base_seed), down_seed = Random::splitmix(base_seed);
    const LossModel up = model[kUplink].value_or(LossModel::bernoulli(0));
    const LossModel down = model[kDownlink].value_or(LossModel::bernoulli(0));
    // The traces are the user's files: read after the ferry dropped root's rights for good.
    const bool has[2] = {model[kUplink].has_value(), model[kDownlink].has_value()};
    spec.ferry = [=, tag = spec.tag](const FerryEndpoints& tuns, const std::function<void()>& ready) {
      const Nanos origin = trace_start(tuns);  // the outermost trace-following shell's start
      auto gate = [&](const LossModel& m, uint64_t gate_seed) {
        if (m.kind != LossModel::Kind::kTrace) return LossGate(m, gate_seed);
        TimeSeries trace =
            parse_time_series(read_user_file(m.trace_file, "loss trace", kMaxLossTraceFileBytes, "give a loss trace"),
                              user_file_name(m.trace_file), interval_ms, loss_trace_kind());
        trace.linear = linear;
        trace.once = once;
        return LossGate(m, gate_seed, std::move(trace), origin);
      };
      std::unique_ptr<EventViewer> viewer;
      if (meters.any()) viewer = std::make_unique<RemoteMeters>("mm-loss", meters, origin);
      ShellWatch watch("mm-loss", logs, tuns, std::move(viewer), origin);
      // A log's header names its direction's model: "[loss gemodel 0.01 0.3 1 0]", "[no loss]".
      auto what = [&](int d, const LossModel& m) { return has[d] ? "loss " + m.describe() : std::string("no loss"); };
      GateQueue uplink(gate(up, up_seed), watch.direction(0, meters.metered(0), what(kUplink, up), "", tag + "uplink"));
      GateQueue downlink(gate(down, down_seed),
                         watch.direction(1, meters.metered(1), what(kDownlink, down), "", tag + "downlink"));
      return watch.run(uplink, downlink, ready);
    };
    return spec;
  });
}
