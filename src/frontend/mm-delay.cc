// SPDX-License-Identifier: GPL-3.0-or-later
// mm-delay DELAY-MS [--destination=...]... [--destinations=FILE] [--] [COMMAND...]: a fixed
// one-way delay in each direction, or one per destination.
#include <optional>

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
                        "              every origin of a recording at its recorded distance\n" +
                            std::string(kHelpAndVersionLines) +
                            "\n"
                            "With destinations, the most specific rule applies: an address with the port, the\n"
                            "address, then prefixes from the longest; a packet to anywhere else gets DELAY-MS. The\n"
                            "packets of one connection always keep their order, and a far destination's packets\n"
                            "never hold up a near one's.\n"
                            "\n"
                            "MAHIMAHI_BASE is set to the address by which the machine outside all shells is reached.\n"
                            "Shells nest: mm-delay 20 mm-loss uplink 0.01 -- ping 192.0.2.1\n"};

// A map file is a list of destinations, never large.
constexpr uint64_t kMaxDestinationFileBytes = 16 << 20;
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<double> delay_ms;
    std::string typed;
    std::vector<DestinationRule> typed_rules;
    std::optional<std::string> file;
    ShellSpec spec;
    ArgScanner scanner(kInfo, {{"destination", true,
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
                               ArgScanner::verbose_option(spec.verbose)});
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (delay_ms) return false;
      delay_ms = parse_nonnegative(word, "DELAY-MS");
      typed = word;
      return true;
    });
    if (!delay_ms) throw UsageError("missing DELAY-MS");
    spec.device_kind = "delay";
    const bool per_destination = file || !typed_rules.empty();
    spec.tag = "[delay " + typed + " ms" + (per_destination ? " + destinations" : "") + "] ";
    const Nanos delay = ms_to_nanos(*delay_ms);
    if (!per_destination) {
      spec.ferry = [delay](const FerryEndpoints& tuns, const std::function<void()>& ready) {
        DelayQueue uplink(delay), downlink(delay);
        return run_ferry_pair(tuns, uplink, downlink, ready);
      };
      return spec;
    }
    // The file is the user's: read after the ferry dropped root's rights for good.
    spec.ferry = [delay, typed_rules, file](const FerryEndpoints& tuns, const std::function<void()>& ready) {
      DestinationDelays map{delay, delay, {}};
      if (file) {
        map.rules = parse_destination_file(
            read_user_file(*file, "destinations file", kMaxDestinationFileBytes, "list destinations, not data"),
            user_file_name(*file));
      }
      map.rules.insert(map.rules.end(), typed_rules.begin(), typed_rules.end());  // typed ones win
      check_destination_delays(map);
      DestinationDelayQueue uplink(map, DestinationDelayQueue::Direction::Uplink);
      DestinationDelayQueue downlink(map, DestinationDelayQueue::Direction::Downlink);
      return run_ferry_pair(tuns, uplink, downlink, ready);
    };
    return spec;
  });
}
