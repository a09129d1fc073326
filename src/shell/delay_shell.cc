// SPDX-License-Identifier: GPL-3.0-or-later
#include "shell/delay_shell.hh"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "packet/delay_trace.hh"
#include "packet/destination_delay.hh"
#include "packet/queues.hh"
#include "shell/ferry_pair.hh"
#include "shell/meter_viewer.hh"
#include "shell/shell_watch.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/random.hh"

namespace {
// A map file is a list of destinations, never large.
constexpr uint64_t kMaxDestinationFileBytes = 16 << 20;
// A delay trace: 10 million points at most (a day at 10 ms) take well under this.
constexpr uint64_t kMaxDelayTraceFileBytes = 256 << 20;

// What --delay-trace and its companions ask for.
struct VaryingDelaySettings {
  std::optional<std::string> trace[2];  // uplink, downlink
  double interval_ms = 0;
  bool linear = false, once = false, overtake = false;
  Jitter::Distribution jitter_distribution = Jitter::Distribution::kNone;
  double jitter_ms = 0;
  Reordering reordering;
  bool any() const {
    return trace[0] || trace[1] || jitter_distribution != Jitter::Distribution::kNone || reordering.any();
  }
  // An option that goes only with a trace, jitter or reordering was given.
  bool companions() const { return once || overtake || linear || interval_ms > 0; }
};

// Everything mm-delay's command line asks for.
struct DelaySettings {
  std::optional<double> delay_ms;
  std::string typed;  // DELAY-MS as typed, for the tag
  std::vector<DestinationRule> typed_rules;
  std::optional<std::string> file;  // --destinations
  VaryingDelaySettings varying;
  std::optional<uint64_t> seed;
  LogOptions logs;
  MeterOptions meters;
  bool per_destination() const { return file || !typed_rules.empty(); }
  bool watching() const { return !logs.uplink.empty() || !logs.downlink.empty() || meters.any(); }
};

Jitter::Distribution jitter_distribution_of(std::string_view name) {
  if (name == "normal") return Jitter::Distribution::kNormal;
  if (name == "uniform") return Jitter::Distribution::kUniform;
  if (name == "paretonormal") return Jitter::Distribution::kParetoNormal;
  throw UsageError("--jitter's distribution is normal, uniform or paretonormal, not \"" + std::string(name) + "\"");
}

// The live graphs' viewer, a process of its own (shell/meter_viewer.hh), if any is asked for.
std::unique_ptr<EventViewer> viewer(const MeterOptions& meters, Nanos origin) {
  if (!meters.any()) return nullptr;
  return std::make_unique<RemoteMeters>("mm-delay", meters, origin);
}

// What a log's header and a graph's title say of the shell: its tag, e.g. "delay 50 ms".
std::string watched(const std::string& tag) { return tag.substr(1, tag.size() - 3); }

// --delay-trace and its companions, --jitter, --order, --reorder, --duplicate.
void add_varying_options(std::vector<ArgScanner::Option>& options, VaryingDelaySettings& varying) {
  auto trace_option = [&varying](int direction, const char* name) {
    return ArgScanner::Option{
        name, true, [&varying, direction, name](std::string_view v) {
          if (v.empty()) throw UsageError(std::string("--") + name + " needs a file");
          for (int d : {0, 1}) {
            if (direction != 2 && d != direction) continue;
            if (varying.trace[d])
              throw UsageError(std::string("a second delay trace for the ") + (d == 0 ? "uplink" : "downlink"));
            varying.trace[d] = std::string(v);
          }
        }};
  };
  options.push_back(trace_option(2, "delay-trace"));
  options.push_back(trace_option(0, "uplink-delay-trace"));
  options.push_back(trace_option(1, "downlink-delay-trace"));
  options.push_back({"delay-interval", true, [&varying](std::string_view v) {
                       varying.interval_ms = parse_nonnegative(v, "--delay-interval");
                       if (varying.interval_ms <= 0 || varying.interval_ms > kMaxDelayTraceMs)
                         throw UsageError("--delay-interval must be above 0 and at most an hour");
                     }});
  options.push_back({"interpolate", true, [&varying](std::string_view v) {
                       if (v != "step" && v != "linear")
                         throw UsageError("--interpolate takes step or linear, not \"" + std::string(v) + "\"");
                       varying.linear = v == "linear";
                     }});
  options.push_back({"once", false, [&varying](std::string_view) { varying.once = true; }});
  options.push_back({"order", true, [&varying](std::string_view v) {
                       if (v != "fifo" && v != "overtake")
                         throw UsageError("--order takes fifo or overtake, not \"" + std::string(v) + "\"");
                       varying.overtake = v == "overtake";
                     }});
  options.push_back({"jitter", true, [&varying](std::string_view v) {
                       const size_t comma = v.find(',');
                       varying.jitter_ms = parse_nonnegative(v.substr(0, comma), "--jitter");
                       if (varying.jitter_ms > kMaxDelayTraceMs) throw UsageError("--jitter is at most an hour");
                       varying.jitter_distribution = comma == std::string_view::npos
                                                         ? Jitter::Distribution::kNormal
                                                         : jitter_distribution_of(v.substr(comma + 1));
                     }});
  options.push_back({"reorder", true, [&varying](std::string_view v) {
                       const size_t comma = v.find(',');
                       varying.reordering.probability = parse_probability(v.substr(0, comma), "--reorder");
                       if (comma != std::string_view::npos) {
                         const uint64_t gap = parse_unsigned(v.substr(comma + 1), "--reorder's GAP");
                         if (gap < 1 || gap > kMaxReorderGap)
                           throw UsageError("--reorder's GAP (how many packets one jumps ahead of) is 1 to " +
                                            std::to_string(kMaxReorderGap));
                         varying.reordering.gap = static_cast<uint32_t>(gap);
                       }
                     }});
  options.push_back({"duplicate", true, [&varying](std::string_view v) {
                       varying.reordering.duplicate = parse_probability(v, "--duplicate");
                     }});
}

// --destination (repeatable) and --destinations=FILE.
void add_destination_options(std::vector<ArgScanner::Option>& options, DelaySettings& s) {
  options.push_back({"destination", true, [&s](std::string_view v) {
                       try {
                         s.typed_rules.push_back(parse_destination_option(v, "--destination"));
                       } catch (const UserError& e) {
                         throw UsageError(e.what());
                       }
                       if (s.typed_rules.size() > kMaxDestinationRules)
                         throw UsageError("too many --destination options: use --destinations=FILE");
                     }});
  options.push_back({"destinations", true, [&s](std::string_view v) {
                       if (s.file) throw UsageError("--destinations is given twice: join the files");
                       if (v.empty()) throw UsageError("--destinations needs a file");
                       s.file = std::string(v);
                     }});
}

// A delay that varies over time (a trace, jitter, reordering, duplication).
void set_varying_ferry(ShellSpec& spec, const DelaySettings& s) {
  const VaryingDelaySettings& varying = s.varying;
  spec.tag = "[delay " + (s.delay_ms ? s.typed + " ms" : std::string("trace")) +
             (s.delay_ms && (varying.trace[0] || varying.trace[1]) ? " + trace" : "") +
             (varying.jitter_distribution != Jitter::Distribution::kNone ? " + jitter" : "") +
             (varying.reordering.probability > 0 ? " + reorder" : "") +
             (varying.reordering.duplicate > 0 ? " + duplicate" : "") + "] ";
  spec.follows_trace = varying.trace[0] || varying.trace[1];
  uint64_t base_seed = s.seed ? *s.seed : Random::fresh_seed();
  const uint64_t up_seed = Random::splitmix(base_seed), down_seed = Random::splitmix(base_seed);
  Reordering up_reordering = varying.reordering, down_reordering = varying.reordering;
  up_reordering.seed = Random::splitmix(base_seed);
  down_reordering.seed = Random::splitmix(base_seed);
  const Nanos constant = ms_to_nanos(s.delay_ms.value_or(0));
  // The traces are the user's files: read after the ferry dropped root's rights for good.
  spec.ferry = [varying, constant, up_seed, down_seed, up_reordering, down_reordering, logs = s.logs, meters = s.meters,
                tag = spec.tag](const FerryEndpoints& tuns, const std::function<void()>& ready) {
    auto load = [&](int d) {
      if (!varying.trace[d]) return DelayTrace{};
      DelayTrace t = parse_delay_trace(
          read_user_file(*varying.trace[d], "delay trace", kMaxDelayTraceFileBytes, "give a delay trace"),
          user_file_name(*varying.trace[d]), varying.interval_ms);
      t.linear = varying.linear;
      t.once = varying.once;
      return t;
    };
    DelayTrace up_trace = load(0), down_trace = load(1);
    const Nanos sigma = ms_to_nanos(varying.jitter_ms);
    const Nanos origin = trace_start(tuns);  // the outermost trace-following shell's start
    ShellWatch watch("mm-delay", logs, tuns, viewer(meters, origin), origin);
    const Nanos start = watch.origin();
    VaryingDelayQueue uplink(constant, std::move(up_trace), Jitter(varying.jitter_distribution, sigma, up_seed),
                             varying.overtake, start, up_reordering,
                             watch.direction(0, meters.metered(0), watched(tag), "", tag + "uplink"));
    VaryingDelayQueue downlink(constant, std::move(down_trace), Jitter(varying.jitter_distribution, sigma, down_seed),
                               varying.overtake, start, down_reordering,
                               watch.direction(1, meters.metered(1), watched(tag), "", tag + "downlink"));
    return watch.run(uplink, downlink, ready);
  };
}

// DELAY-MS each way, watched (logged or metered) or not.
void set_constant_ferry(ShellSpec& spec, const DelaySettings& s) {
  const Nanos delay = ms_to_nanos(*s.delay_ms);
  if (!s.watching()) {
    spec.ferry = [delay](const FerryEndpoints& tuns, const std::function<void()>& ready) {
      DelayQueue uplink(delay), downlink(delay);
      return run_ferry_pair(tuns, uplink, downlink, ready);
    };
    return;
  }
  // Logged or metered: a line per wire packet, so super-packets are taken apart.
  spec.ferry = [delay, logs = s.logs, meters = s.meters, tag = spec.tag](const FerryEndpoints& tuns,
                                                                         const std::function<void()>& ready) {
    const Nanos origin = trace_start(tuns);  // the outermost trace-following shell's start
    ShellWatch watch("mm-delay", logs, tuns, viewer(meters, origin), origin);
    PerWirePacket<DelayQueue> uplink(delay, watch.direction(0, meters.metered(0), watched(tag), "", tag + "uplink"));
    PerWirePacket<DelayQueue> downlink(delay,
                                       watch.direction(1, meters.metered(1), watched(tag), "", tag + "downlink"));
    return watch.run(uplink, downlink, ready);
  };
}

// Each destination at its own delay.
void set_destination_ferry(ShellSpec& spec, const DelaySettings& s) {
  const Nanos delay = ms_to_nanos(*s.delay_ms);
  // The file is the user's: read after the ferry dropped root's rights for good.
  spec.ferry = [delay, typed_rules = s.typed_rules, file = s.file, logs = s.logs, meters = s.meters,
                watching = s.watching(),
                tag = spec.tag](const FerryEndpoints& tuns, const std::function<void()>& ready) {
    DestinationDelays map{delay, delay, {}};
    if (file) {
      map.rules = parse_destination_file(
          read_user_file(*file, "destinations file", kMaxDestinationFileBytes, "list destinations, not data"),
          user_file_name(*file));
    }
    map.rules.insert(map.rules.end(), typed_rules.begin(), typed_rules.end());  // typed ones win
    check_destination_delays(map);
    if (!watching) {
      DestinationDelayQueue uplink(map, DestinationDelayQueue::Direction::Uplink);
      DestinationDelayQueue downlink(map, DestinationDelayQueue::Direction::Downlink);
      return run_ferry_pair(tuns, uplink, downlink, ready);
    }
    const Nanos origin = trace_start(tuns);  // the outermost trace-following shell's start
    ShellWatch watch("mm-delay", logs, tuns, viewer(meters, origin), origin);
    PerWirePacket<DestinationDelayQueue> uplink(
        map, DestinationDelayQueue::Direction::Uplink,
        watch.direction(0, meters.metered(0), watched(tag), "", tag + "uplink"));
    PerWirePacket<DestinationDelayQueue> downlink(
        map, DestinationDelayQueue::Direction::Downlink,
        watch.direction(1, meters.metered(1), watched(tag), "", tag + "downlink"));
    return watch.run(uplink, downlink, ready);
  };
}
}  // namespace

