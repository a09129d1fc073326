// SPDX-License-Identifier: GPL-3.0-or-later
// Signal sets and signalfd (see signals.hh).
#include "util/signals.hh"

#include <pthread.h>
#include <unistd.h>

#include "util/exception.hh"

SignalSet::SignalSet(std::initializer_list<int> signals) {
  sigemptyset(&set_);
  for (int s : signals) sigaddset(&set_, s);
}

sigset_t SignalSet::block() const {
  sigset_t old;
  int err = pthread_sigmask(SIG_BLOCK, &set_, &old);
  if (err != 0) throw SystemError("pthread_sigmask", err);
  return old;
}

SignalFd::SignalFd(const SignalSet& signals)
    : fd_(check_syscall("signalfd", ::signalfd(-1, &signals.get(), SFD_CLOEXEC))) {}

signalfd_siginfo SignalFd::read_signal() const {
  signalfd_siginfo info{};
  for (;;) {
    ssize_t n = ::read(fd_.get(), &info, sizeof info);
    if (n == sizeof info) return info;
    if (n < 0 && errno == EINTR) continue;
    throw SystemError("reading signalfd");
  }
}
