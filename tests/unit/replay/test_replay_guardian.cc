// SPDX-License-Identifier: GPL-3.0-or-later
// The replay daemons' guardian: when the process that started it dies without disarming it, the
// process groups it was told about are killed and the work directory removed; disarmed, it
// leaves them alone; forgotten groups are spared.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "expect.hh"
#include "replay/replay_guardian.hh"
#include "temp_files.hh"
#include "util/child_process.hh"

namespace {

// A process group of its own running `sleep 30` (a child of this process).
pid_t sleeping_group() {
  SpawnOptions options;
  options.new_process_group = true;
  return spawn_program("/bin/sleep", {"30"}, options);
}

// Has the group's leader (our child) been killed within 5 s? Reaps it if so.
bool killed_soon(pid_t pid) {
  for (int i = 0; i < 500; i++) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// In a forked process (which plays mm-replay): a guardian told about `watched` and `forgotten`
// (then told to forget it); the process then dies without disarming it, or disarms it first.
void guard_then_end(pid_t watched, pid_t forgotten, bool disarm, const std::filesystem::path& work) {
  std::fflush(nullptr);
  const pid_t player = fork_child("test", [&] {
    auto* guardian = new ReplayGuardian(4, work);
    guardian->watch(watched);
    guardian->watch(forgotten);
    guardian->forget(forgotten);
    if (disarm) delete guardian;
    ::_exit(0);  // without disarming, unless done above: as if killed
    return 0;
  });
  EXPECT_EQ(wait_for_exit(player), 0);
}

}  // namespace

TEST(ReplayGuardian, kills_the_groups_when_its_parent_dies) {
  TempDir tmp;
  // A work directory as mm-replay's: files, and a directory of files.
  const std::filesystem::path work = tmp.path / "mm-replay.work";
  std::filesystem::create_directories(work / "sub" / "deeper");
  for (const char* name : {"apache.conf", "sub/cert.pem", "sub/deeper/log", "matcher.sock"})
    std::ofstream(work / name) << name;
  const pid_t watched = sleeping_group(), forgotten = sleeping_group();
  guard_then_end(watched, forgotten, false, work);
  EXPECT_TRUE(killed_soon(watched));
  bool removed = false;
  for (int i = 0; i < 500 && !removed; i++) {
    removed = !std::filesystem::exists(work);
    if (!removed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(removed) << work << " is still there";
  EXPECT_EQ(::waitpid(forgotten, nullptr, WNOHANG), 0);  // still running
  ::kill(-forgotten, SIGKILL);
  EXPECT_TRUE(killed_soon(forgotten));
}

TEST(ReplayGuardian, disarmed_leaves_them_alone) {
  TempDir tmp;
  const pid_t watched = sleeping_group(), other = sleeping_group();
  guard_then_end(watched, other, true, tmp.path);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(::waitpid(watched, nullptr, WNOHANG), 0);
  ::kill(-watched, SIGKILL);
  ::kill(-other, SIGKILL);
  EXPECT_TRUE(killed_soon(watched));
  EXPECT_TRUE(killed_soon(other));
}
