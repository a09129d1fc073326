// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: packet captures as mm-monkey see reads them (monkey/capture_reader.hh through
// libpcap, pcap and pcapng), the TCP decoder (monkey/tcp_segment.hh) and Monkey See's inference
// (monkey/monkey_see.hh) with its workload lines.
#include <cstdint>
#include <cstdio>
#include <set>

#include "fuzz/fuzz_check.hh"
#include "monkey/capture_reader.hh"
#include "monkey/monkey_see.hh"
#include "monkey/tcp_segment.hh"
#include "monkey/workload.hh"
#include "util/exception.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  FILE* file = fmemopen(const_cast<uint8_t*>(data), size, "rb");
  if (!file) return 0;
  std::set<uint64_t> ids;
  MonkeySeeOptions options;
  options.max_open = 16;  // eviction reached by small inputs too
  options.max_exchanges = 8;
  MonkeySee see(
      [&](MonkeyConnection&& c) {
        FUZZ_CHECK(ids.insert(c.id).second);  // each connection reported once
        FUZZ_CHECK(c.exchanges.size() <= 8);
        FUZZ_CHECK(!c.loss || (*c.loss >= 0 && *c.loss <= 1));
        FUZZ_CHECK(!c.rtt || *c.rtt >= 0);
        FUZZ_CHECK(!c.bandwidth_bps || *c.bandwidth_bps > 0);
        const std::string lines = workload_lines(c);
        FUZZ_CHECK(!lines.empty() && lines.back() == '\n');
      },
      options);
  try {
    CaptureReader reader(file, "fuzz.pcap");
    for (int i = 0; i < 100'000; i++) {
      const std::optional<CapturedPacket> packet = reader.next();
      if (!packet) break;
      FUZZ_CHECK(packet->ip.size() <= size);
      const std::optional<TcpSegment> s = decode_tcp(packet->ip, packet->wire_length);
      if (!s) continue;
      FUZZ_CHECK(s->captured_payload.size() <= s->payload);
      FUZZ_CHECK(s->captured_payload.empty() ||
                 (s->captured_payload.data() >= packet->ip.data() &&
                  s->captured_payload.data() + s->captured_payload.size() <= packet->ip.data() + packet->ip.size()));
      see.segment(packet->time, *s);
    }
  } catch (const UserError&) {
  }
  see.finish();
  FUZZ_CHECK(see.reported() == ids.size());
  return 0;
}
