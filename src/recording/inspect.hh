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
#include "recording/timings.hh"

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

// mm-recording timings: per origin (address, names, responses, bytes, round trip, think time
// median and p90), then the load's longest chain of responses, each request starting after the
// response before it ended: the dependency chain that timing suggests, with each link's round
// trip and think time (what a user weighs before choosing shells).
std::string timings_report(const std::vector<RecordingEntry>& entries);
