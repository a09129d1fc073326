// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a ferry thread hands to a writer in the ferry's main thread (link logs, meters, captures):
// one producer, one consumer, fixed-size records in a ring, no system call and no allocation on
// the producer's side except to wake the writer once the ring is half full. A full ring makes
// the producer wait for the writer (a slow disk) rather than lose a record.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>

template <class Record, uint64_t Capacity>
class EventRing {
 public:
  static_assert(Capacity >= 2 && (Capacity & (Capacity - 1)) == 0, "a power of two");
  static constexpr uint64_t kCapacity = Capacity;
  explicit EventRing(int wake_fd) : wake_fd_(wake_fd) {}

  // The next record's slot, once there is room; publish() hands it over.
  Record& claim() {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    uint64_t queued = tail - head_.load(std::memory_order_acquire);
    if (queued >= Capacity / 2) {
      const uint64_t one = 1;
      if (queued == Capacity / 2) (void)!::write(wake_fd_, &one, sizeof one);
      while (queued >= Capacity) {
        (void)!::write(wake_fd_, &one, sizeof one);
        const timespec pause{0, 50'000};
        ::nanosleep(&pause, nullptr);
        queued = tail - head_.load(std::memory_order_acquire);
      }
    }
    return records_[tail & (Capacity - 1)];
  }
  void publish() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // Hands every published record to `take`, oldest first.
  template <class Take>
  void drain(Take&& take) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    for (uint64_t i = head; i != tail; i++) take(records_[i & (Capacity - 1)]);
    head_.store(tail, std::memory_order_release);
  }

 private:
  std::unique_ptr<Record[]> records_{new Record[Capacity]};
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  int wake_fd_;  // eventfd: tells the writer to drain before the ring fills
};
