// SPDX-License-Identifier: GPL-3.0-or-later
// Reading mm-link logs for the graphs: bounds (security finding 6), the summary and the signal delay.
#include <unistd.h>

#include <cmath>
#include <string>

#include "expect.hh"
#include "graphing/link_log_reader.hh"
#include "util/exception.hh"

TEST(LinkLogReader, log_reader_bounds) {
  EXPECT_THROW_WITH(UserError, LinkLog::parse("0 # 1500\n90000000 # 1500\n", "l"),
                    "l: its events span 25.0 hours (0 to 90000000 ms), more than the 24 hours the graphs can cover");
  ASSERT_EQ(LinkLog::parse("0 # 1500\n86400000 # 1500\n", "l").last, 86400000.0);  // 24 hours are fine
  EXPECT_THROW_WITH(UserError, LinkLog::parse("1 # 1500\n1e300 + 1500\n", "l"), "l:2: expected a time");
  EXPECT_THROW_WITH(UserError, LinkLog::parse("1 d 1e16 1500\n", "l"), "l:1: malformed 'd' line");
  // A base timestamp beyond the bound is ignored, not kept (fuzz-link-log: times minus 5e19
  // overflowed the signal delay's milliseconds).
  const LinkLog based = LinkLog::parse("# base timestamp: 55555555555555555555\n2 - 1500 1\n3 # 1500\n", "l");
  EXPECT_EQ(based.first, 2.0);
  EXPECT_EQ(signal_delays(based).size(), 2u);
  // Negative sizes, counts and delays (found by fuzz-link-log: a count of -1 dropped packets
  // wrapped around to 2^64 - 1 when summed).
  for (const char* line : {"2 d -1 100", "2 d 1 -100", "2 # -1500", "2 + -1", "2 - 1500 -2.5", "2 - -1500 2.5"}) {
    EXPECT_THROW_WITH(UserError, LinkLog::parse(std::string("1 # 1500\n") + line + "\n", "l"),
                      "l:2: malformed '" + std::string(1, line[2]) + "' line \"" + line +
                          "\" (sizes, counts and delays are numbers from 0 to 1e15)");
  }
  EXPECT_THROW_WITH(UserError, LinkLog::parse("1 + " + std::string(1000, '5') + "\n", "l"),
                    "l:1: line of 1004 characters, longer than any event line (256)");
  // Header lines (the command line) may be long.
  ASSERT_EQ(LinkLog::parse("# command line: " + std::string(5000, 'x') + "\n1 # 1500\n", "l").opportunities.size(), 1u);
  EXPECT_THROW_WITH(UserError, LinkLog::read("/dev/zero"), "cannot read log /dev/zero: it is a character device");
}

TEST(LinkLogReader, log_reader_summary_and_signal_delay) {
  char path[] = "/tmp/mm-unit-log.XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  const std::string text =
      "# mahimahi mm-link (Downlink) [x] > y\n# base timestamp: 10\n"
      "11 # 1500\n11 + 1000\n12 # 1500\n12 - 1000 1\n13 # 1500\n13 d 2 3000\n14 # 1500\n14 + 500\n20 # 1500\n"
      "20 - 500 6\n";
  ASSERT_TRUE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  const LinkLog log = LinkLog::read(path);
  ::unlink(path);
  ASSERT_EQ(log.opportunities.size(), 5u);
  ASSERT_EQ(log.first, 1.0);  // base timestamp subtracted
  ASSERT_EQ(log.last, 10.0);
  const LinkSummary s = summarize(log);
  ASSERT_TRUE(std::abs(s.capacity_mbps - 5 * 1500 * 8 / 0.009 / 1e6) < 1e-9);
  ASSERT_TRUE(std::abs(s.throughput_mbps - 1500 * 8 / 0.009 / 1e6) < 1e-9);
  ASSERT_EQ(s.dropped_packets, 2u);
  // Signal delay: packet sent at 1 arrived at 2; packet sent at 4 arrived at 10.
  const auto sd = signal_delays(log);  // ms 1..10
  ASSERT_EQ(sd.size(), 10u);
  ASSERT_EQ(sd[0], 1.0);           // at 1: 2 - 1
  ASSERT_EQ(sd[1], 8.0);           // at 2: nothing sent at 2 or 3 arrives before the one sent at 4 (10 - 2)
  ASSERT_EQ(sd[3], 6.0);           // at 4: 10 - 4
  ASSERT_TRUE(std::isnan(sd[9]));  // after the last send nothing arrives
  EXPECT_THROW_WITH(UserError, LinkLog::read("/nonexistent.log"), "cannot read log /nonexistent.log");
}

TEST(LinkLogReader, a_log_with_header_lines_only_is_an_empty_log_and_an_empty_file_is_refused) {
  const LinkLog log = LinkLog::parse("# mahimahi mm-link (Uplink) [x] > u.log\n# base timestamp: 0\n", "u.log");
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(log.first, 0.0);
  EXPECT_EQ(log.last, 0.0);
  EXPECT_FALSE(LinkLog::parse("0 # 1500\n", "l").empty());
  EXPECT_THROW_WITH(UserError, LinkLog::parse("", "e.log"), "e.log: empty, not an mm-link log");
  EXPECT_THROW_WITH(UserError, LinkLog::parse("\n\n", "e.log"), "e.log: empty, not an mm-link log");
}

TEST(LinkLogReader, delay_text_says_why_there_is_no_value) {
  const LinkLog delivered = LinkLog::parse("0 # 1500\n0 + 1500\n3 - 1500 3\n", "l");
  EXPECT_EQ(delay_text(3, delivered), "3 ms");
  EXPECT_EQ(delay_text(NAN, LinkLog::parse("0 # 1500\n", "l")), "- (no packets delivered)");
  EXPECT_EQ(delay_text(NAN, delivered), "- (no packet sent within the log was delivered)");
}
