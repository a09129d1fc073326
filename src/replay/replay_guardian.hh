// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The replay daemons' guardian: a forked process that SIGKILLs the daemons' process groups if
// this process dies without stopping them (a crash, SIGKILL), then removes the replay's work
// directory (configurations, certificates, logs, the matcher's socket), which the dead process
// can no longer remove. Apache's workers outlive their parent, so without it they would keep
// running in the namespace. It learns each group over a pipe and acts when the pipe reaches
// end-of-file, which only this process's death (or its disarming) causes.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>

#include "util/file_descriptor.hh"

class ReplayGuardian {
 public:
  // Forks the guardian, with room for `capacity` process groups; `work_dir` is removed (with
  // everything in it, a few levels deep) if this process dies.
  ReplayGuardian(size_t capacity, const std::filesystem::path& work_dir);
  ~ReplayGuardian();  // disarms it and reaps it
  ReplayGuardian(const ReplayGuardian&) = delete;
  ReplayGuardian& operator=(const ReplayGuardian&) = delete;

  // Thread-safe, both.
  void watch(pid_t group) { send(group); }
  void forget(pid_t group) { send(-group); }  // before reaping the leader: its id may be reused after

 private:
  void send(int32_t message);
  [[noreturn]] static void run(int fd, pid_t* groups, size_t capacity, const char* work_dir);

  std::mutex mutex_;
  FileDescriptor pipe_;
  pid_t pid_ = -1;
};
