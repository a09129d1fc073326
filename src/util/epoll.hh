// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Minimal epoll wrapper; waits take a nanosecond timeout (epoll_pwait2) so timers are exact.
#include <sys/epoll.h>

#include <cstdint>

#include "util/clock.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

class Epoll {
 public:
  Epoll() : fd_(check_syscall("epoll_create1", ::epoll_create1(EPOLL_CLOEXEC))) {}

  void add(int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    check_syscall("epoll_ctl", ::epoll_ctl(fd_.get(), EPOLL_CTL_ADD, fd, &ev));
  }

  void modify(int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    check_syscall("epoll_ctl", ::epoll_ctl(fd_.get(), EPOLL_CTL_MOD, fd, &ev));
  }

  void remove(int fd) { (void)::epoll_ctl(fd_.get(), EPOLL_CTL_DEL, fd, nullptr); }

  // Waits until an event or until `timeout` nanoseconds have passed (kNever: forever).
  // Returns the number of events (0 on timeout or EINTR).
  int wait(epoll_event* events, int max_events, Nanos timeout) {
    timespec ts;
    timespec* tsp = nullptr;
    if (timeout != kNever) {
      ts = to_timespec(timeout < 0 ? 0 : timeout);
      tsp = &ts;
    }
    int n = ::epoll_pwait2(fd_.get(), events, max_events, tsp, nullptr);
    if (n < 0) {
      if (errno == EINTR) return 0;
      throw SystemError("epoll_pwait2");
    }
    return n;
  }

 private:
  FileDescriptor fd_;
};
