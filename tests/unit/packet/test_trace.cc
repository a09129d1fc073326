// SPDX-License-Identifier: GPL-3.0-or-later
// Traces: parsing and its bounds (security finding 6), rates, and the opportunity cursor.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
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

// The period's last millisecond and the next period's millisecond 0 are one millisecond of the
// repeating link: their opportunities are spread over it together, and stay in time order
// (fuzz-trace found "0 1 1 1" giving 1.67 ms, then 1 ms).
TEST(Trace, the_millisecond_where_periods_meet_is_spread_as_one) {
  Trace t = Trace::parse("0\n1\n1\n1\n", "t");
  OpportunityCursor c(t, 0, false);
  std::vector<Nanos> times;
  for (int i = 0; i < 12; i++) {
    times.push_back(c.next());
    c.advance();
  }
  for (size_t i = 1; i < times.size(); i++) ASSERT_LE(times[i - 1], times[i]) << "opportunity " << i;
  // Millisecond 1 holds the period's three and the next period's one, a quarter of a ms apart.
  EXPECT_EQ(times[1], 1 * ms);
  EXPECT_EQ(times[2], 1 * ms + ms / 4);
  EXPECT_EQ(times[3], 1 * ms + ms / 2);
  EXPECT_EQ(times[4], 1 * ms + 3 * ms / 4);
  EXPECT_EQ(times[5], 2 * ms);
  // The rate is unchanged: four opportunities per 1 ms period; the written times are as before.
  EXPECT_EQ(t.offsets().size(), 4u);
  EXPECT_EQ(t.written_ms(0), 0u);
  EXPECT_EQ(t.written_ms(3), 1u);
  // Without a line at 0 the last millisecond is spread alone, as every other.
  Trace u = Trace::parse("1\n1\n", "u");
  EXPECT_EQ(u.offsets()[0], 1 * ms);
  EXPECT_EQ(u.offsets()[1], 1 * ms + ms / 2);
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

TEST(Trace, rates_are_formatted_and_guessed_from_what_people_write) {
  ASSERT_EQ(Trace::format_rate(12e6), "12Mbit/s");
  ASSERT_EQ(Trace::format_rate(5e5), "500kbit/s");
  ASSERT_EQ(Trace::format_rate(1.5e9), "1.5Gbit/s");
  ASSERT_EQ(Trace::format_rate(300), "300bit/s");
  ASSERT_EQ(Trace::parse_rate(Trace::format_rate(2.25e6)), 2.25e6);
  ASSERT_EQ(Trace::guess_rate("12Mbps"), 12e6);
  ASSERT_EQ(Trace::guess_rate("12mbit"), 12e6);
  ASSERT_EQ(Trace::guess_rate("12 Mbit/s"), 12e6);
  ASSERT_EQ(Trace::guess_rate("500kbps"), 5e5);
  ASSERT_EQ(Trace::guess_rate("1gb"), 1e9);
  ASSERT_EQ(Trace::guess_rate("3MB/s"), 24e6);  // bytes
  ASSERT_FALSE(Trace::guess_rate("12"));
  ASSERT_FALSE(Trace::guess_rate("12M"));
  ASSERT_FALSE(Trace::guess_rate("up.trace"));
  ASSERT_FALSE(Trace::guess_rate("Verizon-LTE-short.up"));
  ASSERT_FALSE(Trace::guess_rate("0Mbps"));
}

TEST(Trace, labels_for_the_prompt_come_from_the_argument_alone) {
  ASSERT_EQ(Trace::label("rate:12Mbps"), "12Mbit/s");
  ASSERT_EQ(Trace::label("rate:500kbit/s"), "500kbit/s");
  ASSERT_EQ(Trace::label("/no/such/dir/ATT-LTE-driving.up"), "ATT-LTE-driving.up");  // never opened
  ASSERT_EQ(Trace::label("constant-12Mbps"), "constant-12Mbps");
  ASSERT_EQ(Trace::label("traces/"), "traces");
  ASSERT_EQ(Trace::label("-"), "stdin");
  ASSERT_EQ(Trace::label(std::string(100, 'x')), std::string(21, 'x') + "...");
}

namespace {

// Runs the test body in `directory`, and goes back.
struct InDirectory {
  std::string previous;
  explicit InDirectory(const std::string& directory) {
    char buffer[4096];
    if (!::getcwd(buffer, sizeof buffer) || ::chdir(directory.c_str()) != 0) throw std::runtime_error("chdir failed");
    previous = buffer;
  }
  ~InDirectory() { (void)!::chdir(previous.c_str()); }
};

void write_file(const std::filesystem::path& path, const std::string& text) {
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  ASSERT_TRUE(fd.valid());
  write_all(fd.get(), text);
}

}  // namespace

// mm-link 12Mbps 12Mbps used to say only "No such file or directory": a bare name is looked for
// in the current directory, MAHIMAHI_TRACE_PATH and the bundled traces, and the message says
// where it looked and what was probably meant.
TEST(Trace, bare_trace_names_are_looked_up_and_misses_explained) {
  TempDir work, first, second, bundled;
  write_file(bundled.path / "constant-12Mbps", "1\n");
  write_file(bundled.path / "constant-24Mbps", "1\n1\n");
  write_file(bundled.path / "README", "not a trace\n");
  write_file(bundled.path / "constant-3Mbps", "4\n");
  write_file(second.path / "constant-24Mbps", "2\n");
  write_file(work.path / "here.trace", "5\n");
  TraceSearch search;
  search.path_set = true;
  search.path_directories = {first.path.string(), second.path.string()};
  search.installed_directory = bundled.path.string();
  ASSERT_EQ(search.bundled_names(), (std::vector<std::string>{"constant-3Mbps", "constant-12Mbps", "constant-24Mbps"}));
  InDirectory in(work.path.string());
  ASSERT_EQ(find_trace_file("here.trace", search), "here.trace");
  ASSERT_EQ(find_trace_file("constant-12Mbps", search), bundled.path.string() + "/constant-12Mbps");
  // MAHIMAHI_TRACE_PATH before the bundled traces.
  ASSERT_EQ(find_trace_file("constant-24Mbps", search), second.path.string() + "/constant-24Mbps");
  // A path is taken as it is, found or not (the read says why not).
  ASSERT_EQ(find_trace_file("./missing", search), "./missing");
  ASSERT_EQ(find_trace_file("-", search), "-");
  EXPECT_THROW_WITH(UserError, find_trace_file("12Mbps", search),
                    "cannot find trace \"12Mbps\": no such file in the current directory, MAHIMAHI_TRACE_PATH (" +
                        first.path.string() + ", " + second.path.string() + ") and " + bundled.path.string() +
                        " (the bundled traces); did you mean rate:12Mbit/s or constant-12Mbps?\n"
                        "  bundled traces: constant-3Mbps constant-12Mbps constant-24Mbps");
  search.path_set = false;
  search.path_directories.clear();
  EXPECT_THROW_WITH(UserError, find_trace_file("12mbit", search),
                    "MAHIMAHI_TRACE_PATH (not set) and " + bundled.path.string());
  EXPECT_THROW_WITH(UserError, find_trace_file("12mbit", search), "did you mean rate:12Mbit/s?");
  EXPECT_THROW_WITH(UserError, find_trace_file("uplink", search),
                    "for a constant rate write rate:RATE, e.g. rate:12Mbit/s\n  bundled traces: constant-3Mbps");
  search.installed_directory = (work.path / "none").string();
  EXPECT_THROW_WITH(UserError, find_trace_file("uplink", search), "(no bundled traces are installed in ");
}

TEST(Trace, trace_search_reads_mahimahi_trace_path) {
  ::setenv(TraceSearch::kPathVariable, "/a::/b/c:", 1);
  const TraceSearch search = TraceSearch::from_environment();
  ::unsetenv(TraceSearch::kPathVariable);
  ASSERT_TRUE(search.path_set);
  ASSERT_EQ(search.path_directories, (std::vector<std::string>{"/a", "/b/c"}));
  ASSERT_TRUE(search.installed_directory.ends_with("/share/mahimahi/traces")) << search.installed_directory;
  ASSERT_FALSE(TraceSearch::from_environment().path_set);
}

// A bundled constant trace lasts 1 to 12 ms: --once would end the shell almost at once.
TEST(Trace, once_warns_of_short_traces) {
  const Trace short_one = Trace::parse("1\n", "constant-12Mbps");
  const Trace long_one = Trace::parse("1\n60000\n", "long.trace");
  ASSERT_EQ(short_once_warning(long_one, long_one), "");
  ASSERT_EQ(short_once_warning(short_one, short_one),
            "--once with a short trace: the uplink trace constant-12Mbps lasts 1 ms, the downlink trace "
            "constant-12Mbps lasts 1 ms. With --once the shell, and your command with it, ends after 1 ms, when both "
            "traces have played once. Leave out --once to repeat the traces for as long as the command runs.");
  const std::string mixed = short_once_warning(long_one, Trace::from_argument("rate:1Gbit/s"));
  ASSERT_NE(mixed.find("the downlink trace rate:1Gbit/s lasts 0.012 ms"), std::string::npos) << mixed;
  ASSERT_NE(mixed.find("ends after 60000 ms, when both traces have played once; the downlink carries nothing after "
                       "0.012 ms."),
            std::string::npos)
      << mixed;
}

TEST(Trace, opportunities_until_counts_every_period_and_a_once_trace_only_one) {
  const Trace trace = Trace::parse("2\n5\n", "t");  // at 2 and 5 ms of each 5 ms period
  EXPECT_EQ(trace.opportunities_until(0, false), 0u);
  EXPECT_EQ(trace.opportunities_until(2 * kNanosPerMs - 1, false), 0u);
  EXPECT_EQ(trace.opportunities_until(2 * kNanosPerMs, false), 1u);
  EXPECT_EQ(trace.opportunities_until(5 * kNanosPerMs, false), 2u);
  EXPECT_EQ(trace.opportunities_until(7 * kNanosPerMs, false), 3u);
  EXPECT_EQ(trace.opportunities_until(10 * kNanosPerMs, false), 4u);
  EXPECT_EQ(trace.opportunities_until(5000 * kNanosPerMs, false), 2000u);
  EXPECT_EQ(trace.opportunities_until(100 * kNanosPerMs, true), 2u);
  EXPECT_EQ(trace.opportunities_until(-1, false), 0u);
  // A constant rate, a million periods on: as many as the rate says.
  const Trace fast = Trace::constant_rate(1.2e9, "rate:1.2Gbit/s");  // one per 10 us
  EXPECT_EQ(fast.opportunities_until(10'000 * kNanosPerMs, false), 1'000'000u);
}
