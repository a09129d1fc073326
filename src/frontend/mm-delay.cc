// SPDX-License-Identifier: GPL-3.0-or-later
// mm-delay DELAY-MS [--destination=...]... [--destinations=FILE] [--] [COMMAND...]: a fixed
// one-way delay in each direction, or one per destination; or a delay that varies over time
// (--delay-trace) with jitter (--jitter).
#include <optional>

#include "frontend/meter_view.hh"
#include "frontend/shell_watch.hh"
#include "packet/delay_trace.hh"
#include "packet/destination_delay.hh"
#include "packet/queues.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"
#include "util/file_descriptor.hh"

namespace {
const ProgramInfo kInfo{"mm-delay", "DELAY-MS [OPTION]... [--] [COMMAND...]",
                        "Runs COMMAND (default: your login shell) in a new network namespace whose packets are\n"
                        "delayed by DELAY-MS milliseconds in each direction (so the round trip grows by twice\n"
                        "DELAY-MS). DELAY-MS may be fractional (12.5) and 0.\n"
                        "\n"
                        "Options:\n"
                        "  --destination=ADDRESS[/LEN][:PORT]=MS[,DOWN-MS]\n"
                        "              packets to that address, prefix or port (and their answers) get MS\n"
                        "              milliseconds each way instead of DELAY-MS, or MS toward it and DOWN-MS\n"
                        "              back; repeatable\n"
                        "  --destinations=FILE\n"
                        "              the same from a file, one \"ADDRESS[/LEN][:PORT] MS [DOWN-MS]\" per line\n"
                        "              (# comments); mm-recording timings --destinations DIR writes one that puts\n"
                        "              every origin of a recording at its recorded distance\n"
                        "  --delay-trace=FILE, --uplink-delay-trace=FILE, --downlink-delay-trace=FILE\n"
                        "              a delay that varies over time, in both directions or one (DELAY-MS\n"
                        "              then serves the other): \"TIME-MS DELAY-MS\" per line, or one DELAY-MS\n"
                        "              per line with --delay-interval (PR #135's and LeoReplayer's files)\n"
                        "  --delay-interval=MS   the time each line of a one-value trace covers\n"
                        "  --interpolate=step|linear   between a trace's points (default step)\n"
                        "  --once      hold a trace's last delay after its end (default: it repeats)\n"
                        "  --jitter=MS[,normal|uniform|paretonormal]\n"
                        "              add to each packet's delay a random offset of standard deviation MS\n"
                        "              (normal by default); never below 0\n"
                        "  --order=fifo|overtake   fifo (default): no packet leaves before one that\n"
                        "              arrived earlier; overtake: each leaves at its own time (reorders)\n"
                        "  --reorder=P[,GAP]   with probability P a packet jumps ahead of the GAP packets\n"
                        "              before it (default 1: an adjacent swap), if they are still queued\n"
                        "  --duplicate=P       with probability P a packet leaves twice\n"
                        "  --seed N    seed the jitter, reordering and duplication, so that a run repeats\n"
                        "  -u FILE, --uplink-log=FILE, -d FILE, --downlink-log=FILE\n"
                        "              log every arrival and departure (with its delay) of that direction to\n"
                        "              FILE, in mm-link's format (mm-delay-graph and mm-throughput-graph read it)\n"
                        "  --meter-uplink, --meter-downlink, --meter-uplink-delay, --meter-downlink-delay,\n"
                        "  --meter-all, --meter-output=FILE.png|FILE.svg|DIR, --meter-snapshot-interval=S,\n"
                        "  --meter-stats\n"
                        "              live graphs of the traffic in and out and of each packet's delay, as\n"
                        "              mm-link's (see mm-link --help)\n" +
                            std::string(kHelpAndVersionLines) +
                            "\n"
                            "With destinations, the most specific rule applies: an address with the port, the\n"
                            "address, then prefixes from the longest; a packet to anywhere else gets DELAY-MS. The\n"
                            "packets of one connection always keep their order, and a far destination's packets\n"
                            "never hold up a near one's.\n"
                            "\n"
                            "MAHIMAHI_BASE is set to the address by which the machine outside all shells is reached.\n"
                            "Shells nest: mm-delay 20 mm-loss uplink 0.01 -- ping 192.0.2.1\n"};

// The live graphs' viewer, a process of its own (frontend/meter_view.hh), if any is asked for.
std::unique_ptr<EventViewer> viewer(const MeterOptions& meters, Nanos origin) {
  if (!meters.any()) return nullptr;
  return std::make_unique<RemoteMeters>("mm-delay", meters, origin);
}

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
};

