// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The ferry moves packets between the two TUN devices of a shell, one thread per direction.
// Per packet: one read() straight into the queue's storage, one write(); per wake-up one
// epoll wait, plus one timerfd_settime() when the queue's next departure changes. Nothing
// allocates, logs or sleeps in between, so a packet leaves within microseconds of its due time
// (or, in a dense backlog, with its batch: DepartureBatch).
//
// With offloads (devices opened with IFF_VNET_HDR, see packet/offload.hh) a read may bring a
// TCP or UDP super-packet of up to 64 KiB: a queue that decides per packet is given its wire
// segments (read aside, cut into its ring), and the TCP segments that leave together are merged
// again on the way out.
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "packet/offload.hh"
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

// Departures closer than kWindow to the last packets sent wait to leave with those due by then:
// a backlogged fast link (10 Gbit/s: a packet every 1.2 us) then wakes its ferry, and writes,
// once per batch of up to kWindow (about 30 KB at 10 Gbit/s), not once per packet or two (each
// write costs the receiving stack about as much as a whole batch: a 10 Gbit/s uplink carried 75 %
// of its rate so, 98 % batched). The link's schedule is untouched (each departure is computed as
// before; only its write waits), and a departure after a pause of kWindow leaves at its time.
class DepartureBatch {
 public:
  static constexpr Nanos kWindow = 25'000;
  // When to release a departure due at `due`.
  Nanos release_at(Nanos due) const {
    return (due != kNever && due < last_sent_ + kWindow) ? last_sent_ + kWindow : due;
  }
  void sent(Nanos now) { last_sent_ = now; }

 private:
  Nanos last_sent_ = -kWindow;
};

// Moves packets read from `in` through `queue` to `out` until `stop` becomes readable or the
// queue is finished. Runs in the calling thread. `offload`: both devices carry a virtio-net
// header before each packet.
template <class Queue>
class Ferry {
 public:
  Ferry(int in, int out, Queue& queue, int stop, bool offload = false)
      : in_(in), out_(out), queue_(queue), stop_(stop), offload_(offload), coalescer_(out) {
    if (offload_ && !Queue::kWholeSuperPackets) super_packet_.reset(new uint8_t[kSuperPacketBytes]);
  }

  void run() {
    Epoll epoll;
    TimerFd timer;
    epoll.add(in_, EPOLLIN, kInput);
    epoll.add(stop_, EPOLLIN, kStop);
    epoll.add(timer.fd(), EPOLLIN, kTimer);
    epoll_event events[3];
    for (;;) {
      const Nanos due = batch_.release_at(queue_.next_departure());
      const Nanos before = monotonic_now();
      // Behind (a departure is already due, as under a backlog at gigabit rates): no timer to
      // program (each costs a VM exit here) and no wake-up to wait for, only a look at the input.
      // (Waiting awake for departures a little ahead was tried: on 2 cores the spinning ferry
      // took the CPU its own traffic's senders and receivers needed, and carried less.)
      const bool behind = due <= before;
      const Nanos wake = (due == kNever || behind) ? kNever : latency_.wake_for(due, before);
      if (!behind) timer.arm(wake);
      const int n = epoll.wait(events, 3, behind ? 0 : kNever);
      // No event from a wait without a timeout: interrupted (a stopped ferry continued, with
      // SIGCONT): whatever came meanwhile is read as after any late wake-up.
      bool readable = n == 0 && !behind, woken = false;
      for (int i = 0; i < n; i++) {
        switch (events[i].data.u64) {
          case kStop:
            return;
          case kInput:
            readable = true;
            break;
          case kTimer:
            timer.fired();
            woken = !behind;  // an earlier arming's expiry, while behind, teaches nothing
            break;
        }
      }
      // When the ferry meant to be running again: at its timer, or at once when behind. What it
      // reads after running late (a busy machine's scheduler kept it off the CPU) may have been
      // waiting since then (see credit_floor).
      const Nanos intended = behind ? before : wake;
      if (woken) {
        Nanos now = monotonic_now();
        latency_.observe(now - wake);
        if (readable) read_available(credit_floor(intended, now));
        while (now < due && due - now <= latency_.margin() + kNanosPerMs / 10) now = monotonic_now();
      } else if (readable) {
        read_available(credit_floor(intended, monotonic_now()));
      }
      release(monotonic_now());
      if (queue_.finished()) return;
    }
  }

