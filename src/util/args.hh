// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Command-line scanning shared by every program: strict numbers, --help/--version, the user's
// command after a shell's own arguments ("--" optional before it), the operands and -o FILE of
// the other tools, and their exit status on errors.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Strict decimal parsing; throw UsageError naming `what` and the text typed.
double parse_nonnegative(std::string_view text, std::string_view what);
double parse_probability(std::string_view text, std::string_view what);
uint64_t parse_unsigned(std::string_view text, std::string_view what);

struct ProgramInfo {
  std::string name;      // e.g. mm-delay
  std::string synopsis;  // e.g. "DELAY-MS [--] [COMMAND...]"
  std::string help;      // full --help text after the usage line
};

std::string usage_line(const ProgramInfo& info);

// The --verbose line of the packet shells' option lists (ArgScanner::verbose_option); a macro
// so that a help text written as one literal can include it.
#define MM_VERBOSE_HELP_LINE "  --verbose   say on standard error whether the TUN offloads are used, and if not why\n"
// The --tcp-ecn line (ArgScanner::tcp_ecn_option).
#define MM_TCP_ECN_HELP_LINE                                                                       \
  "  --tcp-ecn=on|accept|off\n"                                                                    \
  "              TCP's ECN in the shell and the shells inside (net.ipv4.tcp_ecn): on, asked for\n" \
  "              and accepted; accept, used when the peer asks; off, never (default: as where\n"   \
  "              the shell starts; the kernel's is accept)\n"
// The last lines of the shells' option lists in their --help text.
inline constexpr std::string_view kHelpAndVersionLines = MM_TCP_ECN_HELP_LINE MM_VERBOSE_HELP_LINE
    "  --help      show this help\n"
    "  --version   show the version\n";

// Walks argv. Options (--name or --name=value or --name value) may appear anywhere before the
// command; positional words are handed to `positional` until it returns false ("I am
// complete"), after which the rest is the command. Returns the command (possibly empty).
// --help and --version print and exit 0.
class ArgScanner {
 public:
  struct Option {
    std::string name;  // without the leading dashes
    bool takes_value;
    std::function<void(std::string_view value)> apply;
  };

  // --seed N (a non-negative integer) into `seed`: the option of every shell with random drops.
  static Option seed_option(std::optional<uint64_t>& seed);
  // --verbose into `verbose`: the option of every packet shell (kVerboseLine).
  static Option verbose_option(bool& verbose);
  // --tcp-ecn=on|accept|off into `mode` as net.ipv4.tcp_ecn's value (1, 2, 0): every packet shell's.
  static Option tcp_ecn_option(std::optional<int>& mode);

  ArgScanner(const ProgramInfo& info, std::vector<Option> options);
  // positional(word) returns true if it consumed the word, false if its arguments are complete
  // (the word then starts the command).
  std::vector<std::string> scan(int argc, char** argv, const std::function<bool(std::string_view)>& positional);

 private:
  const ProgramInfo& info_;
  std::vector<Option> options_;
};

// What --version prints after its first line, "NAME (mahimahi) VERSION", as GNU programs do:
// the copyright, the license (COPYING) and the warranty disclaimer.
inline constexpr const char* kCopyrightNotice =
    "Copyright (C) 2026 the mahimahi-ng developers.\n"
    "License GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.\n"
    "This is free software: you are free to change and redistribute it.\n"
    "There is NO WARRANTY, to the extent permitted by law.\n";

// The whole --version text of program NAME.
std::string version_text(const std::string& name);

// --help (-h) prints `usage`, a blank line and `help`; --version prints version_text(name).
// True if `word` was one of them (and was answered).
bool answer_help_or_version(std::string_view word, const std::string& name, const std::string& usage,
                            const std::string& help);

// The command line of a tool that is not a shell (mm-trace, the graph tools): operands, -o FILE
// (or --output FILE, --output=FILE), and --NAME=VALUE for each NAME in `value_options`; "-" is
// an operand (standard input). Any other word starting with '-' is a UsageError.
struct ToolArgs {
  std::vector<std::string> operands;
  std::optional<std::string> output;
  std::map<std::string, std::string, std::less<>> values;  // NAME -> VALUE
};
// nullopt if --help or --version was answered (the tool then exits 0).
std::optional<ToolArgs> scan_tool_args(int argc, char** argv, const std::string& name, const std::string& usage,
                                       const std::string& help, const std::vector<std::string_view>& value_options);

// Runs a tool's body and turns its exceptions into its exit status: a UsageError prints
// "NAME: MESSAGE", `usage` (as given: it ends with its newline) and a pointer to --help, and gives
// 2; any other exception prints "NAME: MESSAGE" and gives 1.
int run_tool(const std::string& name, const std::string& usage, const std::function<int()>& body);
