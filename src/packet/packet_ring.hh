// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A FIFO of variable-length packets stored back to back in one buffer. The ferry reads each
// packet from the kernel straight into reserve()d space, so queueing costs no copy and no
// allocation; the buffer only grows (by doubling) when a backlog outgrows it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "util/clock.hh"

class PacketRing {
 public:
  struct Record {
    Nanos arrival;    // when the ferry read the packet
    uint32_t length;  // bytes of packet data that follow
    uint32_t meta;    // the packet's offload state (packet/offload.hh); 0 for a plain packet
  };
  static_assert(sizeof(Record) == 16);

  // max_packet bounds what one reserve() must hold (64 KiB covers any TUN packet, offloads included).
  explicit PacketRing(size_t initial_bytes = 256 * 1024, size_t max_packet = 65536);

  // Writable space for one packet at the tail; valid until the next commit or reserve (pop()
  // may be called in between, e.g. to send due packets before the new one is queued).
  std::span<uint8_t> reserve() { return reserve(max_packet_); }
  // Space for a packet of exactly `bytes` (a ring holding copies of known sizes).
  std::span<uint8_t> reserve(size_t bytes);
  // The packet being written into the last reserve()d space, before commit(): an AQM's look at
  // (and CE mark of) an arriving packet.
  std::span<uint8_t> reserved(uint32_t length) { return {buffer_.get() + tail_ + sizeof(Record), length}; }
  // Appends the packet written into the last reserve()d space.
  void commit(Nanos arrival, uint32_t length, uint32_t meta = 0);

  bool empty() const { return packets_ == 0; }
  size_t packets() const { return packets_; }
  size_t bytes() const { return bytes_; }        // packet data queued
  size_t capacity() const { return capacity_; }  // buffer size

  const Record& front() const { return *record_at(head_); }
  std::span<const uint8_t> front_data() const {
    return {reinterpret_cast<const uint8_t*>(record_at(head_) + 1), record_at(head_)->length};
  }
  // The oldest packet's bytes, writable: an AQM marks it CE in place (packet/ecn.hh).
  std::span<uint8_t> front_data() {
    return {reinterpret_cast<uint8_t*>(record_at(head_) + 1), record_at(head_)->length};
  }
  void pop();

  // Calls f(Record&, std::span<const uint8_t> data) for every packet, oldest first. f may change
  // a record's arrival (a mark of its owner's), nothing else.
  template <class F>
  void for_each(F&& f) {
    size_t offset = head_;
    for (size_t i = 0; i < packets_; i++) {
      if (offset == capacity_ || (capacity_ - offset >= sizeof(Record) && record_at(offset)->length == kWrapMarker))
        offset = 0;
      Record* r = record_at(offset);
      f(*r, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(r + 1), r->length));
      offset += record_size(r->length);
    }
  }

 private:
  static constexpr uint32_t kWrapMarker = UINT32_MAX;
  static size_t record_size(uint32_t length) { return sizeof(Record) + ((length + 15) & ~size_t{15}); }
  Record* record_at(size_t offset) const { return reinterpret_cast<Record*>(buffer_.get() + offset); }
  void grow(size_t needed);

  std::unique_ptr<uint8_t[]> buffer_;
  size_t capacity_;
  size_t max_packet_;
  size_t head_ = 0;  // offset of the oldest record
  size_t tail_ = 0;  // where the next record goes
  size_t packets_ = 0;
  size_t bytes_ = 0;
};
