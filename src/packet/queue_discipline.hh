// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The queue in front of a trace-driven link (mm-link --uplink-queue / --downlink-queue), the
// interface: infinite, droptail, drophead, codel, pie, fq_codel and dualpi2 implement it (one file
// each, e.g. codel_queue.hh), and make_queue_discipline (queue_factory.hh) builds one from the
// options' name and parameters. The link asks next() when an opportunity can start sending a
// packet, then takes front() and pop()s it.
#include <cstdint>
#include <span>
#include <string>

#include "packet/packet_ring.hh"
#include "util/clock.hh"

struct PacketTally {
  uint32_t packets = 0;
  uint32_t bytes = 0;
  void add(uint32_t length) {
    packets++;
    bytes += length;
  }
};

// What a discipline did to packets in one call: dropped them, or marked them CE (ECN, RFC
// 3168) instead; a marked packet stays queued (or is the one sent next).
struct QueueEvents {
  PacketTally dropped;
  PacketTally marked;
};

class QueueDiscipline {
 public:
  virtual ~QueueDiscipline() = default;
  // Space for the packet the ferry reads next.
  virtual std::span<uint8_t> reserve() = 0;
  // The packet read into reserve() arrived at `now`: queue it, or drop it (or others). `meta`
  // is its offload state (packet/offload.hh), kept with it.
  virtual void enqueue(Nanos now, uint32_t length, QueueEvents& events, uint32_t meta = 0) = 0;
  // An opportunity at `now` can start a packet: make the one to send the front (an AQM may
  // drop packets first). False if there is none.
  virtual bool next(Nanos now, QueueEvents& events) = 0;
  virtual const PacketRing::Record& front() const = 0;
  virtual std::span<const uint8_t> front_data() const = 0;
  virtual void pop() = 0;
  virtual bool empty() const = 0;
  // True if next() may drop (the link then wakes at every opportunity that starts a packet).
  virtual bool drops_when_dequeuing() const { return false; }
  // For the log header, e.g. "droptail [bytes=30000, packets=100]".
  virtual std::string description() const = 0;
};
