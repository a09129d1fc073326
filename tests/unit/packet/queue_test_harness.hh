// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the queue disciplines' tests share: building a discipline from its options, and feeding
// a 12 Mbit/s link with a constant stream of packets to watch its delays and drops.
#include <sys/eventfd.h>

#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "packet/link_log.hh"
#include "packet/link_queue.hh"
#include "packet/offload.hh"
#include "packet/queue_factory.hh"
#include "packet/trace.hh"
#include "util/file_descriptor.hh"

inline std::unique_ptr<QueueDiscipline> queue(std::string_view name, std::string_view args = "") {
  return make_queue_discipline(name, QueueArgs::parse(args, "--uplink-queue"), "--uplink-queue", 1);
}

// Feeds a 12 Mbit/s link (one 1500-byte packet per ms) with 1500-byte UDP packets of flow
// `flow_of(i)` every `gap` ns until `end`; records each delivered packet's sojourn and every drop.
struct AqmRun {
  std::vector<std::pair<Nanos, double>> sojourns;  // (departure, ms) with the packet's flow in flows
  std::vector<int> flows;
  std::vector<Nanos> drop_times;
  uint32_t dropped = 0;
  std::vector<Nanos> mark_times;  // CE marks (ECN), as the log's 'm' events say
  uint32_t marked = 0;
  uint32_t delivered_ce = 0;   // delivered packets carrying CE
  uint32_t bad_checksums = 0;  // delivered packets whose IPv4 header checksum is wrong
};

// `tos`: the packets' TOS byte (its low two bits: ECN, packet/ecn.hh), or tos_of(flow) if given;
// their header checksum is valid.
inline AqmRun feed(std::unique_ptr<QueueDiscipline> q, Nanos gap, Nanos end, int (*flow_of)(int) = nullptr,
                   uint8_t tos = 0, uint8_t (*tos_of)(int flow) = nullptr) {
  Trace trace = Trace::from_argument("rate:12Mbit/s");
  FileDescriptor wake(::eventfd(0, EFD_NONBLOCK));
  LinkEventRing events(wake.get());
  // In opportunities: a packet leaves the discipline when it leaves the link, so that a
  // delivered packet's sojourn is the one its discipline saw (serialised, it would add 1 ms).
  LinkQueue link(trace, 0, false, std::move(q), &events, {}, LinkTiming::Opportunities);
  AqmRun run;
  auto collect = [&] {
    events.drain([&](const LinkEvent& e) {
      if (e.kind == 'd') {
        run.dropped += e.packets;
        for (uint32_t k = 0; k < e.packets; k++) run.drop_times.push_back(e.time);
      } else if (e.kind == 'm') {
        run.marked += e.packets;
        for (uint32_t k = 0; k < e.packets; k++) run.mark_times.push_back(e.time);
      }
    });
  };
  auto send = [&](Nanos now) {
    return [&run, now](std::span<const uint8_t> p, uint32_t) {
      Nanos arrival;
      std::memcpy(&arrival, p.data() + 24, sizeof arrival);
      run.sojourns.emplace_back(now, nanos_to_ms(now - arrival));
      run.flows.push_back(p[21]);
      if ((p[1] & 3) == 3) run.delivered_ce++;
      if (checksum_fold(checksum_add(p.first(20))) != 0xffff) run.bad_checksums++;
    };
  };
  int i = 0;
  for (Nanos now = 0; now < end; now += gap, i++) {
    for (Nanos due = link.next_departure(); due <= now; due = link.next_departure()) link.release(due, send(due));
    link.release(now, send(now));
    auto space = link.reserve();
    std::memset(space.data(), 0, 32);
    space[0] = 0x45;
    space[1] = tos_of ? tos_of(flow_of ? flow_of(i) : 0) : tos;
    space[2] = 1500 >> 8;
    space[3] = 1500 & 0xff;
    space[8] = 64;
    space[9] = 17;
    space[21] = static_cast<uint8_t>(flow_of ? flow_of(i) : 0);  // UDP source port: the flow
    std::memcpy(space.data() + 24, &now, sizeof now);
    set_ip_checksum(space.data(), 20);
    link.commit(now, 1500);
    collect();
  }
  collect();
  return run;
}

inline double mean_sojourn(const AqmRun& run, Nanos from, int flow = -1) {
  double sum = 0;
  int n = 0;
  for (size_t k = 0; k < run.sojourns.size(); k++) {
    if (run.sojourns[k].first >= from && (flow < 0 || run.flows[k] == flow)) {
      sum += run.sojourns[k].second;
      n++;
    }
  }
  return n ? sum / n : -1;
}
