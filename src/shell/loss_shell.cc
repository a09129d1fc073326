// SPDX-License-Identifier: GPL-3.0-or-later
#include "shell/loss_shell.hh"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "packet/loss_model.hh"
#include "packet/queues.hh"
#include "shell/ferry_pair.hh"
#include "shell/meter_viewer.hh"
#include "shell/shell_watch.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/random.hh"

namespace {
enum Direction { kUplink, kDownlink };
// A loss trace: 10 million points at most take well under this.
constexpr uint64_t kMaxLossTraceFileBytes = 256 << 20;

// The ferry of the models (a direction without one loses nothing), logged and metered as asked;
// a loss trace is read after the ferry dropped root's rights for good (it is the user's file).
void set_loss_ferry(ShellSpec& spec, const std::optional<LossModel> (&model)[2], std::optional<uint64_t> seed,
                    double interval_ms, bool linear, bool once, const LogOptions& logs, const MeterOptions& meters) {
  uint64_t base_seed = seed ? *seed : Random::fresh_seed();
  const uint64_t up_seed = Random::splitmix(base_seed), down_seed = Random::splitmix(base_seed);
  const LossModel up = model[kUplink].value_or(LossModel::bernoulli(0));
  const LossModel down = model[kDownlink].value_or(LossModel::bernoulli(0));
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
}
}  // namespace

ShellSpec loss_shell(const ProgramInfo& info, int ac, char** av) {
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
  ArgScanner scanner(info, std::move(options));
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
  set_loss_ferry(spec, model, seed, interval_ms, linear, once, logs, meters);
  return spec;
}
