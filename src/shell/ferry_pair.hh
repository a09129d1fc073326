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
#include "shell/dns_relay.hh"
#include "shell/packet_shell.hh"
#include "util/epoll.hh"
#include "util/signals.hh"
#include "util/timerfd.hh"

// Logs written off the packet path (mm-link): the main thread drains them every 100 ms and
// whenever wake_fd() becomes readable, and finishes them when the ferry stops.
class FerryLogs {
 public:
  virtual ~FerryLogs() = default;
  virtual int wake_fd() const = 0;
  virtual void drain() = 0;
  virtual void finish(Nanos end) = 0;
};

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

  auto start = [&](auto& queue, int in, int out, int index) {
    return std::thread([&queue, in, out, index, &stop, &finished, &errors] {
      try {
        Ferry ferry(in, out, queue, stop.get());
        ferry.run();
      } catch (...) {
        errors[index] = std::current_exception();
      }
      const uint64_t one = 1;
      (void)!::write(finished.get(), &one, sizeof one);
    });
  };
  std::thread up = start(uplink, tuns.inner, tuns.outer, 0);
  std::thread down = start(downlink, tuns.outer, tuns.inner, 1);
  ready();

  Epoll epoll;
  epoll.add(term.fd(), EPOLLIN, 0);
  epoll.add(finished.get(), EPOLLIN, 1);
  TimerFd log_timer;
  constexpr Nanos kLogPeriod = 100 * kNanosPerMs;
  if (logs) {
    epoll.add(logs->wake_fd(), EPOLLIN, 2);
    epoll.add(log_timer.fd(), EPOLLIN, 3);
    log_timer.arm(monotonic_now() + kLogPeriod);
  }
  std::optional<DnsRelay> dns;
  if (tuns.dns && tuns.dns->active()) {
    dns.emplace(std::move(*tuns.dns));
    dns->register_with(epoll, 16);
  }
  int threads_done = 0;
  bool terminated = false;
  while (!terminated && threads_done < 2) {
    epoll_event events[2];
    const int n = epoll.wait(events, 2, kNever);
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == 0) {
        terminated = true;
      } else if (events[i].data.u64 == 2 || events[i].data.u64 == 3) {
        uint64_t count;
        (void)!::read(logs->wake_fd(), &count, sizeof count);
        if (events[i].data.u64 == 3) {
          log_timer.fired();
          log_timer.arm(monotonic_now() + kLogPeriod);
        }
        logs->drain();
      } else if (dns && dns->owns(events[i].data.u64)) {
        dns->handle(events[i].data.u64);
      } else {
        uint64_t count = 0;
        if (::read(finished.get(), &count, sizeof count) == sizeof count) threads_done += static_cast<int>(count);
        if (errors[0] || errors[1]) terminated = true;
      }
    }
  }
  const uint64_t one = 1;
  (void)!::write(stop.get(), &one, sizeof one);
  up.join();
  down.join();
  if (logs) {
    logs->drain();
    logs->finish(monotonic_now());
  }
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return terminated ? 0 : kFerryFinished;
}
