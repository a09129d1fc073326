// SPDX-License-Identifier: GPL-3.0-or-later
// Child processes: a spawned program's exit status, death by a signal, descriptors placed on its
// standard input/output/error, its environment (given or inherited), its own process group,
// signals reset to their defaults, a program that cannot be run; fork_child and wait_for_exit.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "expect.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {

struct Pipe {
  FileDescriptor read_end, write_end;
  Pipe() {
    int fds[2];
    check_syscall("pipe2", ::pipe2(fds, O_CLOEXEC));
    read_end = FileDescriptor(fds[0]);
    write_end = FileDescriptor(fds[1]);
  }
  // Everything written until the last write end closes (close ours first).
  std::string drain() {
    write_end.close();
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(read_end.get(), buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
    return text;
  }
};

// Runs `script` with /bin/sh, its output collected; returns {exit code, output}.
std::pair<int, std::string> run_sh(const std::string& script, SpawnOptions options = {}) {
  Pipe out;
  options.stdout_fd = out.write_end.get();
  const pid_t pid = spawn_program("/bin/sh", {"-c", script}, options);
  std::string text = out.drain();
  return {wait_for_exit(pid), text};
}

}  // namespace

TEST(ChildProcess, spawn_exit_status) {
  EXPECT_EQ(wait_for_exit(spawn_program("/bin/sh", {"-c", "exit 0"})), 0);
  EXPECT_EQ(wait_for_exit(spawn_program("/bin/sh", {"-c", "exit 3"})), 3);
  EXPECT_EQ(wait_for_exit(spawn_program("/bin/true", {})), 0);
}

TEST(ChildProcess, spawn_killed_by_a_signal_is_128_plus_its_number) {
  EXPECT_EQ(wait_for_exit(spawn_program("/bin/sh", {"-c", "kill -TERM $$"})), 128 + SIGTERM);
  const pid_t pid = spawn_program("/bin/sleep", {"30"});
  ::kill(pid, SIGKILL);
  EXPECT_EQ(wait_for_exit(pid), 128 + SIGKILL);
}

TEST(ChildProcess, spawn_places_descriptors_on_0_1_2) {
  Pipe in, err;
  write_all(in.write_end.get(), "from stdin\n");
  in.write_end.close();
  SpawnOptions options;
  options.stdin_fd = in.read_end.get();
  options.stderr_fd = err.write_end.get();
  const auto [code, out] = run_sh("cat; echo to-stderr >&2", options);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "from stdin\n");
  EXPECT_EQ(err.drain(), "to-stderr\n");
}

TEST(ChildProcess, spawn_argv0_and_arguments) {
  SpawnOptions options;
  options.argv0 = "named";
  EXPECT_EQ(run_sh("echo \"$0\"", options).second, "named\n");
  EXPECT_EQ(run_sh("printf '%s|' \"$0\" 'a b' ''").second, "/bin/sh|a b||");
}

TEST(ChildProcess, spawn_environment_given_or_inherited) {
  ::setenv("MM_CHILD_PROCESS_TEST", "inherited", 1);
  EXPECT_EQ(run_sh("echo \"${MM_CHILD_PROCESS_TEST-unset}\"").second, "inherited\n");
  SpawnOptions options;
  options.environment = std::vector<std::string>{"ONLY=this"};
  EXPECT_EQ(run_sh("echo \"${MM_CHILD_PROCESS_TEST-unset} $ONLY\"", options).second, "unset this\n");
  ::unsetenv("MM_CHILD_PROCESS_TEST");
}

TEST(ChildProcess, spawn_closes_other_descriptors_when_asked) {
  const int leaked = check_syscall("open", ::open("/dev/null", O_RDONLY));  // without close-on-exec
  const std::string probe = "[ -e /proc/self/fd/" + std::to_string(leaked) + " ] && echo open || echo closed";
  EXPECT_EQ(run_sh(probe).second, "open\n");
  SpawnOptions options;
  options.close_other_fds = true;
  EXPECT_EQ(run_sh(probe, options).second, "closed\n");
  ::close(leaked);
}