 private:
  enum : uint64_t { kInput, kStop, kTimer };
  static constexpr int kReadBatch = 64;  // bound the time between two release() calls
  static constexpr bool kCredits = requires { requires Queue::kCreditsLateReads; };
  static constexpr Nanos kMaxCredit = 20 * kNanosPerMs;
  static constexpr size_t kSuperPacketBytes = 65536;

  // The arrival time given to packets read from `now` on, the ferry having meant to run at
  // `intended`: for a queue that credits late reads (a link's capacity), when the ferry should
  // have looked (no earlier than its last release, nor kMaxCredit ago), so that the link's
  // opportunities that the ferry's own lateness let pass are not lost to packets that were
  // waiting for it; a packet still leaves no earlier than it is read. kNever: each packet's
  // own read time.
  Nanos credit_floor(Nanos intended, Nanos now) const {
    if constexpr (kCredits) {
      if (intended < now) return std::max({intended, last_release_, now - kMaxCredit});
    }
    return kNever;
  }

  void read_available(Nanos floor) {
    for (int i = 0; i < kReadBatch; i++) {
      // A queue of wire packets (segments cut from super-packets) has every packet read aside,
      // then copied in; the others read straight into the queue.
      const std::span<uint8_t> space =
          super_packet_ ? std::span<uint8_t>(super_packet_.get(), kSuperPacketBytes) : queue_.reserve();
      VnetHeader header;
      iovec parts[2] = {{&header, sizeof header}, {space.data(), space.size()}};
      const ssize_t n = offload_ ? ::readv(in_, parts, 2) : ::read(in_, space.data(), space.size());
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN) throw SystemError("reading from TUN device");
        return;
      }
      const Nanos read_time = monotonic_now();
      const Nanos now = kCredits ? std::max(std::min(floor, read_time), last_release_) : read_time;
      const size_t length =
          offload_ ? static_cast<size_t>(n) - std::min(static_cast<size_t>(n), sizeof header) : static_cast<size_t>(n);
      if (length == 0 || (space[0] >> 4) != 4) continue;  // IPv6 or other chatter: not carried
      release(now);  // what was due before this packet arrived goes first (and uses the link first)
      if (offload_) {
        commit_offloaded(now, space.first(length), header);
      } else {
        queue_.commit(now, static_cast<uint32_t>(length), 0);
      }
      release(now);  // a packet due at once (no delay) leaves before the next read
    }
  }

  void commit_offloaded(Nanos now, std::span<uint8_t> packet, const VnetHeader& header) {
    const std::optional<uint32_t> meta = packet_meta::from_header(header);
    if (!meta) {
      // Not something the kernel hands over for the offloads we enabled: settle its checksum
      // here and carry it plain (a super-packet of another kind cannot be: dropped).
      if (header.gso_type != vnet::kGsoNone) return;
      if (header.flags & vnet::kNeedsChecksum) complete_checksum(packet, header.csum_start, header.csum_offset);
      commit(now, packet, 0);
      return;
    }
    if (Queue::kWholeSuperPackets || !(*meta & packet_meta::kSuper)) {
      commit(now, packet, *meta);
      return;
    }
    if (!segments_.parse(packet, header.gso_size)) return;
    for (uint32_t i = 0; i < segments_.count(); i++) {
      auto space = queue_.reserve();
      queue_.commit(now, segments_.write(i, space.data()), segments_.meta());
    }
  }

  // Queues `packet`, read into the queue's reservation or aside.
  void commit(Nanos now, std::span<const uint8_t> packet, uint32_t meta) {
    if (super_packet_) std::memcpy(queue_.reserve().data(), packet.data(), packet.size());
    queue_.commit(now, static_cast<uint32_t>(packet.size()), meta);
  }

  void release(Nanos now) {
    last_release_ = now;
    if (offload_) {
      queue_.release(now, [this, now](std::span<const uint8_t> packet, uint32_t meta) {
        batch_.sent(now);
        coalescer_.send(packet, meta);
      });
      coalescer_.flush();
      return;
    }
    // A packet the kernel refuses (device going away, no memory) is dropped, as a link would.
    queue_.release(now, [this, now](std::span<const uint8_t> packet, uint32_t) {
      batch_.sent(now);
      (void)!::write(out_, packet.data(), packet.size());
    });
  }

  int in_, out_;
  Queue& queue_;
  int stop_;
  bool offload_;
  WakeLatency latency_;
  DepartureBatch batch_;
  Coalescer coalescer_;
  Segments segments_;
  std::unique_ptr<uint8_t[]> super_packet_;  // where packets are read (queues of wire packets)
  Nanos last_release_ = 0;                   // the time release() was last called with
};
