// SPDX-License-Identifier: GPL-3.0-or-later
// make_private_directory: mode 0700 whatever the umask, missing parents, and the refusals
// (symbolic link, not a directory, writable by others, existing when it must be new, missing
// parent), each message naming the path and the fix.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "expect.hh"
#include "temp_files.hh"
#include "util/private_directory.hh"

namespace fs = std::filesystem;

namespace {
mode_t mode_of(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) throw std::runtime_error("lstat " + path.string());
  return st.st_mode & 07777;
}

// Runs `body` with the umask set to `mask`, then restores the old one.
template <typename Body>
void with_umask(mode_t mask, Body body) {
  const mode_t old = ::umask(mask);
  try {
    body();
  } catch (...) {
    ::umask(old);
    throw;
  }
  ::umask(old);
}

const PrivateDirectoryOptions kFixOnly{.fix = "choose another directory"};
}  // namespace

TEST(PrivateDirectory, creates_it_and_missing_parents_0700_whatever_the_umask) {
  TempDir tmp;
  const fs::path dir = tmp.path / "a" / "b" / "c";
  with_umask(0777, [&] { make_private_directory(dir, kFixOnly); });
  EXPECT_EQ(mode_of(tmp.path / "a"), 0700u);
  EXPECT_EQ(mode_of(tmp.path / "a" / "b"), 0700u);
  EXPECT_EQ(mode_of(dir), 0700u);
}

TEST(PrivateDirectory, accepts_an_existing_private_directory_as_it_is) {
  TempDir tmp;
  const fs::path dir = tmp.path / "ca";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  make_private_directory(dir, kFixOnly);
  make_private_directory(dir.string() + "/", kFixOnly);
  EXPECT_EQ(mode_of(dir), 0755u);  // not writable by others: left alone
}

TEST(PrivateDirectory, refuses_a_directory_others_may_write) {
  TempDir tmp;
  const fs::path dir = tmp.path / "shared";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
  EXPECT_THROW_WITH(PrivateDirectoryError, make_private_directory(dir, kFixOnly),
                    dir.string() + " is writable by other users (mode 0775); run chmod go-w " + dir.string() +
                        ", or choose another directory");
}

TEST(PrivateDirectory, refuses_a_symbolic_link_even_to_a_private_directory) {
  TempDir tmp;
  const fs::path target = tmp.path / "target", link = tmp.path / "link";
  ASSERT_EQ(::mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  EXPECT_THROW_WITH(PrivateDirectoryError, make_private_directory(link, kFixOnly),
                    link.string() + " is a symbolic link, not a directory; choose another directory");
  const fs::path dangling = tmp.path / "dangling";
  ASSERT_EQ(::symlink((tmp.path / "nowhere").c_str(), dangling.c_str()), 0);
  EXPECT_THROW_WITH(PrivateDirectoryError, make_private_directory(dangling, kFixOnly), "is a symbolic link");
  EXPECT_FALSE(fs::exists(tmp.path / "nowhere"));
}

TEST(PrivateDirectory, refuses_a_file_in_the_way) {
  TempDir tmp;
  const fs::path file = tmp.path / "file";
  std::ofstream(file) << "x";
  EXPECT_THROW_WITH(PrivateDirectoryError, make_private_directory(file, kFixOnly),
                    file.string() + " exists and is not a directory; choose another directory");
  try {
    make_private_directory(file / "below", kFixOnly);
    ADD_FAILURE() << "a file as a parent was accepted";
  } catch (const PrivateDirectoryError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot create directory " + file.string() + ": " + std::strerror(EEXIST) + "; choose another directory");
    EXPECT_EQ(e.error(), EEXIST);
  }
}

TEST(PrivateDirectory, must_be_new_and_parents_must_exist_when_asked) {
  TempDir tmp;
  const PrivateDirectoryOptions strict{.create_parents = false, .must_be_new = true, .fix = "choose a new directory"};
  const fs::path dir = tmp.path / "recording";
  with_umask(0077, [&] { make_private_directory(dir, strict); });
  EXPECT_EQ(mode_of(dir), 0700u);
  try {
    make_private_directory(dir, strict);
    ADD_FAILURE() << "an existing directory was accepted";
  } catch (const PrivateDirectoryError& e) {
    EXPECT_EQ(e.error(), EEXIST);
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos);
  }
  try {
    make_private_directory(tmp.path / "missing" / "recording", strict);
    ADD_FAILURE() << "a missing parent was created";
  } catch (const PrivateDirectoryError& e) {
    EXPECT_EQ(e.error(), ENOENT);
  }
  EXPECT_FALSE(fs::exists(tmp.path / "missing"));
}

TEST(PrivateDirectory, refuses_another_users_directory) {
  if (::geteuid() == 0) GTEST_SKIP() << "root owns nothing it cannot also use";
  // / is root's and not writable by others: only the owner check can refuse it.
  EXPECT_THROW_WITH(PrivateDirectoryError, make_private_directory("/", kFixOnly),
                    "/ belongs to another user (uid 0); a private directory must be yours; choose another directory");
}
