// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Range requests in replay (RFC 9110 §14, §13.1.5), so that video players and resumed downloads
// get what a real server would give them. A GET with a Range header is answered from the
// recorded responses for the same request:
//   1. a recorded 206 whose request carried the same Range, or whose Content-Range is exactly the
//      range asked for: served as recorded;
//   2. a recorded full 200: a 206 with the slice (one range; ranges that overlap or touch are
//      merged into one), a 416 with "Content-Range: bytes */LENGTH" if no range is satisfiable,
//      and the whole 200 if several disjoint ranges remain (allowed by §14.2; no
//      multipart/byteranges);
//   3. a recorded 206 whose Content-Range contains the range asked for: that part of it;
//   4. otherwise, if only ranges were recorded, a 404 naming the recorded ranges (416 if the range
//      lies beyond the recorded complete length).
// A request without a Range never gets a 206: the matcher prefers any other recorded response;
// if only 206 responses were recorded, their slices are assembled into a 200 when together they
// cover the whole representation, and the request is a miss otherwise (answer_without_range).
// Ranges count bytes of the response as recorded: of the encoded body when it has a
// Content-Encoding, as on the real web. An invalid Range, a Range on any method but GET, or an
// If-Range that does not match the validators of the recorded response (a strong ETag match,
// or the same Last-Modified date) leaves the Range ignored: the chosen response is served whole.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/replay_request.hh"

// One range-spec as written: "a-b" (first and last), "a-" (first only), "-n" (suffix: last n bytes).
struct RangeSpec {
  std::optional<uint64_t> first;
  std::optional<uint64_t> last;  // for a suffix range (no first), the suffix length
};

// An inclusive byte range of a representation.
struct ByteRange {
  uint64_t first = 0, last = 0;
  bool operator==(const ByteRange&) const = default;
};

// A Content-Range of a 206: "bytes 0-99/1000"; complete length nullopt for "bytes 0-99/*".
struct ContentRange {
  ByteRange range;
  std::optional<uint64_t> complete_length;
};

// The range-specs of a Range field value ("bytes=0-99, -500"), in order; nullopt if it is not a
// valid bytes range set (another unit, bad syntax, a-b with b < a, more than 100 ranges).
std::optional<std::vector<RangeSpec>> parse_range_header(std::string_view value);

// The satisfiable ranges of specs over a representation of `length` bytes, clipped to it, in the
// order given (RFC 9110 §14.1.1: a first position at or beyond the length, or a suffix of 0,
// is unsatisfiable).
std::vector<ByteRange> satisfiable_ranges(const std::vector<RangeSpec>& specs, uint64_t length);

// Sorted, with overlapping or adjacent ranges merged.
std::vector<ByteRange> merge_ranges(std::vector<ByteRange> ranges);

// "bytes 0-99/1000" or "bytes 0-99/*"; nullopt for anything else (including "bytes */1000").
std::optional<ContentRange> parse_content_range(std::string_view value);

// RFC 9110 §13.1.5: true if the If-Range validator matches the response's: an entity tag must be
// a strong match for its ETag (a weak tag never matches); a date must equal its Last-Modified
// (a recording never changes, so the replay, its origin server, may take the date as strong).
bool if_range_matches(std::string_view if_range, const std::vector<HttpHeader>& response_headers);

// A recorded response for the request being answered, with the Range its request carried.
struct RangeCandidate {
  const ReplayResponse* response;
  std::optional<std::string> recorded_range;
};

// The request as range handling sees it.
struct RangeRequest {
  std::string method;
  std::string range;                    // the Range field value
  std::optional<std::string> if_range;  // the If-Range field value, if present
  std::string description;              // "GET http://host/target", for messages
};

// The answer to a request with a Range header, given the response the matcher chose and every
// recorded response to the same request (recorded order, the chosen one among them); nullopt:
// serve `chosen` as it is (see the rules at the top).
std::optional<ReplayMatch> answer_range(const RangeRequest& request, const ReplayResponse& chosen,
                                        const std::vector<RangeCandidate>& recorded);

// The answer to a request without a Range when only 206 responses were recorded for it (`recorded`:
// every one, in recorded order): a 200 with the whole body assembled from the slices if they cover
// all of it (the complete length of their Content-Range; the headers of the first slice, without
// Content-Range, Content-Length the whole body's), else a 404 naming the bytes recorded.
// `description` and `method` are the request's, as in RangeRequest.
ReplayMatch answer_without_range(std::string_view method, const std::string& description,
                                 const std::vector<RangeCandidate>& recorded);
