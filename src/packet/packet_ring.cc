// SPDX-License-Identifier: GPL-3.0-or-later
// The packet ring's growth and wrap-around (see packet_ring.hh).
#include "packet/packet_ring.hh"

#include <algorithm>
#include <cstring>

namespace {
size_t round16(size_t n) { return (n + 15) & ~size_t{15}; }
}  // namespace

PacketRing::PacketRing(size_t initial_bytes, size_t max_packet)
    : capacity_(round16(std::max(initial_bytes, 2 * (max_packet + sizeof(Record))))), max_packet_(round16(max_packet)) {
  buffer_.reset(new uint8_t[capacity_]);  // operator new aligns to 16 on every ABI we build for
}

std::span<uint8_t> PacketRing::reserve(size_t bytes) {
  const size_t needed = sizeof(Record) + round16(bytes);
  if (packets_ == 0) head_ = tail_ = 0;  // keep an idle ring compact
  const bool wrapped = packets_ > 0 && tail_ <= head_;
  if (!wrapped) {
    if (capacity_ - tail_ < needed) {
      if (head_ > needed) {
        if (capacity_ - tail_ >= sizeof(Record)) record_at(tail_)->length = kWrapMarker;
        tail_ = 0;
      } else {
        grow(needed);
      }
    }
  } else if (head_ - tail_ <= needed) {
    grow(needed);
  }
  return {buffer_.get() + tail_ + sizeof(Record), round16(bytes)};
}

void PacketRing::commit(Nanos arrival, uint32_t length, uint32_t meta) {
  // Pops after reserve() may have emptied the ring while the reservation wrapped to the start:
  // the only packet is then the one committed here.
  if (packets_ == 0) head_ = tail_;
  Record* r = record_at(tail_);
  r->arrival = arrival;
  r->length = length;
  r->meta = meta;
  tail_ += record_size(length);
  packets_++;
  bytes_ += length;
}

void PacketRing::pop() {
  bytes_ -= front().length;
  head_ += record_size(front().length);
  packets_--;
  // An empty ring is compacted by the next reserve(), not here: space reserve()d before this
  // pop must stay where it is.
  if (packets_ == 0) return;
  if (head_ == capacity_ || (capacity_ - head_ >= sizeof(Record) && record_at(head_)->length == kWrapMarker)) head_ = 0;
}

void PacketRing::grow(size_t needed) {
  size_t new_capacity = capacity_ * 2;
  while (new_capacity < bytes_ + packets_ * (sizeof(Record) + 15) + 2 * needed) new_capacity *= 2;
  std::unique_ptr<uint8_t[]> bigger(new uint8_t[new_capacity]);
  size_t out = 0;
  size_t offset = head_;
  for (size_t i = 0; i < packets_; i++) {
    if (offset == capacity_ || (capacity_ - offset >= sizeof(Record) && record_at(offset)->length == kWrapMarker))
      offset = 0;
    const size_t size = record_size(record_at(offset)->length);
    std::memcpy(bigger.get() + out, buffer_.get() + offset, size);
    out += size;
    offset += size;
  }
  buffer_ = std::move(bigger);
  capacity_ = new_capacity;
  head_ = 0;
  tail_ = out;
}
