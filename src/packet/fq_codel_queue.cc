// SPDX-License-Identifier: GPL-3.0-or-later
// fq_codel's classification, deficit round robin and overflow drops (see fq_codel_queue.hh).
#include "packet/fq_codel_queue.hh"

#include <algorithm>

void FqCoDelQueue::enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) {
  const uint32_t index = classify(std::span<const uint8_t>(scratch_.get(), length));
  Flow& flow = flows_[index];
  if (!flow.ring) flow.ring = std::make_unique<PacketRing>(8 * 1024, 2048);  // once per flow, then reused
  std::copy_n(scratch_.get(), length, flow.ring->reserve(length).begin());
  flow.ring->commit(now, length, meta);
  bytes_ += length;
  packets_++;
  if (!flow.active) {
    flow.active = true;
    flow.deficit = kQuantum;
    new_flows_.push_back(index);
  }
  while (limits_.exceeded(bytes_, packets_)) drop_from_fattest(events);
}

bool FqCoDelQueue::next(Nanos now, QueueEvents& events) {
  if (current_) return true;
  for (;;) {
    std::vector<uint32_t>* list = !new_flows_.empty() ? &new_flows_ : !old_flows_.empty() ? &old_flows_ : nullptr;
    if (!list) return false;
    const uint32_t index = list->front();
    Flow& flow = flows_[index];
    if (flow.deficit <= 0) {
      flow.deficit += kQuantum;
      rotate_to_old(list, index);
      continue;
    }
    flow.codel.dequeue(*flow.ring, now, events, [&] { drop_front_of(flow, events); });
    if (flow.ring->empty()) {
      // An emptied new flow goes to the old list once, so it cannot keep its priority.
      if (list == &new_flows_ && !old_flows_.empty()) {
        rotate_to_old(list, index);
      } else {
        list->erase(list->begin());
        flow.active = false;
      }
      continue;
    }
    flow.deficit -= static_cast<int64_t>(flow.ring->front().length);
    current_ = &flow;
    return true;
  }
}

uint32_t FqCoDelQueue::classify(std::span<const uint8_t> packet) const {
  // IPv4 5-tuple: protocol, addresses, and ports for TCP/UDP (first fragment).
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](uint64_t v) {
    h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  };
  if (packet.size() >= 20) {
    const size_t header = (packet[0] & 0x0f) * 4u;
    mix(packet[9]);
    for (size_t i = 12; i < 20; i++) mix(packet[i]);
    if ((packet[9] == 6 || packet[9] == 17) && packet.size() >= header + 4) {
      for (size_t i = header; i < header + 4; i++) mix(packet[i]);
    }
  }
  return static_cast<uint32_t>(h % flows_.size());
}

void FqCoDelQueue::drop_from_fattest(QueueEvents& events) {
  Flow* fattest = nullptr;
  for (auto& f : flows_) {
    if (f.ring && !f.ring->empty() && (!fattest || f.ring->bytes() > fattest->ring->bytes())) fattest = &f;
  }
  drop_front_of(*fattest, events);
}
