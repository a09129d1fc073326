// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The queue disciplines' parameters (mm-link --uplink-queue-args, --downlink-queue-args) and the
// factory that checks them and builds a discipline by name. Apart from the interface
// (queue_discipline.hh), so that the disciplines include the interface and only this file
// includes every discipline.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "packet/queue_discipline.hh"

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
