// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The servers' timing in a recording (fields 106-108, measured by mm-record): per origin, and
// as mm-delay's map of the origins' distances. Used by mm-recording timings and by
// mm-replay --timing=recorded, so kept apart from inspect.hh's body decoding.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "recording/record_file.hh"

// The Host a pair's request names, or its IP:port when it has none.
std::string recorded_host(const RecordedPair& pair);

// The timing of one recorded origin (IP:port), from the server timing mm-record measured
// (fields 106-108; absent in recordings of the original or of older versions).
struct OriginTiming {
  std::string ip;
  uint16_t port = 0;
  bool https = false;
  std::vector<std::string> names;  // the Host names asked of it, in order of first use
  size_t responses = 0;
  uint64_t bytes = 0;            // response bodies as stored
  std::optional<double> rtt_ms;  // its smallest round trip measured
  size_t timed = 0;              // responses with a think time
  std::optional<double> think_median_ms, think_p90_ms;
};
// One per IP:port, in order of first request.
std::vector<OriginTiming> origin_timings(const std::vector<RecordingEntry>& entries);

// mm-recording timings --destinations: mm-delay's destinations file putting each recorded
// address at its measured distance (half its smallest round trip each way, the smallest over
// its ports); addresses without a measured round trip are left out, and a comment says so.
std::string destinations_map(const std::vector<OriginTiming>& origins);
