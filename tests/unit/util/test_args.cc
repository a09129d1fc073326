// SPDX-License-Identifier: GPL-3.0-or-later
// Command lines: strict numbers, the shells' scanner, the tools' operands and -o, --help and --version, exit status.
#include <optional>

#include "expect.hh"
#include "util/args.hh"
#include "util/clock.hh"
#include "util/exception.hh"

TEST(Args, parse_numbers) {
  ASSERT_EQ(parse_nonnegative("50", "DELAY-MS"), 50.0);
  ASSERT_EQ(parse_nonnegative("12.5", "DELAY-MS"), 12.5);
  ASSERT_EQ(parse_nonnegative("0", "DELAY-MS"), 0.0);
  EXPECT_THROW_WITH(UsageError, parse_nonnegative("-5", "DELAY-MS"), "must not be negative");
  EXPECT_THROW_WITH(UsageError, parse_nonnegative("abc", "DELAY-MS"), "DELAY-MS must be a number, not \"abc\"");
  EXPECT_THROW_WITH(UsageError, parse_nonnegative("5ms", "DELAY-MS"), "not \"5ms\"");
  EXPECT_THROW_WITH(UsageError, parse_nonnegative("", "DELAY-MS"), "must be a number");
  EXPECT_THROW_WITH(UsageError, parse_nonnegative("inf", "DELAY-MS"), "must be a number");
  EXPECT_THROW_WITH(UsageError, parse_nonnegative("nan", "DELAY-MS"), "must be a number");
  ASSERT_EQ(parse_probability("1", "rate"), 1.0);
  EXPECT_THROW_WITH(UsageError, parse_probability("1.01", "loss rate"), "between 0 and 1");
  ASSERT_EQ(parse_unsigned("42", "--seed"), 42u);
  EXPECT_THROW_WITH(UsageError, parse_unsigned("-1", "--seed"), "non-negative integer");
}

namespace {
const ProgramInfo kInfo{"mm-test", "X [--] [COMMAND...]", ""};

std::vector<std::string> scan(std::vector<std::string> words, std::vector<std::string>& positionals, int wanted,
                              std::string* seed = nullptr) {
  std::vector<char*> argv;
  std::string name = "mm-test";
  argv.push_back(name.data());
  for (auto& w : words) argv.push_back(w.data());
  ArgScanner scanner(kInfo, {{"seed", true,
                              [&](std::string_view v) {
                                if (seed) *seed = v;
                              }},
                             {"once", false, [](std::string_view) {}}});
  return scanner.scan(static_cast<int>(argv.size()), argv.data(), [&](std::string_view w) {
    if (static_cast<int>(positionals.size()) == wanted) return false;
    positionals.emplace_back(w);
    return true;
  });
}
}  // namespace

TEST(Args, scan_command_after_positionals) {
  std::vector<std::string> pos;
  auto cmd = scan({"50", "ping", "-c", "1", "host"}, pos, 1);
  ASSERT_EQ(pos.size(), 1u);
  ASSERT_EQ(cmd.size(), 4u);
  ASSERT_EQ(cmd[1], "-c");  // the command's own options are not ours
}

TEST(Args, scan_double_dash_and_options_anywhere) {
  std::vector<std::string> pos;
  std::string seed;
  auto cmd = scan({"--seed=7", "uplink", "--once", "0.1", "--", "sh", "-c", "true"}, pos, 2, &seed);
  ASSERT_EQ(seed, "7");
  ASSERT_EQ(pos.size(), 2u);
  ASSERT_EQ(cmd.size(), 3u);
  pos.clear();
  scan({"--seed", "9", "x", "y"}, pos, 2, &seed);
  ASSERT_EQ(seed, "9");
}

TEST(Args, scan_rejects_unknown_options_and_missing_values) {
  std::vector<std::string> pos;
  EXPECT_THROW_WITH(UsageError, scan({"--bogus", "5"}, pos, 1), "unknown option \"--bogus\"");
  EXPECT_THROW_WITH(UsageError, scan({"5", "--seed"}, pos, 2), "--seed needs a value");
  EXPECT_THROW_WITH(UsageError, scan({"--once=3"}, pos, 1), "takes no value");
  pos.clear();
  scan({"-5"}, pos, 1);  // a negative number is a positional (rejected later with a clear message)
  ASSERT_EQ(pos[0], "-5");
}

