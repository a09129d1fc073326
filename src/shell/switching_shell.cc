// SPDX-License-Identifier: GPL-3.0-or-later
#include "shell/switching_shell.hh"

#include <optional>
#include <vector>

#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"
#include "util/exception.hh"

int run_switching_shell(int argc, char** argv, const ProgramInfo& info, const std::string& tag_word,
                        OnOffGate::Durations durations) {
  return run_packet_shell(argc, argv, info, [&](int ac, char** av) {
    std::optional<bool> uplink;
    std::vector<double> seconds;
    std::vector<std::string> typed;
    std::optional<uint64_t> seed;
    ShellSpec spec;
    std::vector<ArgScanner::Option> options{ArgScanner::verbose_option(spec.verbose),
                                            ArgScanner::tcp_ecn_option(spec.tcp_ecn)};
    if (durations == OnOffGate::Durations::Exponential) {
      options.push_back(ArgScanner::seed_option(seed));
    }
    ArgScanner scanner(info, options);
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (!uplink) {
        if (word != "uplink" && word != "downlink")
          throw UsageError("unknown direction \"" + std::string(word) + "\" (expected uplink or downlink)");
        uplink = word == "uplink";
        return true;
      }
      if (seconds.size() == 2) return false;
      seconds.push_back(parse_nonnegative(word, seconds.empty() ? "ON-SECONDS" : "OFF-SECONDS"));
      typed.emplace_back(word);
      return true;
    });
    if (!uplink) throw UsageError("missing direction (uplink or downlink)");
    if (seconds.size() < 2) throw UsageError(seconds.empty() ? "missing ON-SECONDS" : "missing OFF-SECONDS");
    if (seconds[0] == 0 && seconds[1] == 0) throw UsageError("ON-SECONDS and OFF-SECONDS must not both be 0");
    spec.device_kind = durations == OnOffGate::Durations::Fixed ? ShellKind::Intermittent : ShellKind::OnOff;
    spec.tag = "[" + tag_word + " (" + (*uplink ? "up" : "down") + ") on=" + typed[0] + "s off=" + typed[1] + "s] ";
    const Nanos on = seconds_to_nanos(seconds[0]), off = seconds_to_nanos(seconds[1]);
    const uint64_t gate_seed = seed ? *seed : Random::fresh_seed();
    const bool switch_uplink = *uplink;
    spec.ferry = [=](const FerryEndpoints& tuns, const std::function<void()>& ready) {
      GateQueue switching(OnOffGate(durations, on, off, gate_seed, monotonic_now()));
      GateQueue open{OpenGate{}};
      return switch_uplink ? run_ferry_pair(tuns, switching, open, ready)
                           : run_ferry_pair(tuns, open, switching, ready);
    };
    return spec;
  });
}
