// Traces: parsing and its bounds (security finding 6), rates, and the opportunity cursor.
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>

#include "expect.hh"
#include "packet/trace.hh"
#include "temp_files.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {}  // namespace

namespace {
const Nanos ms = kNanosPerMs;
}  // namespace

TEST(Trace, trace_parse_and_errors) {
  Trace t = Trace::parse("0\n5\n5\n10\n", "t");
  ASSERT_EQ(t.offsets().size(), 4u);
  ASSERT_EQ(t.period(), 10 * ms);
  ASSERT_EQ(t.offsets()[1], 5 * ms);  // two in the 5th millisecond: at 5 and 5.5 ms
  ASSERT_EQ(t.offsets()[2], 5 * ms + ms / 2);
  Trace spread = Trace::parse("1\n1\n1\n1\n3\n3\n3\n", "t");
  ASSERT_EQ(spread.offsets()[3], ms + 3 * ms / 4);
  ASSERT_EQ(spread.offsets()[6], 3 * ms + 2 * ms / 3);
  ASSERT_EQ(spread.period(), 3 * ms);
  ASSERT_TRUE(std::abs(t.mean_bits_per_second() - 4 * 12000 / 0.010) < 1);
  ASSERT_EQ(Trace::parse("1", "t").period(), ms);  // no final newline is fine
  EXPECT_THROW_WITH(UserError, Trace::parse("", "up.trace"), "up.trace: empty trace");
  EXPECT_THROW_WITH(UserError, Trace::parse("1\nabc\n", "up.trace"),
                    "up.trace:2: \"abc\" is not a non-negative integer");
  EXPECT_THROW_WITH(UserError, Trace::parse("1\n-3\n", "t"), "t:2:");
  EXPECT_THROW_WITH(UserError, Trace::parse("7\n5\n", "t"), "t:2: timestamps must not decrease (5 after 7)");
  EXPECT_THROW_WITH(UserError, Trace::parse("0\n0\n", "t"), "t:2: the last timestamp must be greater than 0");
  EXPECT_THROW_WITH(UserError, Trace::parse("1\n\n2\n", "t"), "t:2: empty line");
  EXPECT_THROW_WITH(UserError, Trace::parse("1\r\n", "t"), "t:1: DOS line ending");
  EXPECT_THROW_WITH(UserError, Trace::parse("1.5\n", "t"), "t:1:");
  EXPECT_THROW_WITH(UserError, Trace::load("/nonexistent/trace"), "cannot read trace /nonexistent/trace: No such file");
}

TEST(Trace, trace_rates) {
  ASSERT_EQ(Trace::parse_rate("12Mbit/s"), 12e6);
  ASSERT_EQ(Trace::parse_rate("500kbit/s"), 5e5);
  ASSERT_EQ(Trace::parse_rate("1Gbps"), 1e9);
  ASSERT_EQ(Trace::parse_rate("2.5Mbps"), 2.5e6);
  EXPECT_THROW_WITH(UsageError, Trace::parse_rate("12"), "is not a rate");
  EXPECT_THROW_WITH(UsageError, Trace::parse_rate("12MB/s"), "is not a rate");
  EXPECT_THROW_WITH(UsageError, Trace::parse_rate("-1Mbit/s"), "is not a rate");
  Trace t = Trace::from_argument("rate:12Mbit/s");
  ASSERT_EQ(t.period(), ms);  // one 1500-byte opportunity per ms
  ASSERT_EQ(Trace::from_argument("rate:500kbit/s").period(), 24 * ms);
  ASSERT_EQ(Trace::from_argument("rate:1Gbit/s").period(), 12'000);
}

TEST(Trace, cursor_repeats_with_period_and_stops_once) {
  Trace t = Trace::parse("2\n5\n", "t");
  OpportunityCursor c(t, 100, false);
  std::vector<Nanos> times;
  for (int i = 0; i < 5; i++) {
    times.push_back(c.next());
    c.advance();
  }
  ASSERT_EQ(times[0], 100 + 2 * ms);
  ASSERT_EQ(times[1], 100 + 5 * ms);
  ASSERT_EQ(times[2], 100 + 7 * ms);
  ASSERT_EQ(times[4], 100 + 12 * ms);
  ASSERT_EQ(c.next(), 100 + 15 * ms);
  ASSERT_EQ(c.nth(2), 100 + 17 * ms);
  OpportunityCursor once(t, 0, true);
  once.advance();
  once.advance();
  ASSERT_TRUE(once.exhausted());
  ASSERT_EQ(once.next(), kNever);
}

TEST(Trace, trace_bounds_on_lines_and_values) {
  // The largest time is accepted, one more is not.
  ASSERT_EQ(Trace::parse("2147483647\n", "t").period(), static_cast<Nanos>(2147483647) * ms);
  EXPECT_THROW_WITH(UserError, Trace::parse("1\n2147483648\n", "t"),
                    "t:2: timestamp 2147483648 is too large: times are at most 2147483647 ms (24.8 days)");
  EXPECT_THROW_WITH(UserError, Trace::parse("1000000000000\n", "t"), "t:1: timestamp 1000000000000 is too large");
  // Beyond 64 bits: still "too large", not "not a number".
  EXPECT_THROW_WITH(UserError, Trace::parse("123456789012345678901234567890\n", "t"), "t:1: timestamp 1234");
  // A line longer than any time is refused without being copied whole into the message.
  EXPECT_THROW_WITH(UserError, Trace::parse("1\n" + std::string(100000, '7') + "\n", "t"),
                    "t:2: line of 100000 characters (\"77777777777777777777...\")");
  EXPECT_THROW_WITH(UserError, Trace::parse(std::string(33, '0') + "1\n", "t"), "t:1: line of 34 characters");
  ASSERT_EQ(Trace::parse(std::string(31, '0') + "1\n", "t").period(), ms);  // 32 characters are fine
}

TEST(Trace, trace_bound_on_the_number_of_opportunities) {
  std::string lines;
  lines.reserve(2 * (Trace::kMaxOpportunities + 1));
  for (uint64_t i = 0; i < Trace::kMaxOpportunities; i++) lines += "1\n";
  ASSERT_EQ(Trace::parse(lines, "t").offsets().size(), Trace::kMaxOpportunities);
  lines += "1\n";
  EXPECT_THROW_WITH(UserError, Trace::parse(lines, "t"),
                    "t:10000001: more than 10000000 lines; a trace holds at most that many opportunities");
}

TEST(Trace, trace_load_refuses_devices_and_oversized_files) {
  EXPECT_THROW_WITH(UserError, Trace::load("/dev/zero"), "cannot read trace /dev/zero: it is a character device");
  TempFile file("1\n");
  ASSERT_TRUE(::truncate(file.path.c_str(), static_cast<off_t>(Trace::kMaxFileBytes) + 1) == 0);  // sparse
  EXPECT_THROW_WITH(UserError, Trace::load(file.path), "is larger than 128 MiB (the limit); a trace holds at most");
}
