// SPDX-License-Identifier: GPL-3.0-or-later
// mm-preset NAME [--] [COMMAND...]: a named network profile of WebPageTest, Lighthouse, DevTools
// or browsertime (packet/presets.hh), as mm-delay (half its round trip each way) around a
// constant-rate mm-link; mm-preset --list. It needs no privileges: it runs the shells.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "packet/presets.hh"
#include "packet/trace.hh"
#include "util/args.hh"
#include "util/child_process.hh"
#include "util/exception.hh"

namespace {
const std::string kName = "mm-preset";
const std::string kUsage = "Usage: mm-preset NAME [--] [COMMAND...]\n       mm-preset --list\n";
const std::string kHelp =
    "Runs COMMAND (default: your login shell) behind a named network profile of WebPageTest\n"
    "(wpt:), Lighthouse (lighthouse:), Chrome DevTools (devtools:) or browsertime\n"
    "(browsertime:), with the tool's own numbers: mm-delay of half its round-trip time inside\n"
    "which mm-link gives its rates, e.g. mm-preset wpt:3G -- chromium. NAME is case-insensitive.\n"
    "\n"
    "  --list      the profiles: rates each way, round trip, and where the numbers are from\n"
    "  --help      show this help\n"
    "  --version   show the version\n"
    "\n"
    "DevTools and Lighthouse add latency per request, not per packet: a profile takes the round\n"
    "trip the tool states (Lighthouse's slow4g: 150 ms, not its 562.5 ms request latency).\n"
    "Lighthouse's kbps are of 1024 bit/s. CPU slowdowns are not network settings: left out.\n";

// mm-delay next to this program (symbolic links resolved), else by PATH.
std::string shell_program(const std::string& name) {
  if (const auto self = own_executable()) {
    const std::filesystem::path beside = std::filesystem::path(*self).parent_path() / name;
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return name;
}

std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", ms);
  return text;
}

int list() {
  std::printf("%-22s %16s %16s %9s  %s\n", "name", "down", "up", "RTT (ms)", "source");
  for (const NetworkPreset& p : network_presets())
    std::printf("%-22s %16s %16s %9s  %s\n", p.name.c_str(), Trace::format_rate(p.down_bps).c_str(),
                Trace::format_rate(p.up_bps).c_str(), milliseconds(p.rtt_ms).c_str(), p.source.c_str());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return run_tool(kName, kUsage, [&]() -> int {
    if (argc < 2) throw UsageError("missing NAME (mm-preset --list shows them)");
    const std::string first = argv[1];
    if (answer_help_or_version(first, kName, kUsage, kHelp)) return 0;
    if (first == "--list") {
      if (argc > 2) throw UsageError("--list takes nothing more");
      return list();
    }
    if (!first.empty() && first[0] == '-') throw UsageError("unknown option \"" + first + "\"");
    const auto preset = find_network_preset(first);
    if (!preset) throw UsageError("no profile named \"" + first + "\" (mm-preset --list shows them)");
    int rest = 2;
    if (rest < argc && std::strcmp(argv[rest], "--") == 0) rest++;
    // mm-delay RTT/2 mm-link rate:UP rate:DOWN [-- COMMAND...]
    std::vector<std::string> command = {shell_program("mm-delay"), milliseconds(preset->rtt_ms / 2),
                                        shell_program("mm-link"), "rate:" + Trace::format_rate(preset->up_bps),
                                        "rate:" + Trace::format_rate(preset->down_bps)};
    if (rest < argc) {
      command.emplace_back("--");
      for (int i = rest; i < argc; i++) command.emplace_back(argv[i]);
    }
    std::vector<char*> args;
    for (std::string& word : command) args.push_back(word.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    throw UserError("cannot run " + command[0] + ": " + std::strerror(errno));
  });
}