ShellSpec delay_shell(const ProgramInfo& info, int ac, char** av) {
  DelaySettings s;
  ShellSpec spec;
  std::vector<ArgScanner::Option> options;
  add_varying_options(options, s.varying);
  options.push_back(ArgScanner::seed_option(s.seed));
  add_destination_options(options, s);
  options.push_back(ArgScanner::verbose_option(spec.verbose));
  options.push_back(ArgScanner::tcp_ecn_option(spec.tcp_ecn));
  s.logs.add_options(options);
  s.meters.add_options(options, true);
  ArgScanner scanner(info, std::move(options));
  const VaryingDelaySettings& varying = s.varying;
  spec.command = scanner.scan(ac, av, [&](std::string_view word) {
    if (s.delay_ms) return false;
    // With a delay trace each way DELAY-MS may be left out: a word that is no number is then
    // the command (mm-delay --delay-trace=F mm-link ...).
    if (varying.trace[0] && varying.trace[1] && !word.empty() && (word[0] < '0' || word[0] > '9') && word[0] != '.')
      return false;
    s.delay_ms = parse_nonnegative(word, "DELAY-MS");
    s.typed = word;
    return true;
  });
  if (!s.delay_ms && !(varying.trace[0] && varying.trace[1])) throw UsageError("missing DELAY-MS");
  spec.device_kind = ShellKind::Delay;
  s.logs.set_command_line(ac, av);
  s.meters.finish(spec, false);
  if (varying.any() || varying.companions()) {
    if (!varying.any())
      throw UsageError(
          "--once, --order, --interpolate and --delay-interval go with a delay trace, --jitter or --reorder");
    if (s.per_destination())
      throw UsageError("per-destination delays do not combine with a delay trace, --jitter, --reorder or --duplicate");
    set_varying_ferry(spec, s);
    return spec;
  }
  if (!s.delay_ms) throw UsageError("missing DELAY-MS");
  spec.tag = "[delay " + s.typed + " ms" + (s.per_destination() ? " + destinations" : "") + "] ";
  if (s.per_destination()) {
    set_destination_ferry(spec, s);
  } else {
    set_constant_ferry(spec, s);
  }
  return spec;
}
