// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The fq_codel queue discipline (mm-link --uplink-queue=fq_codel): flow queuing with CoDel, RFC 8290.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "packet/codel.hh"
#include "packet/queue_discipline.hh"
#include "packet/queue_limits.hh"

// Flow queuing with CoDel per flow (RFC 8290): packets are hashed by their 5-tuple into one of
// `flows` queues; new flows are served before old ones, each in deficit round robin with a
// quantum of one MTU; each queue runs its own CoDel. When the total exceeds the limit, the
// fattest flow loses packets from its head.
class FqCoDelQueue final : public QueueDiscipline {
 public:
  FqCoDelQueue(QueueLimits limits, const CoDelParams& params, uint32_t flow_count)
      : limits_(limits), params_(params), flows_(flow_count) {
    for (auto& f : flows_) f.codel = CoDelState(params);
  }

  std::span<uint8_t> reserve() override { return {scratch_.get(), kScratch}; }

  void enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta) override;

  bool next(Nanos now, QueueEvents& events) override;

  const PacketRing::Record& front() const override { return current_->ring->front(); }
  std::span<const uint8_t> front_data() const override { return current_->ring->front_data(); }
  void pop() override {
    bytes_ -= current_->ring->front().length;
    packets_--;
    current_->ring->pop();
    current_ = nullptr;
  }
  bool empty() const override { return packets_ == 0; }
  bool drops_when_dequeuing() const override { return true; }
  std::string description() const override {
    return "fq_codel [" + limits_.describe() + params_.describe() + ", flows=" + std::to_string(flows_.size()) + "]";
  }

 private:
  static constexpr size_t kScratch = 65536;
  static constexpr int64_t kQuantum = 1514;
  struct Flow {
    std::unique_ptr<PacketRing> ring;
    CoDelState codel{0, 0};
    int64_t deficit = 0;
    bool active = false;
  };

  uint32_t classify(std::span<const uint8_t> packet) const;

  void rotate_to_old(std::vector<uint32_t>* list, uint32_t index) {
    list->erase(list->begin());
    old_flows_.push_back(index);
  }

  void drop_front_of(Flow& flow, QueueEvents& events) {
    const uint32_t length = flow.ring->front().length;
    events.dropped.add(length);
    bytes_ -= length;
    packets_--;
    flow.ring->pop();
  }

  void drop_from_fattest(QueueEvents& events);

  QueueLimits limits_;
  CoDelParams params_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> new_flows_, old_flows_;
  std::unique_ptr<uint8_t[]> scratch_{new uint8_t[kScratch]};
  Flow* current_ = nullptr;
  size_t bytes_ = 0;
  size_t packets_ = 0;
};
