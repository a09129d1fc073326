// SPDX-License-Identifier: GPL-3.0-or-later
// Range requests in replay: parsing Range, Content-Range and If-Range, and answering from the
// recorded responses. See replay_range.hh for the rules.
#include "replay/replay_range.hh"

#include <algorithm>
#include <charconv>

#include "util/text.hh"

namespace {
// More ranges than any player or downloader sends: such a Range is ignored (RFC 9110 §14.2
// allows it), so that no request makes the matcher sort and merge without bound.
constexpr size_t kMaxRanges = 100;

std::optional<uint64_t> parse_position(std::string_view digits) {
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  uint64_t value = 0;
  const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (err != std::errc() || end != digits.data() + digits.size()) return std::nullopt;  // overflow
  return value;
}

std::optional<RangeSpec> parse_spec(std::string_view text) {
  const size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view first = text.substr(0, dash), last = text.substr(dash + 1);
  RangeSpec spec;
  if (first.empty()) {  // suffix-range: "-n"
    spec.last = parse_position(last);
    return spec.last ? std::optional(spec) : std::nullopt;
  }
  spec.first = parse_position(first);
  if (!spec.first) return std::nullopt;
  if (last.empty()) return spec;
  spec.last = parse_position(last);
  if (!spec.last || *spec.last < *spec.first) return std::nullopt;
  return spec;
}

std::optional<std::string_view> header_value(const std::vector<HttpHeader>& headers, std::string_view key) {
  for (const HttpHeader& h : headers) {
    if (equals_ignoring_case(h.key, key)) return trim_blanks(h.value);
  }
  return std::nullopt;
}

std::string content_range_text(ByteRange range, std::optional<uint64_t> complete_length) {
  return "bytes " + std::to_string(range.first) + "-" + std::to_string(range.last) + "/" +
         (complete_length ? std::to_string(*complete_length) : std::string("*"));
}

ReplayMatch answered(ReplayResponse response) { return ReplayMatch{true, std::move(response), {}}; }

// `source` (whose body holds the bytes from `offset` on) cut down to `range`, as a 206.
ReplayMatch partial(const ReplayResponse& source, ByteRange range, std::optional<uint64_t> complete_length,
                    uint64_t offset) {
  ReplayResponse out;
  out.status = 206;
  out.reason = "Partial Content";
  for (const HttpHeader& h : source.headers) {
    if (equals_ignoring_case(h.key, "Content-Length") || equals_ignoring_case(h.key, "Content-Range")) continue;
    out.headers.push_back(h);
  }
  const uint64_t size = range.last - range.first + 1;
  out.headers.push_back({"Content-Range", content_range_text(range, complete_length)});
  out.headers.push_back({"Content-Length", std::to_string(size)});
  out.body = source.body.substr(range.first - offset, size);
  return answered(std::move(out));
}

ReplayResponse text_response(int status, std::string reason, std::string body) {
  ReplayResponse out;
  out.status = status;
  out.reason = std::move(reason);
  out.headers = {{"Content-Type", "text/plain; charset=utf-8"},
                 {"Content-Length", std::to_string(body.size())},
                 {"Cache-Control", "no-store"}};
  out.body = std::move(body);
  return out;
}

ReplayMatch not_satisfiable(const RangeRequest& request, uint64_t length) {
  ReplayResponse out =
      text_response(416, "Range Not Satisfiable",
                    "mm-replay: the range " + printable(request.range, 200) + " of " + request.description +
                        " is not satisfiable: the recorded response has " + count_of(length, "byte") + ".\n");
  out.headers.push_back({"Content-Range", "bytes */" + std::to_string(length)});
  return answered(std::move(out));
}

// The range of a recorded 206 and its body, when they agree.
std::optional<ContentRange> recorded_slice(const ReplayResponse& response) {
  if (response.status != 206) return std::nullopt;
  const auto value = header_value(response.headers, "Content-Range");
  if (!value) return std::nullopt;  // multipart/byteranges: only its own Range gets it
  const auto parsed = parse_content_range(*value);
  if (!parsed || response.body.size() != parsed->range.last - parsed->range.first + 1) return std::nullopt;
  return parsed;
}

// The single range asked for, over a recorded slice's complete length; with an unknown length,
// only "a-b" can be placed.
std::optional<ByteRange> requested_range(const RangeSpec& spec, std::optional<uint64_t> complete_length) {
  if (complete_length) {
    const auto ranges = satisfiable_ranges({spec}, *complete_length);
    if (ranges.empty()) return std::nullopt;
    return ranges.front();
  }
  if (!spec.first || !spec.last) return std::nullopt;
  return ByteRange{*spec.first, *spec.last};
}

// A recorded 206 that holds the one range asked for (exactly, if `exact`), cut to it.
std::optional<ReplayMatch> from_recorded_slices(const RangeSpec& spec, const std::vector<RangeCandidate>& recorded,
                                                bool exact) {
  for (const RangeCandidate& c : recorded) {
    const auto slice = recorded_slice(*c.response);
    if (!slice) continue;
    const auto wanted = requested_range(spec, slice->complete_length);
    if (!wanted) continue;
    const bool inside = wanted->first >= slice->range.first && wanted->last <= slice->range.last;
    if (exact ? *wanted == slice->range : inside) {
      return partial(*c.response, *wanted, slice->complete_length, slice->range.first);
    }
  }
  return std::nullopt;
}

ReplayMatch from_full(const RangeRequest& request, const ReplayResponse& full, const std::vector<RangeSpec>& specs) {
  const uint64_t length = full.body.size();
  const std::vector<ByteRange> ranges = merge_ranges(satisfiable_ranges(specs, length));
  if (ranges.empty()) return not_satisfiable(request, length);
  if (ranges.size() > 1) return answered(full);  // several disjoint ranges: the whole representation
  return partial(full, ranges.front(), length, 0);
}

// Only ranges were recorded, and none holds the one asked for.
ReplayMatch range_miss(const RangeRequest& request, const std::vector<RangeCandidate>& recorded,
                       const std::vector<RangeSpec>& specs) {
  std::vector<std::string> slices;
  std::optional<uint64_t> complete_length;
  for (const RangeCandidate& c : recorded) {
    if (const auto slice = recorded_slice(*c.response)) {
      slices.push_back(content_range_text(slice->range, slice->complete_length));
      if (slice->complete_length) complete_length = slice->complete_length;
    }
  }
  if (complete_length && satisfiable_ranges(specs, *complete_length).empty())
    return not_satisfiable(request, *complete_length);
  std::string list;
  for (const std::string& s : slices) list += (list.empty() ? "" : ", ") + s;
  if (list.empty()) list = "none with a Content-Range";
  const std::string what = "the range " + printable(request.range, 200) + " of " + request.description;
  ReplayMatch miss;
  miss.found = false;
  miss.response = text_response(404, "Not Found",
                                "mm-replay: " + what + " was not recorded.\nRecorded ranges of it: " + list + "\n");
  miss.log_line = "no recorded response for " + what + "; recorded ranges: " + list;
  return miss;
}

// "bytes 0-3, 8-9 of 10": the bytes that recorded slices hold (sorted, merged; the first five
// stretches), of the complete length if known.
std::string held_text(const std::vector<ByteRange>& held, std::optional<uint64_t> complete_length) {
  constexpr size_t kShown = 5;
  std::string text;
  for (size_t i = 0; i < held.size() && i < kShown; i++)
    text += (i ? ", " : "bytes ") + std::to_string(held[i].first) + "-" + std::to_string(held[i].last);
  if (held.size() > kShown) text += ", ... (" + count_of(held.size(), "stretch", "stretches") + ")";
  return text + " of " + (complete_length ? std::to_string(*complete_length) : std::string("an unknown length"));
}
}  // namespace

