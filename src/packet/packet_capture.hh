// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A packet capture of a shell's traffic as its command's side sees it (mm-paths --capture): the
// packets the command sent, at the instant the ferry read them, and those it received, at the
// instant the ferry wrote them. That is what tcpdump inside the shell would record, without
// needing its rights: a server's own view of its connections (Monkey Do compares a replay by it).
//
// The file is a classic pcap (nanosecond timestamps, link type raw IPv4), as tcpdump, Wireshark
// and mm-monkey see read it; each packet's first kCaptureSnap bytes are kept (the IP and TCP
// headers and the start of the payload: an HTTP request line), its length as sent recorded.
// The format is a fixed 24-byte file header and a 16-byte header per packet, written here rather
// than through libpcap so that the setuid shells do not link a library for so little.
//
// As the link logs (link_log.hh): the ferry threads only copy the packet's head into a ring (no
// system call, no allocation); the writer, in the ferry's main thread, merges both directions
// in time order and writes in large blocks. A full ring makes its thread wait rather than lose a
// packet from the capture.
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>

#include "packet/event_ring.hh"
#include "util/clock.hh"
#include "util/file_descriptor.hh"

constexpr uint32_t kCaptureSnap = 256;

struct CaptureRecord {
  Nanos time = 0;  // CLOCK_MONOTONIC
  uint32_t wire_length = 0;
  uint32_t captured = 0;
  uint8_t bytes[kCaptureSnap];
};

// One producer (a ferry thread), one consumer (the writer).
class CaptureRing : public EventRing<CaptureRecord, 1 << 12> {
 public:
  using EventRing::EventRing;
  void push(Nanos now, std::span<const uint8_t> packet);
};

// A Ferry's queue (queues.hh) that also hands each packet to a capture ring: as it arrives (the
// direction whose packets the command sent) or as it leaves (the direction toward the command).
template <class Queue>
class CapturedQueue {
 public:
  static constexpr bool kWholeSuperPackets = Queue::kWholeSuperPackets;
  enum class At { Arrival, Departure };
  CapturedQueue(Queue& queue, CaptureRing& ring, At at) : queue_(queue), ring_(ring), at_(at) {}

  std::span<uint8_t> reserve() {
    reserved_ = queue_.reserve();
    return reserved_;
  }
  void commit(Nanos now, uint32_t length, uint32_t meta) {
    if (at_ == At::Arrival) ring_.push(now, std::span<const uint8_t>(reserved_.data(), length));
    queue_.commit(now, length, meta);
  }
  Nanos next_departure() const { return queue_.next_departure(); }
  template <class Send>
  void release(Nanos now, Send&& send) {
    if (at_ == At::Arrival) {
      queue_.release(now, send);
      return;
    }
    queue_.release(now, [&](std::span<const uint8_t> packet, uint32_t meta) {
      ring_.push(now, packet);
      send(packet, meta);
    });
  }
  bool finished() const { return queue_.finished(); }

 private:
  Queue& queue_;
  CaptureRing& ring_;
  At at_;
  std::span<uint8_t> reserved_;
};

// Both directions' rings and the file they are written to. drain() as the rings fill and
// periodically, finish() once the ferry threads have stopped.
class CaptureWriter {
 public:
  // `name` names the file in messages. A write that fails (a full disk) is a UserError saying the
  // capture is incomplete.
  CaptureWriter(FileDescriptor file, std::string name);
  int wake_fd() const { return wake_.get(); }
  CaptureRing& ring(int direction) { return *rings_[direction]; }
  void drain();
  void finish();
  uint64_t packets() const { return packets_; }

 private:
  // Writes the pending records earlier than `until`, in time order.
  void write_until(Nanos until);
  void flush();

  FileDescriptor file_, wake_;
  std::string name_;
  std::unique_ptr<CaptureRing> rings_[2];
  std::deque<CaptureRecord> pending_[2];  // drained, not yet written (each in time order)
  Nanos wall_offset_;                     // CLOCK_REALTIME less CLOCK_MONOTONIC, at the start
  std::string buffer_;
  uint64_t packets_ = 0;
};