Jitter::Distribution jitter_distribution_of(std::string_view name) {
  if (name == "normal") return Jitter::Distribution::kNormal;
  if (name == "uniform") return Jitter::Distribution::kUniform;
  if (name == "paretonormal") return Jitter::Distribution::kParetoNormal;
  throw UsageError("--jitter's distribution is normal, uniform or paretonormal, not \"" + std::string(name) + "\"");
}
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<double> delay_ms;
    std::string typed;
    std::vector<DestinationRule> typed_rules;
    std::optional<std::string> file;
    VaryingDelaySettings varying;
    std::optional<uint64_t> seed;
    ShellSpec spec;
    LogOptions logs;
    MeterOptions meters;
    auto trace_option = [&](int direction, const char* name) {
      return ArgScanner::Option{
          name, true, [&, direction, name](std::string_view v) {
            if (v.empty()) throw UsageError(std::string("--") + name + " needs a file");
            for (int d : {0, 1}) {
              if (direction != 2 && d != direction) continue;
              if (varying.trace[d])
                throw UsageError(std::string("a second delay trace for the ") + (d == 0 ? "uplink" : "downlink"));
              varying.trace[d] = std::string(v);
            }
          }};
    };
    std::vector<ArgScanner::Option> options{
        trace_option(2, "delay-trace"),
        trace_option(0, "uplink-delay-trace"),
        trace_option(1, "downlink-delay-trace"),
        {"delay-interval", true,
         [&](std::string_view v) {
           varying.interval_ms = parse_nonnegative(v, "--delay-interval");
           if (varying.interval_ms <= 0 || varying.interval_ms > kMaxDelayTraceMs)
             throw UsageError("--delay-interval must be above 0 and at most an hour");
         }},
        {"interpolate", true,
         [&](std::string_view v) {
           if (v != "step" && v != "linear")
             throw UsageError("--interpolate takes step or linear, not \"" + std::string(v) + "\"");
           varying.linear = v == "linear";
         }},
        {"once", false, [&](std::string_view) { varying.once = true; }},
        {"order", true,
         [&](std::string_view v) {
           if (v != "fifo" && v != "overtake")
             throw UsageError("--order takes fifo or overtake, not \"" + std::string(v) + "\"");
           varying.overtake = v == "overtake";
         }},
        {"jitter", true,
         [&](std::string_view v) {
           const size_t comma = v.find(',');
           varying.jitter_ms = parse_nonnegative(v.substr(0, comma), "--jitter");
           if (varying.jitter_ms > kMaxDelayTraceMs) throw UsageError("--jitter is at most an hour");
           varying.jitter_distribution = comma == std::string_view::npos ? Jitter::Distribution::kNormal
                                                                         : jitter_distribution_of(v.substr(comma + 1));
         }},
        {"reorder", true,
         [&](std::string_view v) {
           const size_t comma = v.find(',');
           varying.reordering.probability = parse_probability(v.substr(0, comma), "--reorder");
           if (comma != std::string_view::npos) {
             const uint64_t gap = parse_unsigned(v.substr(comma + 1), "--reorder's GAP");
             if (gap < 1 || gap > kMaxReorderGap)
               throw UsageError("--reorder's GAP (how many packets one jumps ahead of) is 1 to " +
                                std::to_string(kMaxReorderGap));
             varying.reordering.gap = static_cast<uint32_t>(gap);
           }
         }},
        {"duplicate", true,
         [&](std::string_view v) { varying.reordering.duplicate = parse_probability(v, "--duplicate"); }},
        ArgScanner::seed_option(seed),
        {"destination", true,
         [&](std::string_view v) {
           try {
             typed_rules.push_back(parse_destination_option(v, "--destination"));
           } catch (const UserError& e) {
             throw UsageError(e.what());
           }
           if (typed_rules.size() > kMaxDestinationRules)
             throw UsageError("too many --destination options: use --destinations=FILE");
         }},
        {"destinations", true,
         [&](std::string_view v) {
           if (file) throw UsageError("--destinations is given twice: join the files");
           if (v.empty()) throw UsageError("--destinations needs a file");
           file = std::string(v);
         }},
        ArgScanner::verbose_option(spec.verbose),
        ArgScanner::tcp_ecn_option(spec.tcp_ecn)};
    logs.add_options(options);
    meters.add_options(options, true);
    ArgScanner scanner(kInfo, std::move(options));
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (delay_ms) return false;
      // With a delay trace each way DELAY-MS may be left out: a word that is no number is then
      // the command (mm-delay --delay-trace=F mm-link ...).
      if (varying.trace[0] && varying.trace[1] && !word.empty() && (word[0] < '0' || word[0] > '9') && word[0] != '.')
        return false;
      delay_ms = parse_nonnegative(word, "DELAY-MS");
      typed = word;
      return true;
    });
    if (!delay_ms && !(varying.trace[0] && varying.trace[1])) throw UsageError("missing DELAY-MS");
    spec.device_kind = ShellKind::Delay;
    logs.set_command_line(ac, av);
    meters.finish(spec, false);
    // What a log's header and a graph's title say of the shell: its tag, e.g. "delay 50 ms".
    const auto watched = [](const std::string& tag) { return tag.substr(1, tag.size() - 3); };
    if (varying.any() || varying.once || varying.overtake || varying.linear || varying.interval_ms > 0) {
      if (!varying.any())
        throw UsageError(
            "--once, --order, --interpolate and --delay-interval go with a delay trace, --jitter or --reorder");
      if (file || !typed_rules.empty())
        throw UsageError(
            "per-destination delays do not combine with a delay trace, --jitter, --reorder or --duplicate");
      spec.tag = "[delay " + (delay_ms ? typed + " ms" : std::string("trace")) +
                 (delay_ms && (varying.trace[0] || varying.trace[1]) ? " + trace" : "") +
                 (varying.jitter_distribution != Jitter::Distribution::kNone ? " + jitter" : "") +
                 (varying.reordering.probability > 0 ? " + reorder" : "") +
                 (varying.reordering.duplicate > 0 ? " + duplicate" : "") + "] ";
      spec.follows_trace = varying.trace[0] || varying.trace[1];
      uint64_t base_seed = seed ? *seed : Random::fresh_seed();
      const uint64_t up_seed = Random::splitmix(base_seed), down_seed = Random::splitmix(base_seed);
      Reordering up_reordering = varying.reordering, down_reordering = varying.reordering;
      up_reordering.seed = Random::splitmix(base_seed);
      down_reordering.seed = Random::splitmix(base_seed);
      const Nanos constant = ms_to_nanos(delay_ms.value_or(0));
      // The traces are the user's files: read after the ferry dropped root's rights for good.
      spec.ferry = [varying, constant, up_seed, down_seed, up_reordering, down_reordering, logs, meters, tag = spec.tag,
                    watched](const FerryEndpoints& tuns, const std::function<void()>& ready) {
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
        VaryingDelayQueue downlink(
            constant, std::move(down_trace), Jitter(varying.jitter_distribution, sigma, down_seed), varying.overtake,
            start, down_reordering, watch.direction(1, meters.metered(1), watched(tag), "", tag + "downlink"));
        return watch.run(uplink, downlink, ready);
      };
      return spec;
    }
    if (!delay_ms) throw UsageError("missing DELAY-MS");
    const bool per_destination = file || !typed_rules.empty();
    spec.tag = "[delay " + typed + " ms" + (per_destination ? " + destinations" : "") + "] ";
    const Nanos delay = ms_to_nanos(*delay_ms);
    const bool watching = !logs.uplink.empty() || !logs.downlink.empty() || meters.any();
    if (!per_destination && !watching) {
      spec.ferry = [delay](const FerryEndpoints& tuns, const std::function<void()>& ready) {
        DelayQueue uplink(delay), downlink(delay);
        return run_ferry_pair(tuns, uplink, downlink, ready);
      };
      return spec;
    }
    if (!per_destination) {
      // Logged or metered: a line per wire packet, so super-packets are taken apart.
      spec.ferry = [delay, logs, meters, tag = spec.tag, watched](const FerryEndpoints& tuns,
                                                                  const std::function<void()>& ready) {
        const Nanos origin = trace_start(tuns);  // the outermost trace-following shell's start
        ShellWatch watch("mm-delay", logs, tuns, viewer(meters, origin), origin);
        PerWirePacket<DelayQueue> uplink(delay,
                                         watch.direction(0, meters.metered(0), watched(tag), "", tag + "uplink"));
        PerWirePacket<DelayQueue> downlink(delay,
                                           watch.direction(1, meters.metered(1), watched(tag), "", tag + "downlink"));
        return watch.run(uplink, downlink, ready);
      };
      return spec;
    }
    // The file is the user's: read after the ferry dropped root's rights for good.
    spec.ferry = [delay, typed_rules, file, logs, meters, watching, tag = spec.tag, watched](
                     const FerryEndpoints& tuns, const std::function<void()>& ready) {
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
    return spec;
  });
}
