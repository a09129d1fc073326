#pragma once
// The replay daemons' guardian: a forked process that SIGKILLs the daemons' process groups if
// this process dies without stopping them (a crash, SIGKILL). Apache's workers outlive their
// parent, so without it they would keep running in the namespace. It learns each group over a
// pipe and acts when the pipe reaches end-of-file, which only this process's death (or its
// disarming) causes.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "util/file_descriptor.hh"

class ReplayGuardian {
 public:
  // Forks the guardian, with room for `capacity` process groups.
  explicit ReplayGuardian(size_t capacity);
  ~ReplayGuardian();  // disarms it and reaps it
  ReplayGuardian(const ReplayGuardian&) = delete;
  ReplayGuardian& operator=(const ReplayGuardian&) = delete;

  // Thread-safe, both.
  void watch(pid_t group) { send(group); }
  void forget(pid_t group) { send(-group); }  // before reaping the leader: its id may be reused after

 private:
  void send(int32_t message);
  [[noreturn]] static void run(int fd, pid_t* groups, size_t capacity);

  std::mutex mutex_;
  FileDescriptor pipe_;
  pid_t pid_ = -1;
};
