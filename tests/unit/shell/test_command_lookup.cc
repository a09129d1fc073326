// SPDX-License-Identifier: GPL-3.0-or-later
// The command is found as bash finds it, with the caller's rights, and refused as bash reports it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "../expect.hh"
#include "../temp_files.hh"
#include "shell/command_lookup.hh"
#include "util/exception.hh"

namespace {

void make_file(const std::filesystem::path& path, mode_t mode) {
  std::ofstream(path) << "#!/bin/sh\n";
  ::chmod(path.c_str(), mode);
}

int status_of(const std::string& name, const std::string& path) {
  try {
    resolve_command(name, path.c_str());
  } catch (const StatusError& e) {
    return e.status();
  }
  return 0;
}

}  // namespace

TEST(CommandLookup, finds_the_first_executable_file_on_the_path) {
  TempDir a, b;
  make_file(b.path / "tool", 0755);
  make_file(a.path / "tool", 0755);
  const std::string path = a.path.string() + ":" + b.path.string();
  EXPECT_EQ(resolve_command("tool", path.c_str()), (a.path / "tool").string());
  EXPECT_EQ(resolve_command("sh", nullptr).substr(0, 1), "/");  // the default path has sh
}

TEST(CommandLookup, passes_over_directories_and_files_it_cannot_run) {
  TempDir a, b, c;
  std::filesystem::create_directory(a.path / "tool");
  make_file(b.path / "tool", 0644);
  make_file(c.path / "tool", 0755);
  const std::string path = a.path.string() + ":" + b.path.string() + ":" + c.path.string();
  EXPECT_EQ(resolve_command("tool", path.c_str()), (c.path / "tool").string());
}

TEST(CommandLookup, reports_what_bash_reports) {
  TempDir a;
  make_file(a.path / "plain", 0644);
  const std::string path = a.path.string();
  EXPECT_THROW_WITH(StatusError, resolve_command("no-such-tool", path.c_str()), "no-such-tool: command not found");
  EXPECT_EQ(status_of("no-such-tool", path), 127);
  EXPECT_THROW_WITH(StatusError, resolve_command("plain", path.c_str()), "plain: Permission denied");
  EXPECT_EQ(status_of("plain", path), 126);
  EXPECT_EQ(status_of(a.path.string(), path), 126);  // a directory
  EXPECT_EQ(status_of((a.path / "missing").string(), path), 127);
  EXPECT_EQ(status_of("", path), 127);
}

TEST(CommandLookup, an_empty_entry_is_the_current_directory) {
  TempDir a;
  make_file(a.path / "here", 0755);
  const auto before = std::filesystem::current_path();
  std::filesystem::current_path(a.path);
  EXPECT_EQ(resolve_command("here", "/nonexistent::/also-not"), "./here");
  std::filesystem::current_path(before);
}

TEST(CommandLookup, a_directory_the_caller_cannot_search_is_not_found_there) {
  if (::geteuid() == 0) GTEST_SKIP() << "root searches every directory";
  TempDir locked, open;
  make_file(locked.path / "tool", 0755);
  ::chmod(locked.path.c_str(), 0600);
  const std::string path = locked.path.string();
  EXPECT_EQ(status_of("tool", path), 127);  // execvp said "Permission denied" (126) here
  make_file(open.path / "tool", 0755);
  const std::string both = path + ":" + open.path.string();
  EXPECT_EQ(resolve_command("tool", both.c_str()), (open.path / "tool").string());
  ::chmod(locked.path.c_str(), 0700);
}

TEST(CommandLookup, refuses_an_unbounded_path) {
  const std::string huge(kMaxCommandPath + 1, 'x');
  EXPECT_EQ(status_of("tool", huge), 127);
}

// mahimahi's own programs are looked for next to the running program first (an integration test,
// sweep.sh's and shells.sh's, shows an installed one found there before PATH's decoys); anything
// else, and a program not installed beside it, is PATH's, as bash finds it.
TEST(CommandLookup, a_program_not_beside_this_one_is_found_on_the_path) {
  TempDir a;
  make_file(a.path / "mm-not-installed-here", 0755);
  make_file(a.path / "tool", 0755);
  EXPECT_EQ(resolve_program("mm-not-installed-here", a.path.c_str()), (a.path / "mm-not-installed-here").string());
  EXPECT_EQ(resolve_program("tool", a.path.c_str()), (a.path / "tool").string());
  const std::string with_slash = (a.path / "tool").string();
  EXPECT_EQ(resolve_program(with_slash, "/nonexistent"), with_slash);
  EXPECT_THROW_WITH(StatusError, resolve_program("mm-not-installed-anywhere", a.path.c_str()),
                    "mm-not-installed-anywhere: command not found");
}
