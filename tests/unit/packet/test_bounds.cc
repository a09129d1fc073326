// Bounds on user input (security finding 6): file sizes, device and FIFO files, trace lines,
// values and counts, link logs.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "expect.hh"
#include "graphing/link_log_reader.hh"
#include "packet/trace.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {
// A file in /tmp holding text, removed when the object goes.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/mm-unit-bounds.XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    path = name;
    write_all(fd, text);
    ::close(fd);
  }
  ~TempFile() { ::unlink(path.c_str()); }
};
}  // namespace

TEST(Bounds, read_user_file_refuses_more_than_its_limit) {
  TempFile file(std::string(1000, 'x'));
  ASSERT_EQ(read_user_file(file.path, "trace", 1000, "fix it").size(), 1000u);  // exactly the limit
  EXPECT_THROW_WITH(UserError, read_user_file(file.path, "trace", 999, "use a shorter one"),
                    "trace " + file.path + " is larger than 999 bytes (the limit); use a shorter one");
  ASSERT_EQ(format_size(128ULL << 20), "128 MiB");
  ASSERT_EQ(format_size(2147483647), "2 GiB");
  ASSERT_EQ(format_size(1536), "1.5 KiB");
  EXPECT_THROW_WITH(UserError, read_user_file("/nonexistent.trace", "trace", 10, ""),
                    "cannot read trace /nonexistent.trace: No such file or directory");
}

TEST(Bounds, read_user_file_refuses_devices_and_directories) {
  EXPECT_THROW_WITH(UserError, read_user_file("/dev/zero", "trace", 1 << 20, ""),
                    "cannot read trace /dev/zero: it is a character device, not a file");
  EXPECT_THROW_WITH(UserError, read_user_file("/dev/urandom", "log", 1 << 20, ""), "it is a character device");
  EXPECT_THROW_WITH(UserError, read_user_file("/tmp", "log", 1 << 20, ""), "cannot read log /tmp: it is a directory");
}

TEST(Bounds, read_user_file_does_not_block_on_a_fifo_without_writer) {
  char dir[] = "/tmp/mm-unit-fifo.XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/f";
  ASSERT_TRUE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string text = read_user_file(fifo, "trace", 100, "");  // no writer: end of file at once
  const auto took = std::chrono::steady_clock::now() - start;
  ::unlink(fifo.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(text.empty());
  ASSERT_TRUE(took < std::chrono::seconds(2));
}

TEST(Bounds, read_user_file_reads_a_pipe_only_up_to_its_limit) {
  int p[2];
  ASSERT_TRUE(::pipe(p) == 0);
  const std::string data(3000, '1');
  write_all(p[1], data);  // fits in the pipe's buffer
  ::close(p[1]);
  const std::string path = "/proc/self/fd/" + std::to_string(p[0]);
  EXPECT_THROW_WITH(UserError, read_user_file(path, "trace", 2000, ""), "is larger than 1.95 KiB (the limit)");
  ::close(p[0]);
}

TEST(Bounds, trace_bounds_on_lines_and_values) {
  const Nanos ms = kNanosPerMs;
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

TEST(Bounds, trace_bound_on_the_number_of_opportunities) {
  std::string lines;
  lines.reserve(2 * (Trace::kMaxOpportunities + 1));
  for (uint64_t i = 0; i < Trace::kMaxOpportunities; i++) lines += "1\n";
  ASSERT_EQ(Trace::parse(lines, "t").offsets().size(), Trace::kMaxOpportunities);
  lines += "1\n";
  EXPECT_THROW_WITH(UserError, Trace::parse(lines, "t"),
                    "t:10000001: more than 10000000 lines; a trace holds at most that many opportunities");
}

TEST(Bounds, trace_load_refuses_devices_and_oversized_files) {
  EXPECT_THROW_WITH(UserError, Trace::load("/dev/zero"), "cannot read trace /dev/zero: it is a character device");
  TempFile file("1\n");
  ASSERT_TRUE(::truncate(file.path.c_str(), static_cast<off_t>(Trace::kMaxFileBytes) + 1) == 0);  // sparse
  EXPECT_THROW_WITH(UserError, Trace::load(file.path), "is larger than 128 MiB (the limit); a trace holds at most");
}

TEST(Bounds, log_reader_bounds) {
  EXPECT_THROW_WITH(UserError, LinkLog::parse("0 # 1500\n90000000 # 1500\n", "l"),
                    "l: its events span 25.0 hours (0 to 90000000 ms), more than the 24 hours the graphs can cover");
  ASSERT_EQ(LinkLog::parse("0 # 1500\n86400000 # 1500\n", "l").last, 86400000.0);  // 24 hours are fine
  EXPECT_THROW_WITH(UserError, LinkLog::parse("1 # 1500\n1e300 + 1500\n", "l"), "l:2: expected a time");
  EXPECT_THROW_WITH(UserError, LinkLog::parse("1 d 1e16 1500\n", "l"), "l:1: malformed 'd' line");
  EXPECT_THROW_WITH(UserError, LinkLog::parse("1 + " + std::string(1000, '5') + "\n", "l"),
                    "l:1: line of 1004 characters, longer than any event line (256)");
  // Header lines (the command line) may be long.
  ASSERT_EQ(LinkLog::parse("# command line: " + std::string(5000, 'x') + "\n1 # 1500\n", "l").opportunities.size(), 1u);
  EXPECT_THROW_WITH(UserError, LinkLog::read("/dev/zero"), "cannot read log /dev/zero: it is a character device");
}

#include "packet/link_queue.hh"
#include "packet/queue_discipline.hh"

TEST(Bounds, idle_fast_link_skips_whole_periods) {
  // rate:1Tbit/s idle for an hour: 3e14 opportunities passed; the first packet after it leaves
  // at the next one, at once (not after a loop over every opportunity).
  const Trace trace = Trace::constant_rate(1e12, "rate:1Tbit/s");
  LinkQueue link(trace, 0, false,
                 make_queue_discipline("infinite", QueueArgs::parse("", "--uplink-queue"), "--uplink-queue", 1),
                 nullptr);
  const Nanos hour = 3600LL * 1'000'000'000;
  const auto start = std::chrono::steady_clock::now();
  link.release(hour, [](std::span<const uint8_t>) {});
  auto space = link.reserve();
  std::fill(space.begin(), space.begin() + 100, uint8_t{0x45});
  link.commit(hour, 100);
  const Nanos due = link.next_departure();
  ASSERT_TRUE(due > hour && due <= hour + trace.period());
  int sent = 0;
  link.release(due, [&](std::span<const uint8_t> p) { sent += static_cast<int>(p.size()); });
  ASSERT_EQ(sent, 100);
  ASSERT_TRUE(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  // A trace of several opportunities per period: the cursor lands on the same position.
  const Trace three = Trace::parse("1\n2\n4\n", "t");
  OpportunityCursor cursor(three, 0, false);
  cursor.skip_periods_until(4 * kNanosPerMs * 1000 + 1);  // 1000 periods and a bit
  ASSERT_EQ(cursor.next(), 3997 * kNanosPerMs);           // the last period whose first opportunity has passed
  ASSERT_EQ(cursor.nth(2), 3998 * kNanosPerMs);
  OpportunityCursor once(three, 0, true);
  once.skip_periods_until(1000 * kNanosPerMs);
  ASSERT_EQ(once.next(), kNanosPerMs);  // --once: nothing skipped here
}
