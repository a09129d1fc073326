// SPDX-License-Identifier: GPL-3.0-or-later
// The namespaces' lock files (shell/forwarding.hh), in a state directory of the test's own: a
// claimed slot or a shell's flock keeps a file, and the files nobody uses (left by shells killed
// during their set-up) are removed by the next clean-up.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "expect.hh"
#include "shell/forwarding.hh"
#include "temp_files.hh"

namespace {

// Root's directory again after the test, whatever it did.
struct StateDirectory {
  explicit StateDirectory(const std::filesystem::path& path) { use_rootless_state_directory(path.string()); }
  ~StateDirectory() { use_rootless_state_directory(""); }
};

TEST(LockFiles, unused_ones_are_removed_and_used_ones_stay) {
  TempDir dir;
  StateDirectory state(dir.path);
  for (const char* name : {"netns-1.lock", "netns-2.lock", "netns-3.lock", "notes.txt"}) std::ofstream(dir.path / name);
  // A shell holding a slot of netns-2 (an OFD lock on one byte), one setting up in netns-3 (flock).
  FileDescriptor slot(::open((dir.path / "netns-2.lock").c_str(), O_RDWR | O_CLOEXEC));
  struct flock byte {};
  byte.l_type = F_WRLCK;
  byte.l_whence = SEEK_SET;
  byte.l_start = 7;
  byte.l_len = 1;
  ASSERT_EQ(::fcntl(slot.get(), F_OFD_SETLK, &byte), 0);
  FileDescriptor setting_up(::open((dir.path / "netns-3.lock").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_EQ(::flock(setting_up.get(), LOCK_EX), 0);

  remove_unused_lock_files();
  EXPECT_FALSE(std::filesystem::exists(dir.path / "netns-1.lock"));
  EXPECT_TRUE(std::filesystem::exists(dir.path / "netns-2.lock"));
  EXPECT_TRUE(std::filesystem::exists(dir.path / "netns-3.lock"));
  EXPECT_TRUE(std::filesystem::exists(dir.path / "notes.txt"));  // not a lock file: never touched

  slot = FileDescriptor();
  setting_up = FileDescriptor();
  remove_unused_lock_files();
  EXPECT_FALSE(std::filesystem::exists(dir.path / "netns-2.lock"));
  EXPECT_FALSE(std::filesystem::exists(dir.path / "netns-3.lock"));
}

TEST(LockFiles, a_claimed_slot_keeps_this_namespaces_file_until_released) {
  TempDir dir;
  StateDirectory state(dir.path);
  FileDescriptor claim = claim_address_slot(5);
  ASSERT_TRUE(claim.valid());
  EXPECT_FALSE(claim_address_slot(5).valid());  // held: another shell must take another slot
  remove_unused_lock_files();
  ASSERT_TRUE(std::filesystem::exists(namespace_lock_path()));
  claim = FileDescriptor();
  remove_unused_lock_files();
  EXPECT_FALSE(std::filesystem::exists(namespace_lock_path()));
  // A claim after the removal makes the file again.
  EXPECT_TRUE(claim_address_slot(5).valid());
}

}  // namespace
