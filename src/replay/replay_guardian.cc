// SPDX-License-Identifier: GPL-3.0-or-later
// The replay daemons' guardian: a forked process that kills their process groups when the pipe
// from its parent reaches end-of-file. See replay_guardian.hh.
#include "replay/replay_guardian.hh"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "util/child_process.hh"
#include "util/exception.hh"

namespace {
// Removes `name` (a file, or a directory and what it holds, `depth` levels at most) with system
// calls only: it runs in a copy of a multi-threaded process, where allocating is not safe.
void remove_tree(int parent_fd, const char* name, int depth) {
  if (::unlinkat(parent_fd, name, 0) == 0 || (errno != EISDIR && errno != EPERM)) return;
  const int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 && depth > 0) {
    alignas(8) char buffer[2048];
    for (int pass = 0; pass < 4; pass++) {  // entries removed while listing may hide others: list again
      bool found = false;
      ::lseek(fd, 0, SEEK_SET);
      for (ssize_t n; (n = ::getdents64(fd, buffer, sizeof buffer)) > 0;) {
        for (ssize_t offset = 0; offset < n;) {
          const auto* entry = reinterpret_cast<const dirent64*>(buffer + offset);
          offset += entry->d_reclen;
          if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
          found = true;
          remove_tree(fd, entry->d_name, depth - 1);
        }
      }
      if (!found) break;
    }
  }
  if (fd >= 0) ::close(fd);
  ::unlinkat(parent_fd, name, AT_REMOVEDIR);
}
}  // namespace

ReplayGuardian::ReplayGuardian(size_t capacity, const std::filesystem::path& work_dir) {
  int fds[2];
  check_syscall("pipe2", ::pipe2(fds, O_CLOEXEC));
  FileDescriptor read_end(fds[0]);
  pipe_ = FileDescriptor(fds[1]);
  std::vector<pid_t> groups(capacity);  // allocated before fork: the child must not allocate
  const std::string dir = work_dir.string();
  const int fd = read_end.get();
  pid_ = fork_child("mm-replay", [&]() -> int { run(fd, groups.data(), groups.size(), dir.c_str()); });
}

void ReplayGuardian::run(int fd, pid_t* groups, size_t capacity, const char* work_dir) {
  // A copy of a possibly multi-threaded process: system calls only.
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);  // only SIGKILL ends it early
  ::setpgid(0, 0);                            // not in the caller's group (terminal signals, kill -PGID)
  // Hold nothing but the pipe's read end: no copy of its write end (which would prevent the
  // end-of-file), nor of anyone else's pipes or sockets.
  if (fd > 0) ::close_range(0, static_cast<unsigned>(fd) - 1, 0);
  ::close_range(static_cast<unsigned>(fd) + 1, ~0U, 0);
  size_t count = 0;
  for (;;) {
    int32_t message = 0;
    const ssize_t n = ::read(fd, &message, sizeof message);  // whole messages: writes of 4 bytes are atomic
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof message) break;  // end-of-file: the parent died
    if (message == 0) ::_exit(0);    // disarmed
    if (message > 0 && count < capacity) groups[count++] = message;
    for (size_t i = 0; message < 0 && i < count; i++) {
      if (groups[i] == -message) groups[i] = groups[--count];
    }
  }
  for (size_t i = 0; i < count; i++) ::kill(-groups[i], SIGKILL);
  remove_tree(AT_FDCWD, work_dir, 4);
  ::_exit(0);
}

void ReplayGuardian::send(int32_t message) {
  const std::lock_guard<std::mutex> guard(mutex_);  // spawning threads share it
  if (!pipe_.valid()) return;
  try {
    write_all(pipe_.get(), std::string_view(reinterpret_cast<const char*>(&message), sizeof message));
  } catch (const SystemError&) {
    pipe_.close();  // the guardian died (someone killed it): nothing more to tell it
  }
}

ReplayGuardian::~ReplayGuardian() {
  send(0);
  pipe_.close();
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}
