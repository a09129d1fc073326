#pragma once
// The ferry moves packets between the two TUN devices of a shell, one thread per direction.
// Per packet: one read() straight into the queue's storage, one write(); per wake-up one
// epoll wait, plus one timerfd_settime() when the queue's next departure changes. Nothing
// allocates, logs or sleeps in between, so a packet leaves within microseconds of its due time.
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <thread>

#include "util/clock.hh"
#include "util/epoll.hh"
#include "util/exception.hh"
#include "util/timerfd.hh"

// How late a timer wake-up is, learned as the ferry runs (a VM's idle CPU takes tens of
// microseconds to wake). After an idle gap the ferry asks to be woken this much before a
// departure and waits out the rest itself, so the packet leaves on time. The wait is short and
// bounded, and never happens under sustained load (departures closer together than a few
// margins are simply timed exactly), so an idle ferry still uses no CPU.
class WakeLatency {
 public:
  Nanos margin() const { return margin_; }
  void observe(Nanos lateness) {
    lateness = std::clamp<Nanos>(lateness, 0, kMaximum);
    average_ += (lateness - average_) / 8;
    margin_ = std::min<Nanos>(average_ + kJitter, kMaximum);
  }
  // Where to set the timer for a departure due at `due`, it being `now`.
  Nanos wake_for(Nanos due, Nanos now) const {
    return (due != kNever && due - now > kGapFactor * margin_) ? due - margin_ : due;
  }

 private:
  static constexpr Nanos kMaximum = 100'000;  // never wait more than 100 us awake
  static constexpr Nanos kJitter = 5'000;
  static constexpr Nanos kGapFactor = 4;
  Nanos average_ = 20'000;
  Nanos margin_ = 25'000;
};

// Moves packets read from `in` through `queue` to `out` until `stop` becomes readable or the
// queue is finished. Runs in the calling thread.
template <class Queue>
class Ferry {
 public:
  Ferry(int in, int out, Queue& queue, int stop) : in_(in), out_(out), queue_(queue), stop_(stop) {}

  void run() {
    Epoll epoll;
    TimerFd timer;
    epoll.add(in_, EPOLLIN, kInput);
    epoll.add(stop_, EPOLLIN, kStop);
    epoll.add(timer.fd(), EPOLLIN, kTimer);
    epoll_event events[3];
    for (;;) {
      const Nanos due = queue_.next_departure();
      const Nanos wake = due == kNever ? kNever : latency_.wake_for(due, monotonic_now());
      timer.arm(wake);
      const int n = epoll.wait(events, 3, kNever);
      bool readable = false, woken = false;
      for (int i = 0; i < n; i++) {
        switch (events[i].data.u64) {
          case kStop:
            return;
          case kInput:
            readable = true;
            break;
          case kTimer:
            timer.fired();
            woken = true;
            break;
        }
      }
      if (woken) {
        Nanos now = monotonic_now();
        latency_.observe(now - wake);
        if (readable) read_available();
        while (now < due && due - now <= latency_.margin() + kNanosPerMs / 10) now = monotonic_now();
      } else if (readable) {
        read_available();
      }
      release(monotonic_now());
      if (queue_.finished()) return;
    }
  }

 private:
  enum : uint64_t { kInput, kStop, kTimer };
  static constexpr int kReadBatch = 64;  // bound the time between two release() calls

  void read_available() {
    for (int i = 0; i < kReadBatch; i++) {
      auto space = queue_.reserve();
      const ssize_t n = ::read(in_, space.data(), space.size());
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN) throw SystemError("reading from TUN device");
        return;
      }
      const Nanos now = monotonic_now();
      if ((space[0] >> 4) != 4) continue;  // IPv6 or other chatter: not carried
      release(now);  // what was due before this packet arrived goes first (and uses the link first)
      queue_.commit(now, static_cast<uint32_t>(n));
      release(now);  // a packet due at once (no delay) leaves before the next read
    }
  }

  void release(Nanos now) {
    // A packet the kernel refuses (device going away, no memory) is dropped, as a link would.
    queue_.release(now,
                   [this](std::span<const uint8_t> packet) { (void)!::write(out_, packet.data(), packet.size()); });
  }

  int in_, out_;
  Queue& queue_;
  int stop_;
  WakeLatency latency_;
};
