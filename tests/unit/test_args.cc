#include "args.hh"
#include "clock.hh"
#include "exception.hh"
#include "harness.hh"

TEST(parse_numbers) {
  CHECK_EQ(parse_nonnegative("50", "DELAY-MS"), 50.0);
  CHECK_EQ(parse_nonnegative("12.5", "DELAY-MS"), 12.5);
  CHECK_EQ(parse_nonnegative("0", "DELAY-MS"), 0.0);
  CHECK_THROWS(UsageError, parse_nonnegative("-5", "DELAY-MS"), "must not be negative");
  CHECK_THROWS(UsageError, parse_nonnegative("abc", "DELAY-MS"), "DELAY-MS must be a number, not \"abc\"");
  CHECK_THROWS(UsageError, parse_nonnegative("5ms", "DELAY-MS"), "not \"5ms\"");
  CHECK_THROWS(UsageError, parse_nonnegative("", "DELAY-MS"), "must be a number");
  CHECK_THROWS(UsageError, parse_nonnegative("inf", "DELAY-MS"), "must be a number");
  CHECK_THROWS(UsageError, parse_nonnegative("nan", "DELAY-MS"), "must be a number");
  CHECK_EQ(parse_probability("1", "rate"), 1.0);
  CHECK_THROWS(UsageError, parse_probability("1.01", "loss rate"), "between 0 and 1");
  CHECK_EQ(parse_unsigned("42", "--seed"), 42u);
  CHECK_THROWS(UsageError, parse_unsigned("-1", "--seed"), "non-negative integer");
}

namespace {
const ProgramInfo kInfo{"mm-test", "X [--] [COMMAND...]", ""};

std::vector<std::string> scan(std::vector<std::string> words, std::vector<std::string>& positionals, int wanted,
                              std::string* seed = nullptr) {
  std::vector<char*> argv;
  std::string name = "mm-test";
  argv.push_back(name.data());
  for (auto& w : words) argv.push_back(w.data());
  ArgScanner scanner(kInfo, {{"seed", true, [&](std::string_view v) { if (seed) *seed = v; }},
                             {"once", false, [](std::string_view) {}}});
  return scanner.scan(static_cast<int>(argv.size()), argv.data(), [&](std::string_view w) {
    if (static_cast<int>(positionals.size()) == wanted) return false;
    positionals.emplace_back(w);
    return true;
  });
}
}  // namespace

TEST(scan_command_after_positionals) {
  std::vector<std::string> pos;
  auto cmd = scan({"50", "ping", "-c", "1", "host"}, pos, 1);
  CHECK_EQ(pos.size(), 1u);
  CHECK_EQ(cmd.size(), 4u);
  CHECK_EQ(cmd[1], "-c");  // the command's own options are not ours
}

TEST(scan_double_dash_and_options_anywhere) {
  std::vector<std::string> pos;
  std::string seed;
  auto cmd = scan({"--seed=7", "uplink", "--once", "0.1", "--", "sh", "-c", "true"}, pos, 2, &seed);
  CHECK_EQ(seed, "7");
  CHECK_EQ(pos.size(), 2u);
  CHECK_EQ(cmd.size(), 3u);
  pos.clear();
  scan({"--seed", "9", "x", "y"}, pos, 2, &seed);
  CHECK_EQ(seed, "9");
}

TEST(scan_rejects_unknown_options_and_missing_values) {
  std::vector<std::string> pos;
  CHECK_THROWS(UsageError, scan({"--bogus", "5"}, pos, 1), "unknown option \"--bogus\"");
  CHECK_THROWS(UsageError, scan({"5", "--seed"}, pos, 2), "--seed needs a value");
  CHECK_THROWS(UsageError, scan({"--once=3"}, pos, 1), "takes no value");
  pos.clear();
  scan({"-5"}, pos, 1);  // a negative number is a positional (rejected later with a clear message)
  CHECK_EQ(pos[0], "-5");
}

TEST(time_conversions) {
  CHECK_EQ(ms_to_nanos(12.5), 12'500'000);
  CHECK_EQ(ms_to_nanos(0.001), 1'000);
  CHECK_EQ(seconds_to_nanos(1.5), 1'500'000'000);
  CHECK_EQ(nanos_to_ms(40'000'000), 40.0);
  const timespec ts = to_timespec(3'000'000'007);
  CHECK(ts.tv_sec == 3 && ts.tv_nsec == 7);
  const Nanos a = monotonic_now(), b = monotonic_now();
  CHECK(b >= a);
}
