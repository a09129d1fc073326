// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: mm-link's queue arguments (QueueArgs::parse, make_queue_discipline) and then
// the discipline they build, driven by the input: packets of chosen sizes arriving at chosen
// times, and opportunities taking them. Checks what every discipline promises: a limit of
// packets= or bytes= is never exceeded, packets leave in arrival order (per flow for fq_codel,
// per queue for dualpi2: not checked there), every packet is sent, dropped or still queued, a
// mark (ECN) only ever sets CE on an ECN-capable packet and keeps its header checksum valid.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "packet/ecn.hh"
#include "packet/offload.hh"
#include "packet/queue_factory.hh"
#include "util/exception.hh"

namespace {

// A minimal IPv4/TCP header with a valid checksum, so that fq_codel can tell flows apart by
// their ports; the flow's number is also its ECN field (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
void write_packet(std::span<uint8_t> space, uint32_t length, uint16_t flow, uint32_t serial) {
  std::memset(space.data(), 0, std::min<size_t>(length, 40));
  if (length >= 40) {
    space[0] = 0x45;
    space[1] = static_cast<uint8_t>(flow & 3);
    space[2] = static_cast<uint8_t>(length >> 8);
    space[3] = static_cast<uint8_t>(length);
    space[9] = 6;  // TCP
    space[20] = static_cast<uint8_t>(flow >> 8);
    space[21] = static_cast<uint8_t>(flow);
    set_ip_checksum(space.data(), 20);
  }
  if (length >= 44) std::memcpy(space.data() + 40, &serial, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  static const char* const kNames[] = {"infinite", "droptail", "drophead", "codel", "pie", "fq_codel", "dualpi2"};
  const char* name = kNames[input.ConsumeIntegralInRange<int>(0, 6)];
  const std::string arguments = input.ConsumeRandomLengthString(200);
  std::unique_ptr<QueueDiscipline> queue;
  QueueArgs args;
  try {
    args = QueueArgs::parse(arguments, "--uplink-queue-args");
    queue = make_queue_discipline(name, args, "--uplink-queue-args", 7);
  } catch (const UsageError&) {
    return 0;
  }
  FUZZ_CHECK(!queue->description().empty());
  const bool fifo = std::strcmp(name, "fq_codel") != 0 && std::strcmp(name, "dualpi2") != 0;
  Nanos now = 0;
  uint64_t arrived = 0, sent = 0;
  QueueEvents events;
  uint32_t next_expected = 0;
  while (input.remaining_bytes() > 0) {
    now += input.ConsumeIntegralInRange<Nanos>(0, 50 * kNanosPerMs);
    if (input.ConsumeBool()) {
      const uint32_t length = input.ConsumeIntegralInRange<uint32_t>(20, 1500);
      const uint16_t flow = input.ConsumeIntegralInRange<uint16_t>(0, 3);
      const std::span<uint8_t> space = queue->reserve();
      FUZZ_CHECK(space.size() >= length);
      write_packet(space, length, flow, static_cast<uint32_t>(arrived));
      queue->enqueue(now, length, events);
      arrived++;
    } else if (queue->next(now, events)) {
      const PacketRing::Record& front = queue->front();
      const std::span<const uint8_t> bytes = queue->front_data();
      FUZZ_CHECK(bytes.size() == front.length && front.arrival <= now);
      if (front.length >= 40) {
        // Its flow's ECN field, or CE set on an ECN-capable one; the header still valid.
        const uint8_t sent_ecn = bytes[1] & 3, written = bytes[21] & 3;
        FUZZ_CHECK(sent_ecn == written || (written != ecn::kNotEct && sent_ecn == ecn::kCe));
        FUZZ_CHECK(checksum_fold(checksum_add(bytes.first(20))) == 0xffff);
      }
      if (fifo && front.length >= 44) {
        uint32_t serial;
        std::memcpy(&serial, bytes.data() + 40, 4);
        FUZZ_CHECK(serial >= next_expected);  // never an older packet after a newer one
        next_expected = serial + 1;
      }
      queue->pop();
      sent++;
    }
    if (args.packets) FUZZ_CHECK(arrived - sent - events.dropped.packets <= *args.packets);
  }
  // Conservation: what arrived was sent, dropped, or is still queued.
  uint64_t left = 0;
  while (queue->next(now, events)) {
    queue->pop();
    left++;
  }
  FUZZ_CHECK(queue->empty());
  FUZZ_CHECK(arrived == sent + events.dropped.packets + left);
  return 0;
}
