// SPDX-License-Identifier: GPL-3.0-or-later
// Child processes: posix_spawn for other programs, fork for functions, waiting. See child_process.hh.
#include "util/child_process.hh"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {

// The attributes and file actions of one posix_spawn call, released whatever happens.
class SpawnSetup {
 public:
  SpawnSetup() {
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
};

// Pointers to the strings, then a null: an argv or envp.
std::vector<char*> null_terminated(std::vector<std::string>& words) {
  std::vector<char*> pointers;
  pointers.reserve(words.size() + 1);
  for (std::string& word : words) pointers.push_back(word.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

pid_t spawn_program(const std::filesystem::path& program, const std::vector<std::string>& arguments,
                    const SpawnOptions& options) {
  std::vector<std::string> argv_text{options.argv0.empty() ? program.string() : options.argv0};
  argv_text.insert(argv_text.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv = null_terminated(argv_text);
  std::vector<std::string> environment_text = options.environment.value_or(std::vector<std::string>{});
  std::vector<char*> envp = null_terminated(environment_text);

  SpawnSetup setup;
  // A descriptor below 3 that is not already where it goes could be overwritten by an earlier
  // placement (stdout_fd == 0, say): such ones go through a copy at 3 or above first.
  std::vector<FileDescriptor> copies;
  const int wanted[3] = {options.stdin_fd, options.stdout_fd, options.stderr_fd};
  for (int target = 0; target < 3; target++) {
    int fd = wanted[target];
    if (fd < 0) continue;
    if (fd < 3 && fd != target) {
      copies.emplace_back(check_syscall("fcntl", ::fcntl(fd, F_DUPFD_CLOEXEC, 3)));
      fd = copies.back().get();
    }
    // Also when fd == target: a dup2 onto itself clears close-on-exec.
    ::posix_spawn_file_actions_adddup2(&setup.actions, fd, target);
  }
  if (options.close_other_fds) ::posix_spawn_file_actions_addclosefrom_np(&setup.actions, 3);

  short flags = 0;
  if (options.new_process_group) {
    ::posix_spawnattr_setpgroup(&setup.attributes, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  if (options.default_signals) {
    sigset_t none, all;
    ::sigemptyset(&none);
    ::sigfillset(&all);
    ::posix_spawnattr_setsigmask(&setup.attributes, &none);
    ::posix_spawnattr_setsigdefault(&setup.attributes, &all);  // also undoes SIG_IGN, which exec keeps
    flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  }
  ::posix_spawnattr_setflags(&setup.attributes, flags);

  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, program.c_str(), &setup.actions, &setup.attributes, argv.data(),
                                  options.environment ? envp.data() : environ);
  if (error != 0) throw SystemError("cannot run " + program.string(), error);
  return pid;
}

pid_t fork_child(const std::string& program, const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork");
  if (pid > 0) return pid;
  int code = 1;
  try {
    code = body();
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << std::endl;
  }
  std::cout.flush();
  ::_exit(code);
}

int wait_for_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw SystemError("waitpid");
  }
  return shell_exit_code(status);
}

// Through syscall(): glibc 2.36's <sys/pidfd.h> declares its wrappers without C linkage.
int open_pidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U)); }

int shell_exit_code(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

std::string how_it_ended(int shell_code) {
  if (shell_code > 128 && shell_code < 128 + 65) {
    const char* name = ::sigabbrev_np(shell_code - 128);
    return "was killed by " + (name ? "SIG" + std::string(name) : "signal " + std::to_string(shell_code - 128));
  }
  return "exited with status " + std::to_string(shell_code);
}

std::vector<pid_t> list_children() {
  std::vector<pid_t> children;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream list(task.path() / "children");
    pid_t pid;
    while (list >> pid) children.push_back(pid);
  }
  if (error) throw SystemError("/proc/self/task", error.value());
  return children;
}

bool process_is_ending(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream stat_file(dir + "/stat");
  std::string stat;
  std::getline(stat_file, stat);
  const size_t name_end = stat.rfind(')');  // the name may hold spaces and parentheses
  if (name_end == std::string::npos) return false;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string state, skip;
  unsigned long flags = 0;
  fields >> state >> skip >> skip >> skip >> skip >> skip >> flags;  // state ppid pgrp sid tty tpgid flags
  constexpr unsigned long kExiting = 0x4;                            // PF_EXITING
  if (state == "Z" || state == "X" || (flags & kExiting)) return true;
  std::ifstream status(dir + "/status");
  const unsigned long long kill_bit = 1ULL << (SIGKILL - 1);
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigPnd:", 0) != 0 && line.rfind("ShdPnd:", 0) != 0) continue;
    if (std::stoull(line.substr(7), nullptr, 16) & kill_bit) return true;
  }
  return false;
}

std::optional<std::string> own_executable() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buffer || buffer[0] != '/') return std::nullopt;
  std::string path(buffer, static_cast<size_t>(n));
  // The kernel appends " (deleted)" to a file replaced since it started (a package upgrade): the
  // new one is at the same path.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path;
}

ProgramOutput run_for_output(const std::filesystem::path& program, const std::vector<std::string>& arguments,
                             size_t max_bytes) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) throw SystemError("pipe2");
  FileDescriptor read_end(ends[0]), write_end(ends[1]);
  const FileDescriptor null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  SpawnOptions options;
  options.stdin_fd = null_fd.get();
  options.stdout_fd = options.stderr_fd = write_end.get();
  options.close_other_fds = true;
  const pid_t pid = spawn_program(program, arguments, options);
  write_end = FileDescriptor();  // EOF once the program (and whatever it left running) closes it
  ProgramOutput result;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(read_end.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.text.append(buffer, std::min(static_cast<size_t>(n), max_bytes - std::min(max_bytes, result.text.size())));
  }
  result.exit_code = wait_for_exit(pid);
  return result;
}

std::optional<std::string> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string directories = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= directories.size()) {
    const size_t end = std::min(directories.find(':', start), directories.size());
    const std::string directory = end > start ? directories.substr(start, end - start) : ".";
    const std::string candidate = directory + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return std::nullopt;
}
