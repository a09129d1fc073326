// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What mm-recording ls and show print: a recording as a table, one pair in detail. Text only;
// the program does the loading and the writing.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "recording/record_file.hh"

// One line per pair, in order of request start (stable: ties keep their order), under a header
// line: METHOD SCHEME HOST PATH STATUS BYTES H3 FILE (H3: "h3" where the response advertised
// HTTP/3 in an Alt-Svc field, else "-"), columns padded to line up (UTF-8 sequences
// count as one column). Paths longer than 60 columns are shortened with "..." unless `wide`.
// Recorded bytes are made printable.
std::string recording_table(std::vector<RecordingEntry> entries, bool wide);

// How show prints bodies: de-chunked, with binary or compressed content summarised; exactly as
// stored; or de-chunked and decompressed (gzip, deflate, br).
enum class BodyView { summary, raw, decoded };

// The pair stored in `path`: server, scheme, server name, protocol, timestamps, then both
// messages with their bodies as `view` says ("<N bytes, binary>" for content that is not text,
// "<N bytes, gzip-compressed ...>" for compressed content in the summary).
std::string describe_pair(const std::filesystem::path& path, const RecordedPair& pair, BodyView view);

// The timing of one recorded origin (IP:port), from the server timing mm-record measured
// (fields 106-108; absent in recordings of the original or of older versions).
struct OriginTiming {
  std::string ip;
  uint16_t port = 0;
  bool https = false;
  std::vector<std::string> names;    // the Host names asked of it, in order of first use
  size_t responses = 0;
  uint64_t bytes = 0;                // response bodies as stored
  std::optional<double> rtt_ms;      // its smallest round trip measured
  size_t timed = 0;                  // responses with a think time
  std::optional<double> think_median_ms, think_p90_ms;
};
// One per IP:port, in order of first request.
std::vector<OriginTiming> origin_timings(const std::vector<RecordingEntry>& entries);

// mm-recording timings: per origin (address, names, responses, bytes, round trip, think time
// median and p90), then the load's longest chain of responses, each request starting after the
// response before it ended: the dependency chain that timing suggests, with each link's round
// trip and think time (what a user weighs before choosing shells).
std::string timings_report(const std::vector<RecordingEntry>& entries);

// mm-recording timings --destinations: mm-delay's destinations file putting each recorded
// address at its measured distance (half its smallest round trip each way, the smallest over
// its ports); addresses without a measured round trip are left out, and a comment says so.
std::string destinations_map(const std::vector<OriginTiming>& origins);
