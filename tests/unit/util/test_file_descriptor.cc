// SPDX-License-Identifier: GPL-3.0-or-later
// Reading files the user names (read_user_file): bounds on size, devices, FIFOs and pipes
// (security finding 6), and how messages name them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "expect.hh"
#include "temp_files.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {}  // namespace

TEST(FileDescriptor, read_user_file_refuses_more_than_its_limit) {
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

TEST(FileDescriptor, read_user_file_refuses_devices_and_directories) {
  EXPECT_THROW_WITH(UserError, read_user_file("/dev/zero", "trace", 1 << 20, ""),
                    "cannot read trace /dev/zero: it is a character device, not a file");
  EXPECT_THROW_WITH(UserError, read_user_file("/dev/urandom", "log", 1 << 20, ""), "it is a character device");
  EXPECT_THROW_WITH(UserError, read_user_file("/tmp", "log", 1 << 20, ""), "cannot read log /tmp: it is a directory");
}

TEST(FileDescriptor, read_user_file_does_not_block_on_a_fifo_without_writer) {
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

TEST(FileDescriptor, read_user_file_reads_a_pipe_only_up_to_its_limit) {
  int p[2];
  ASSERT_TRUE(::pipe(p) == 0);
  const std::string data(3000, '1');
  write_all(p[1], data);  // fits in the pipe's buffer
  ::close(p[1]);
  const std::string path = "/proc/self/fd/" + std::to_string(p[0]);
  EXPECT_THROW_WITH(UserError, read_user_file(path, "trace", 2000, ""), "is larger than 1.95 KiB (the limit)");
  ::close(p[0]);
}

TEST(FileDescriptor, user_file_name_calls_dash_standard_input) {
  ASSERT_EQ(user_file_name("-"), "standard input");
  ASSERT_EQ(user_file_name("up.trace"), "up.trace");
  ASSERT_EQ(user_file_name("./-"), "./-");
}
