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