std::optional<std::vector<RangeSpec>> parse_range_header(std::string_view value) {
  value = trim_blanks(value);
  const size_t equals = value.find('=');
  if (equals == std::string_view::npos || !equals_ignoring_case(trim_blanks(value.substr(0, equals)), "bytes"))
    return std::nullopt;
  std::string_view rest = value.substr(equals + 1);
  std::vector<RangeSpec> specs;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim_blanks(rest.substr(0, comma));
    if (!item.empty()) {  // empty list elements are allowed (RFC 9110 §5.6.1.2)
      const auto spec = parse_spec(item);
      if (!spec || specs.size() == kMaxRanges) return std::nullopt;
      specs.push_back(*spec);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (specs.empty()) return std::nullopt;
  return specs;
}

std::vector<ByteRange> satisfiable_ranges(const std::vector<RangeSpec>& specs, uint64_t length) {
  std::vector<ByteRange> ranges;
  for (const RangeSpec& spec : specs) {
    if (!spec.first) {  // the last n bytes
      if (*spec.last == 0 || length == 0) continue;
      ranges.push_back({length - std::min(*spec.last, length), length - 1});
    } else if (*spec.first < length) {
      ranges.push_back({*spec.first, spec.last ? std::min(*spec.last, length - 1) : length - 1});
    }
  }
  return ranges;
}

std::vector<ByteRange> merge_ranges(std::vector<ByteRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) {
    return a.first != b.first ? a.first < b.first : a.last < b.last;
  });
  std::vector<ByteRange> merged;
  for (const ByteRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, r.last);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
  value = trim_blanks(value);
  if (!starts_with_ignoring_case(value, "bytes ")) return std::nullopt;
  value = trim_blanks(value.substr(6));
  const size_t dash = value.find('-'), slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) return std::nullopt;
  const auto first = parse_position(value.substr(0, dash));
  const auto last = parse_position(value.substr(dash + 1, slash - dash - 1));
  if (!first || !last || *last < *first) return std::nullopt;
  ContentRange out{{*first, *last}, std::nullopt};
  const std::string_view complete = value.substr(slash + 1);
  if (complete != "*") {
    out.complete_length = parse_position(complete);
    if (!out.complete_length || *last >= *out.complete_length) return std::nullopt;
  }
  return out;
}

