// SPDX-License-Identifier: GPL-3.0-or-later
// One replay daemon: started in a process group of its own with a fixed environment and its output
// in a log, how it ended, stopping its whole group; reading logs back without start-up chatter.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "expect.hh"
#include "replay/replay_daemon.hh"
#include "replay/replay_guardian.hh"
#include "replay_fixture.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

using namespace replay_test;

namespace {

// Waits (up to 5 s) for the daemon to end.
bool ends(ReplayDaemon& daemon) {
  for (int i = 0; i < 500; i++) {
    if (daemon.ended()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Has the process ended (gone, or a zombie nobody has reaped yet)?
bool ended(pid_t pid) {
  std::string stat;
  try {
    stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const SystemError&) {
    return true;
  }
  const size_t close = stat.rfind(')');
  return close == std::string::npos || stat.compare(close + 2, 1, "Z") == 0;
}

}  // namespace

TEST(ReplayDaemon, output_environment_and_exit_status) {
  TempDir dir;
  ReplayGuardian guardian(4, dir.path);
  ::setenv("MM_DAEMON_TEST", "leaked", 1);
  {
    ReplayDaemon daemon("/bin/sh",
                        {"-c",
                         "echo out; echo err >&2; echo \"env:${MM_DAEMON_TEST-none} $PATH\"; "
                         "[ \"$(cut -d' ' -f5 /proc/$$/stat)\" = $$ ] && echo leader; exit 3"},
                        dir.path / "d.log", guardian);
    ASSERT_TRUE(ends(daemon));
    EXPECT_EQ(daemon.how_it_ended(), "exited with status 3");
  }
  ::unsetenv("MM_DAEMON_TEST");
  EXPECT_EQ(read_small_file((dir.path / "d.log").string()),
            "out\nerr\nenv:none /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nleader\n");
}

TEST(ReplayDaemon, killed_and_its_group_stopped) {
  TempDir dir;
  ReplayGuardian guardian(4, dir.path);
  const fs::path child_pid = dir.path / "child.pid";
  // Written aside and renamed: the file exists only once it holds the whole pid (the shell
  // creates a redirection's file before echo writes to it).
  ReplayDaemon daemon("/bin/sh",
                      {"-c", "sleep 30 & echo $! > " + child_pid.string() + ".new; mv " + child_pid.string() + ".new " +
                                 child_pid.string() + "; wait"},
                      dir.path / "d.log", guardian);
  for (int i = 0; i < 500 && !fs::exists(child_pid); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const pid_t worker = std::stoi(read_small_file(child_pid.string()));
  EXPECT_FALSE(daemon.ended());
  daemon.kill_and_reap();
  EXPECT_TRUE(daemon.ended());
  EXPECT_EQ(daemon.how_it_ended(), "was killed by SIGKILL");
  // The worker went with the group (not our child: it may be left a zombie for a while).
  bool gone = false;
  for (int i = 0; i < 500 && !gone; i++) {
    gone = ended(worker);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
  daemon.kill_and_reap();  // again: nothing happens
}

TEST(ReplayDaemon, a_program_that_cannot_run) {
  TempDir dir;
  ReplayGuardian guardian(1, dir.path);
  EXPECT_THROW_WITH(UserError, ReplayDaemon("/nonexistent/httpd", {}, dir.path / "d.log", guardian),
                    "cannot run /nonexistent/httpd: No such file or directory");
}

TEST(ReplayDaemon, log_lines_without_chatter) {
  TempDir dir;
  const fs::path log = dir.path / "apache.log";
  write_file(log,
             "[Sun Nov 22 07:08:16.222877 2026] [mpm_event:notice] [pid 9:tid 9] AH00489: Apache/2.4 configured\n"
             "\n"
             "[Sun Nov 22 07:08:16.222877 2026] [core:emerg] [pid 9:tid 9] (98)Address already in use: make_sock\n"
             "dnsmasq[5]: started, version 2.89\n"
             "AH00015: Unable to open logs\n");
  EXPECT_EQ(daemon_log_lines(log, 10).size(), size_t{2});
  EXPECT_EQ(daemon_log_lines(log, 1), std::vector<std::string>{"AH00015: Unable to open logs"});
  EXPECT_EQ(quoted_daemon_log(log),
            "\n  [core:emerg] (98)Address already in use: make_sock\n  AH00015: Unable to open logs");
  EXPECT_EQ(quoted_daemon_log(dir.path / "none.log"),
            "\n  (it wrote nothing to " + (dir.path / "none.log").string() + ")");
  EXPECT_TRUE(is_log_chatter("  \r"));
  EXPECT_TRUE(is_log_chatter("dnsmasq[7]: exiting on receipt of SIGTERM"));
  EXPECT_FALSE(is_log_chatter("dnsmasq[7]: failed to create listening socket"));
  EXPECT_EQ(without_apache_prefix("[Sun Nov 22 07:08:16.222877 2026] [ssl:warn] [pid 1] AH01909: x"),
            "[ssl:warn] AH01909: x");
  EXPECT_EQ(without_apache_prefix("[short] kept"), "[short] kept");
}

TEST(ReplayDaemon, files_the_daemons_read) {
  TempDir dir;
  write_daemon_file(dir.path / "f", "first, longer");
  write_daemon_file(dir.path / "f", "second");
  EXPECT_EQ(read_small_file((dir.path / "f").string()), "second");
  EXPECT_EQ(fs::status(dir.path / "f").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_GE(open_high("/dev/null", O_RDONLY).get(), 3);
}