TEST(Args, time_conversions) {
  ASSERT_EQ(ms_to_nanos(12.5), 12'500'000);
  ASSERT_EQ(ms_to_nanos(0.001), 1'000);
  ASSERT_EQ(seconds_to_nanos(1.5), 1'500'000'000);
  ASSERT_EQ(nanos_to_ms(40'000'000), 40.0);
  const timespec ts = to_timespec(3'000'000'007);
  ASSERT_TRUE(ts.tv_sec == 3 && ts.tv_nsec == 7);
  const Nanos a = monotonic_now(), b = monotonic_now();
  ASSERT_TRUE(b >= a);
}

namespace {
std::optional<ToolArgs> scan_tool(std::vector<std::string> words) {
  std::vector<char*> argv;
  std::string name = "mm-tool";
  argv.push_back(name.data());
  for (auto& w : words) argv.push_back(w.data());
  return scan_tool_args(static_cast<int>(argv.size()), argv.data(), "mm-tool", "Usage: mm-tool X", "Help.\n",
                        {"format"});
}
}  // namespace

TEST(Args, tool_operands_output_and_value_options) {
  auto args = scan_tool({"convert", "-", "-o", "out.txt", "--format=csv", "in"});
  ASSERT_TRUE(args);
  ASSERT_EQ(args->operands, (std::vector<std::string>{"convert", "-", "in"}));
  ASSERT_EQ(*args->output, "out.txt");
  ASSERT_EQ(args->values.at("format"), "csv");
  ASSERT_EQ(*scan_tool({"--output=a.svg"})->output, "a.svg");
  ASSERT_EQ(*scan_tool({"--output", "b.svg", "x"})->output, "b.svg");
  ASSERT_TRUE(!scan_tool({"x"})->output);
  ASSERT_EQ(scan_tool({"--format=a", "--format=b"})->values.at("format"), "b");  // the last one counts
}

TEST(Args, tool_rejects_unknown_options_and_missing_file_names) {
  EXPECT_THROW_WITH(UsageError, scan_tool({"-x"}), "unknown option \"-x\"");
  EXPECT_THROW_WITH(UsageError, scan_tool({"--format"}), "unknown option \"--format\"");  // only --format=VALUE
  EXPECT_THROW_WITH(UsageError, scan_tool({"--size=3"}), "unknown option \"--size=3\"");
  EXPECT_THROW_WITH(UsageError, scan_tool({"-o"}), "-o needs a file name");
  EXPECT_THROW_WITH(UsageError, scan_tool({"x", "--output"}), "--output needs a file name");
}

TEST(Args, tool_help_and_version_are_answered) {
  testing::internal::CaptureStdout();
  ASSERT_TRUE(!scan_tool({"x", "--help"}));
  ASSERT_EQ(testing::internal::GetCapturedStdout(), "Usage: mm-tool X\nHelp.\n");
  testing::internal::CaptureStdout();
  ASSERT_TRUE(!scan_tool({"--version"}));
  ASSERT_EQ(testing::internal::GetCapturedStdout(),
            std::string("mm-tool (mahimahi) ") + PACKAGE_VERSION +
                "\nCopyright (C) 2026 the mahimahi-ng developers.\n"
                "License GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.\n"
                "This is free software: you are free to change and redistribute it.\n"
                "There is NO WARRANTY, to the extent permitted by law.\n");
  ASSERT_TRUE(!answer_help_or_version("--helpful", "mm-tool", "", ""));
}

TEST(Args, run_tool_turns_errors_into_exit_status) {
  ASSERT_EQ(run_tool("mm-tool", "Usage: mm-tool X\n", [] { return 3; }), 3);
  testing::internal::CaptureStderr();
  ASSERT_EQ(run_tool("mm-tool", "Usage: mm-tool X\n", []() -> int { throw UsageError("missing X"); }), 2);
  ASSERT_EQ(testing::internal::GetCapturedStderr(),
            "mm-tool: missing X\nUsage: mm-tool X\nTry 'mm-tool --help' for more information.\n");
  testing::internal::CaptureStderr();
  ASSERT_EQ(run_tool("mm-tool", "Usage: mm-tool X\n", []() -> int { throw UserError("cannot read x"); }), 1);
  ASSERT_EQ(testing::internal::GetCapturedStderr(), "mm-tool: cannot read x\n");
}

TEST(Args, shells_help_lines) {
  ASSERT_EQ(std::string(kHelpAndVersionLines),
            "  --tcp-ecn=on|accept|off\n"
            "              TCP's ECN in the shell and the shells inside (net.ipv4.tcp_ecn): on, asked for\n"
            "              and accepted; accept, used when the peer asks; off, never (default: as where\n"
            "              the shell starts; the kernel's is accept)\n"
            "  --verbose   say on standard error whether the TUN offloads are used, and if not why\n"
            "  --help      show this help\n  --version   show the version\n");
}

TEST(Args, verbose_option) {
  bool verbose = false;
  const ArgScanner::Option option = ArgScanner::verbose_option(verbose);
  ASSERT_EQ(option.name, "verbose");
  ASSERT_FALSE(option.takes_value);
  option.apply("");
  ASSERT_TRUE(verbose);
}

TEST(Args, tcp_ecn_option) {
  std::optional<int> mode;
  const ArgScanner::Option option = ArgScanner::tcp_ecn_option(mode);
  ASSERT_EQ(option.name, "tcp-ecn");
  ASSERT_TRUE(option.takes_value);
  for (auto [word, value] : {std::pair{"on", 1}, std::pair{"accept", 2}, std::pair{"off", 0}}) {
    option.apply(word);
    ASSERT_EQ(*mode, value);
  }
  EXPECT_THROW_WITH(UsageError, option.apply("1"), "--tcp-ecn must be on (TCP asks for ECN and accepts it)");
}

TEST(Args, seed_option) {
  std::optional<uint64_t> seed;
  const ArgScanner::Option option = ArgScanner::seed_option(seed);
  ASSERT_EQ(option.name, "seed");
  ASSERT_TRUE(option.takes_value);
  option.apply("42");
  ASSERT_EQ(*seed, 42u);
  EXPECT_THROW_WITH(UsageError, option.apply("x"), "--seed must be a non-negative integer");
}