bool if_range_matches(std::string_view if_range, const std::vector<HttpHeader>& response_headers) {
  if_range = trim_blanks(if_range);
  if (if_range.empty()) return false;
  if (if_range.front() == '"' || starts_with_ignoring_case(if_range, "W/")) {
    const auto etag = header_value(response_headers, "ETag");
    // Strong comparison: neither may be weak, and the opaque tags are the same octets.
    return etag && if_range.front() == '"' && !etag->empty() && etag->front() == '"' && *etag == if_range;
  }
  const auto last_modified = header_value(response_headers, "Last-Modified");
  return last_modified && *last_modified == if_range;
}

std::optional<ReplayMatch> answer_range(const RangeRequest& request, const ReplayResponse& chosen,
                                        const std::vector<RangeCandidate>& recorded) {
  if (request.method != "GET") return std::nullopt;  // RFC 9110 §14.2: GET only
  const auto specs = parse_range_header(request.range);
  if (!specs || (chosen.status != 200 && chosen.status != 206)) return std::nullopt;
  if (request.if_range && !if_range_matches(*request.if_range, chosen.headers)) return std::nullopt;

  const std::string_view asked = trim_blanks(request.range);
  for (const RangeCandidate& c : recorded) {
    if (c.response->status == 206 && c.recorded_range && trim_blanks(*c.recorded_range) == asked)
      return answered(*c.response);
  }
  if (specs->size() == 1) {
    if (auto exact = from_recorded_slices(specs->front(), recorded, true)) return exact;
  }
  const ReplayResponse* full = chosen.status == 200 ? &chosen : nullptr;
  for (size_t i = 0; !full && i < recorded.size(); i++) {
    if (recorded[i].response->status == 200) full = recorded[i].response;
  }
  if (full) return from_full(request, *full, *specs);
  if (specs->size() == 1) {
    if (auto inside = from_recorded_slices(specs->front(), recorded, false)) return inside;
  }
  return range_miss(request, recorded, *specs);
}

ReplayMatch answer_without_range(std::string_view method, const std::string& description,
                                 const std::vector<RangeCandidate>& recorded) {
  // The slices of one representation: of the complete length the first one that knows it gives
  // (a slice that does not know it, if it lies within).
  std::vector<std::pair<ContentRange, const ReplayResponse*>> recorded_slices;
  std::optional<uint64_t> length;
  for (const RangeCandidate& c : recorded) {
    if (const auto slice = recorded_slice(*c.response)) {
      recorded_slices.push_back({*slice, c.response});
      if (!length) length = slice->complete_length;
    }
  }
  std::vector<std::pair<ByteRange, const ReplayResponse*>> slices;
  std::vector<ByteRange> held;
  for (const auto& [slice, response] : recorded_slices) {
    if (length && (slice.complete_length ? *slice.complete_length != *length : slice.range.last >= *length)) continue;
    slices.push_back({slice.range, response});
    held.push_back(slice.range);
  }
  held = merge_ranges(std::move(held));
  if (length && held.size() == 1 && held.front() == ByteRange{0, *length - 1}) {
    ReplayResponse whole;
    whole.status = 200;
    whole.reason = "OK";
    for (const HttpHeader& h : slices.front().second->headers) {
      if (equals_ignoring_case(h.key, "Content-Length") || equals_ignoring_case(h.key, "Content-Range")) continue;
      whole.headers.push_back(h);
    }
    whole.headers.push_back({"Content-Length", std::to_string(*length)});
    whole.body.assign(*length, '\0');
    for (const auto& [range, response] : slices) whole.body.replace(range.first, response->body.size(), response->body);
    return answered(std::move(whole));
  }
  const std::string recorded_bytes =
      held.empty() ? "206 responses without a usable Content-Range" : held_text(held, length);
  ReplayMatch miss;
  miss.response = text_response(404, "Not Found",
                                "mm-replay: " + description +
                                    " was recorded only as byte ranges (206 responses) that do not cover the "
                                    "whole body, so it cannot be answered without a Range.\nRecorded: " +
                                    recorded_bytes + "\n");
  if (method == "HEAD") miss.response.body.clear();
  miss.log_line = "no recorded response for " + description +
                  " without a Range: recorded only as byte ranges that do not cover the whole body (" + recorded_bytes +
                  ")";
  return miss;
}