TEST(ChildProcess, spawn_process_group_and_default_signals) {
  SpawnOptions options;
  options.new_process_group = true;
  // ps is not needed: field 5 of /proc/self/stat is the process group, field 1 the pid.
  const std::string same = "set -- $(cat /proc/$$/stat); [ \"$1\" = \"$5\" ] && echo leader || echo member";
  EXPECT_EQ(run_sh(same, options).second, "leader\n");
  EXPECT_EQ(run_sh(same).second, "member\n");

  // An ignored, blocked SIGTERM in the parent: inherited unless default_signals.
  sigset_t term, previous;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, &previous);
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ignore, &old);
  const std::string blocked = "grep -E '^(SigBlk|SigIgn)' /proc/$$/status | awk '{print $2}' | tr '\\n' ' '";
  const std::string inherited = run_sh(blocked).second;
  SpawnOptions reset;
  reset.default_signals = true;
  const std::string defaults = run_sh(blocked, reset).second;
  ::sigaction(SIGTERM, &old, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // SIGTERM is signal 15: bit 14, "4000" in the masks.
  EXPECT_NE(inherited.find("4000"), std::string::npos) << inherited;
  EXPECT_EQ(defaults.find("4000"), std::string::npos) << defaults;
}

TEST(ChildProcess, spawn_a_program_that_cannot_run) {
  EXPECT_THROW_WITH(SystemError, spawn_program("/nonexistent/program", {}),
                    "cannot run /nonexistent/program: No such file or directory");
  EXPECT_THROW_WITH(SystemError, spawn_program("/dev/null", {}), "cannot run /dev/null: Permission denied");
}

TEST(ChildProcess, fork_child_exit_code_and_exceptions) {
  std::fflush(nullptr);  // the child flushes standard output: nothing of ours may be in it twice
  EXPECT_EQ(wait_for_exit(fork_child("test", [] { return 7; })), 7);
  EXPECT_EQ(wait_for_exit(fork_child("test", []() -> int { throw std::runtime_error("boom"); })), 1);
}

TEST(ChildProcess, shell_exit_code_of_wait_statuses) {
  EXPECT_EQ(shell_exit_code(0), 0);
  EXPECT_EQ(shell_exit_code(5 << 8), 5);
  EXPECT_EQ(shell_exit_code(SIGKILL), 128 + SIGKILL);
}

TEST(ChildProcess, list_children_names_living_and_unreaped_children_only) {
  std::fflush(nullptr);
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  const pid_t waiting = fork_child("test", [&] {
    ::close(gate[1]);
    char byte;
    return static_cast<int>(::read(gate[0], &byte, 1));  // 0 when the test closes the pipe
  });
  const pid_t finished = fork_child("test", [] { return 0; });
  // Not yet reaped: still a child (a zombie), its pid still its own.
  auto listed = [](pid_t pid) {
    const auto children = list_children();
    return std::find(children.begin(), children.end(), pid) != children.end();
  };
  EXPECT_TRUE(listed(waiting));
  EXPECT_TRUE(listed(finished));
  EXPECT_EQ(wait_for_exit(finished), 0);
  EXPECT_FALSE(listed(finished));
  ::close(gate[1]);
  EXPECT_EQ(wait_for_exit(waiting), 0);
  ::close(gate[0]);
  EXPECT_FALSE(listed(waiting));
}

TEST(ChildProcess, process_is_ending_tells_zombies_from_the_living) {
  std::fflush(nullptr);
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  const pid_t living = fork_child("test", [&] {
    ::close(gate[1]);
    char byte;
    return static_cast<int>(::read(gate[0], &byte, 1));
  });
  const pid_t zombie = fork_child("test", [] { return 0; });
  EXPECT_FALSE(process_is_ending(living));
  // A zombie once it has exited (wait for it without reaping it).
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(process_is_ending(zombie));
  EXPECT_EQ(wait_for_exit(zombie), 0);
  EXPECT_FALSE(process_is_ending(zombie));  // gone
  ::close(gate[1]);
  EXPECT_EQ(wait_for_exit(living), 0);
  ::close(gate[0]);
}
