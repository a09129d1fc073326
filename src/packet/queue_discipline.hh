// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The queue in front of a trace-driven link (mm-link --uplink-queue / --downlink-queue):
// infinite, droptail, drophead, codel, pie, fq_codel and dualpi2 (one file each, e.g. codel_queue.hh), built by
// make_queue_discipline from the options' name and parameters. The link asks next() when an
// opportunity can start sending a packet, then takes front() and pop()s it.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

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

// "bytes=N,packets=N,target=MS,interval=MS,qdelay_ref=MS,max_burst=MS,ecn=0|1,ce_threshold=MS,
// flows=N,tupdate=MS,alpha=HZ,beta=HZ,step_thresh=MS,min_qlen_step=N,coupling_factor=K,
// c_protection=PERCENT,drop_overload=0|1" (any order, any subset).
struct QueueArgs {
  std::optional<uint64_t> bytes, packets;
  std::optional<double> target, interval, qdelay_ref, max_burst;  // milliseconds
  std::optional<bool> ecn;                                        // codel, pie, fq_codel: mark CE (default 1)
  std::optional<double> ce_threshold;                             // codel, fq_codel: milliseconds
  std::optional<uint64_t> flows;                                  // fq_codel
  // dualpi2 (with target): times in ms, alpha and beta in Hz, c_protection in %.
  std::optional<double> tupdate, alpha, beta, step_thresh, coupling_factor;
  std::optional<uint64_t> min_qlen_step, c_protection;
  std::optional<bool> drop_overload;
  static QueueArgs parse(std::string_view text, std::string_view option);
  bool empty() const {
    return !bytes && !packets && !target && !interval && !qdelay_ref && !max_burst && !ecn && !ce_threshold && !flows &&
           !tupdate && !alpha && !beta && !step_thresh && !coupling_factor && !min_qlen_step && !c_protection &&
           !drop_overload;
  }
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

// Defaults of the parameters a user leaves out: CoDel's from RFC 8289 (also fq_codel's), PIE's
// from RFC 8033; ECN marking on in all three (ecn=0: drop only, as the original's); codel's and pie's limit, 1000
// packets, as Linux's codel and pie qdiscs (a queue that never overflows before the AQM acts: 1000 full packets are 1 s
// at 12 Mbit/s).
inline constexpr double kCoDelTargetMs = 5, kCoDelIntervalMs = 100;
inline constexpr double kPieQdelayRefMs = 15, kPieMaxBurstMs = 150;
inline constexpr uint64_t kAqmDefaultPackets = 1000;

// Builds a discipline by name; throws UsageError naming `option` for unknown names and
// missing or invalid parameters.
std::unique_ptr<QueueDiscipline> make_queue_discipline(std::string_view name, const QueueArgs& args,
                                                       std::string_view option, uint64_t seed);
