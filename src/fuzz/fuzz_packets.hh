// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The packets of a queue's fuzz input (after its table and a NUL byte): each a length byte and
// that many bytes, read into the queue's reservation and committed a microsecond after the one
// before; `seen(packet)` is called for each just before its commit (to note where it goes).
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.hh"
#include "util/clock.hh"

template <class Queue, class Seen>
void feed_fuzz_packets(std::string_view input, size_t from, Queue& queue, Seen&& seen) {
  Nanos now = 0;
  for (size_t at = from; at < input.size();) {
    const size_t length = std::min<size_t>(static_cast<uint8_t>(input[at]), input.size() - at - 1);
    const std::string packet(input.substr(at + 1, length));
    at += 1 + length;
    auto space = queue.reserve();
    FUZZ_CHECK(space.size() >= packet.size());
    std::memcpy(space.data(), packet.data(), packet.size());
    seen(packet);
    queue.commit(now, static_cast<uint32_t>(packet.size()), 0);
    now += 1000;
  }
}
