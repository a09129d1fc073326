// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Runs both directions of a shell in the ferry process: one thread per direction, the main
// thread waiting for SIGTERM from the supervisor (other signals are the supervisor's business).
#include <sys/eventfd.h>
#include <sys/prctl.h>

#include <csignal>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

#include "packet/ferry.hh"
#include "packet/queues.hh"
#include "shell/dns_relay.hh"
#include "shell/packet_shell.hh"
#include "util/epoll.hh"
#include "util/signals.hh"
#include "util/timerfd.hh"

// Logs and live meters fed off the packet path (mm-link, mm-meter): the main thread drains
// them every period() and whenever wake_fd() becomes readable, and finishes them when the ferry
// stops.
class FerryLogs {
 public:
  virtual ~FerryLogs() = default;
  virtual Nanos period() const { return 100 * kNanosPerMs; }
  virtual int wake_fd() const = 0;
  virtual void drain() = 0;
  virtual void finish(Nanos end) = 0;
};

// What the main thread of the ferry process waits on: SIGTERM, a direction ending, the logs'
// wake-ups and timer, and the DNS relay's sockets (the relay lives as long as this object).
class FerryMainLoop {
 public:
  FerryMainLoop(const FerryEndpoints& tuns, const SignalFd& term, int finished, FerryLogs* logs)
      : finished_(finished), logs_(logs) {
    epoll_.add(term.fd(), EPOLLIN, kTerm);
    epoll_.add(finished, EPOLLIN, kFinished);
    if (logs_) {
      epoll_.add(logs_->wake_fd(), EPOLLIN, kLogWake);
      epoll_.add(log_timer_.fd(), EPOLLIN, kLogTimer);
      log_timer_.arm(monotonic_now() + logs_->period());
    }
    if (tuns.dns && tuns.dns->active()) {
      dns_.emplace(std::move(*tuns.dns));
      dns_->register_with(epoll_, kDnsFirst);
    }
  }

  // Returns true if SIGTERM ended the wait, false if both directions ended by themselves (or
  // one failed: errors[] holds its exception).
  bool run(const std::exception_ptr (&errors)[2]) {
    int threads_done = 0;
    bool terminated = false;
    while (!terminated && threads_done < 2) {
      epoll_event events[2];
      const int n = epoll_.wait(events, 2, kNever);
      for (int i = 0; i < n; i++) {
        const uint64_t source = events[i].data.u64;
        if (source == kTerm) {
          terminated = true;
        } else if (source == kLogWake || source == kLogTimer) {
          // A log that cannot be written (a full disk) ends the ferry, after its threads.
          try {
            drain_logs(source == kLogTimer);
          } catch (...) {
            log_error_ = std::current_exception();
            terminated = true;
          }
        } else if (dns_ && dns_->owns(source)) {
          dns_->handle(source);
        } else {
          uint64_t count = 0;
          if (::read(finished_, &count, sizeof count) == sizeof count) threads_done += static_cast<int>(count);
          if (errors[0] || errors[1]) terminated = true;
        }
      }
    }
    return terminated;
  }
  // What draining the logs threw, if anything: rethrown once the ferry's threads have stopped.
  std::exception_ptr log_error() const { return log_error_; }

 private:
  enum : uint64_t { kTerm = 0, kFinished = 1, kLogWake = 2, kLogTimer = 3, kDnsFirst = 16 };

  void drain_logs(bool timer_fired) {
    uint64_t count;
    (void)!::read(logs_->wake_fd(), &count, sizeof count);
    if (timer_fired) {
      log_timer_.fired();
      log_timer_.arm(monotonic_now() + logs_->period());
    }
    logs_->drain();
  }

  int finished_;
  FerryLogs* logs_;
  std::exception_ptr log_error_;
  Epoll epoll_;
  TimerFd log_timer_;
  std::optional<DnsRelay> dns_;
};

// Starts one direction's ferry in a new thread; its exception goes to `error`, and its end is
// counted on the eventfd `finished`.
template <class Queue>
std::thread start_ferry_thread(Queue& queue, int in, int out, bool offload, int stop, int finished,
                               std::exception_ptr& error) {
  return std::thread([&queue, in, out, offload, stop, finished, &error] {
    try {
      Ferry ferry(in, out, queue, stop, offload);
      ferry.run();
    } catch (...) {
      error = std::current_exception();
    }
    const uint64_t one = 1;
    (void)!::write(finished, &one, sizeof one);
  });
}

template <class Uplink, class Downlink>
int run_ferry_pair(const FerryEndpoints& tuns, Uplink& uplink, Downlink& downlink, const std::function<void()>& ready,
                   FerryLogs* logs = nullptr) {
  ::prctl(PR_SET_TIMERSLACK, 1UL);                                 // wake at the due nanosecond, not up to 50 us later
  for (int s : {SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(s, SIG_IGN);  // keep carrying packets through job control
  SignalSet handled{SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  handled.block();  // inherited by both threads; only SIGTERM is read, the others are ignored
  SignalFd term(SignalSet{SIGTERM});

  FileDescriptor stop(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)));
  FileDescriptor finished(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)));
  std::exception_ptr errors[2];
  std::thread up =
      start_ferry_thread(uplink, tuns.inner, tuns.outer, tuns.offload, stop.get(), finished.get(), errors[0]);
  std::thread down =
      start_ferry_thread(downlink, tuns.outer, tuns.inner, tuns.offload, stop.get(), finished.get(), errors[1]);
  ready();

  FerryMainLoop main_loop(tuns, term, finished.get(), logs);
  const bool terminated = main_loop.run(errors);
  const uint64_t one = 1;
  (void)!::write(stop.get(), &one, sizeof one);
  up.join();
  down.join();
  if (main_loop.log_error()) std::rethrow_exception(main_loop.log_error());
  if (logs) {
    logs->drain();
    logs->finish(monotonic_now());
  }
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return terminated ? 0 : kFerryFinished;
}

// The ferry of a shell whose work is a proxy beside a pair that adds nothing (mm-record's
// recording proxy, mm-cumulus-local's Local Proxy): `proxy` (run() until stop()) runs on a thread
// of its own while the pair carries the packets with no delay, and is stopped and joined however
// the pair ends. Returns the pair's status.
template <class Proxy>
int run_ferry_pair_beside(const FerryEndpoints& tuns, Proxy& proxy, const std::function<void()>& ready) {
  std::thread proxy_thread([&proxy] { proxy.run(); });
  DelayQueue uplink(0), downlink(0);
  int status = 1;
  try {
    status = run_ferry_pair(tuns, uplink, downlink, ready);
  } catch (...) {
    proxy.stop();
    proxy_thread.join();
    throw;
  }
  proxy.stop();
  proxy_thread.join();
  return status;
}
