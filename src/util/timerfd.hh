// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An absolute CLOCK_MONOTONIC timer as a file descriptor. Unlike an epoll timeout, which the
// kernel lets fire late by 0.1 % of its length, a timerfd fires at its nanosecond.
#include <sys/timerfd.h>

#include "util/clock.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

class TimerFd {
 public:
  TimerFd() : fd_(check_syscall("timerfd_create", ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK))) {}
  int fd() const { return fd_.get(); }

  // Fires once at `when` (kNever: disarms). Re-arming also clears a pending expiry.
  void arm(Nanos when) {
    if (when == armed_) return;
    itimerspec spec{};
    if (when != kNever) spec.it_value = to_timespec(when <= 0 ? 1 : when);
    check_syscall("timerfd_settime", ::timerfd_settime(fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr));
    armed_ = when;
  }
  // After it fired: it no longer counts as armed, so the next arm() always programs it.
  void fired() { armed_ = kNever - 1; }

 private:
  FileDescriptor fd_;
  Nanos armed_ = kNever;
};
