// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Signals delivered as readable events (signalfd), so that event loops handle them in order.
#include <signal.h>
#include <sys/signalfd.h>

#include <initializer_list>

#include "util/file_descriptor.hh"

class SignalSet {
 public:
  SignalSet(std::initializer_list<int> signals);
  const sigset_t& get() const { return set_; }
  // Blocks these signals in the calling thread; returns the previous mask.
  sigset_t block() const;

 private:
  sigset_t set_;
};

class SignalFd {
 public:
  explicit SignalFd(const SignalSet& signals);
  int fd() const { return fd_.get(); }
  // Reads one pending signal (blocking unless the fd is polled first).
  signalfd_siginfo read_signal() const;

 private:
  FileDescriptor fd_;
};
