// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the recording proxy's HTTP/1.x parser (http/http_parser.hh), both
// directions, with the bytes split three ways: whole, one byte at a time, and at split points
// the input chooses, those also fed message part by message part (feed_step, as the recorder
// with --deterministic feeds it). The parser promises the same messages whatever the split (the
// proxy feeds it what each read returned), so any difference between them is a bug, as is a
// crash.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.hh"
#include "http/http_parser.hh"

namespace {

struct Outcome {
  std::vector<HttpParser::Completed> messages;
  HttpParser::State state;
  size_t consumed = 0;
  bool clean_end = false;
};

// The methods of the requests a response answers, chosen by the input (HEAD has no body,
// CONNECT turns a 2xx into a tunnel).
const char* const kMethods[] = {"GET", "HEAD", "CONNECT", "POST"};

// Feeds one piece: all at once (feed), or message part by message part (feed_step, as the
// recorder with --deterministic does). Returns the bytes consumed.
size_t feed_piece(HttpParser& parser, std::string_view part, bool stepwise) {
  if (!stepwise) return parser.feed(part);
  size_t used = 0;
  while (used < part.size() && parser.state() == HttpParser::State::Http) {
    const size_t n = parser.feed_step(part.substr(used));
    // Each step makes progress, unless the bytes stopped being HTTP.
    FUZZ_CHECK(n > 0 || parser.state() != HttpParser::State::Http);
    // A step ends where a message's head or the message itself does, or with the bytes.
    FUZZ_CHECK(used + n == part.size() || parser.head() != nullptr || parser.has_completed() ||
               parser.state() != HttpParser::State::Http || !parser.in_message());
    used += n;
    if (n == 0) break;
  }
  return used;
}

Outcome parse(HttpParser::Direction direction, const std::vector<uint8_t>& methods, std::string_view bytes,
              const std::vector<size_t>& pieces, bool stepwise = false) {
  HttpParser parser(direction);
  for (uint8_t m : methods) parser.expect_response_to(kMethods[m % 4]);
  Outcome out;
  size_t pos = 0;
  for (size_t piece : pieces) {
    if (pos >= bytes.size()) break;
    const std::string_view part = bytes.substr(pos, piece);
    const size_t used = feed_piece(parser, part, stepwise);
    FUZZ_CHECK(used <= part.size());
    // Fewer bytes than given only when the parser stopped being HTTP in this call.
    FUZZ_CHECK(used == part.size() || parser.state() != HttpParser::State::Http);
    out.consumed += used;
    pos += part.size();
    while (parser.has_completed()) out.messages.push_back(parser.pop_completed());
    if (parser.state() != HttpParser::State::Http) break;
  }
  out.clean_end = parser.finish();
  while (parser.has_completed()) out.messages.push_back(parser.pop_completed());
  out.state = parser.state();
  return out;
}

bool same(const Outcome& a, const Outcome& b) {
  if (a.state != b.state || a.clean_end != b.clean_end || a.messages.size() != b.messages.size()) return false;
  // Where a message began that could not be parsed is known only up to the call it began in.
  if (a.state != HttpParser::State::Error && a.consumed != b.consumed) return false;
  for (size_t i = 0; i < a.messages.size(); i++) {
    const HttpMessage& x = a.messages[i].message;
    const HttpMessage& y = b.messages[i].message;
    if (a.messages[i].interim != b.messages[i].interim || x.first_line != y.first_line || x.body != y.body ||
        x.headers.size() != y.headers.size())
      return false;
    for (size_t h = 0; h < x.headers.size(); h++) {
      if (x.headers[h].key != y.headers[h].key || x.headers[h].value != y.headers[h].value) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  const auto direction = input.ConsumeBool() ? HttpParser::Direction::Response : HttpParser::Direction::Request;
  const std::vector<uint8_t> methods = input.ConsumeBytes<uint8_t>(input.ConsumeIntegralInRange<size_t>(0, 4));
  std::vector<size_t> chosen;
  for (size_t n = input.ConsumeIntegralInRange<size_t>(0, 8); n > 0; n--)
    chosen.push_back(input.ConsumeIntegralInRange<size_t>(1, 64));
  const std::string bytes = input.ConsumeRemainingBytesAsString();

  const Outcome whole = parse(direction, methods, bytes, {bytes.size()});
  const Outcome bytewise = parse(direction, methods, bytes, std::vector<size_t>(bytes.size(), 1));
  std::vector<size_t> pieces;  // the chosen sizes, repeated, then the rest at once
  for (size_t covered = 0; !chosen.empty() && covered < bytes.size(); covered += pieces.back())
    pieces.push_back(chosen[pieces.size() % chosen.size()]);
  if (pieces.empty()) pieces.push_back(bytes.size());
  const Outcome split = parse(direction, methods, bytes, pieces);
  const Outcome stepwise = parse(direction, methods, bytes, pieces, true);
  FUZZ_CHECK(same(whole, bytewise));
  FUZZ_CHECK(same(whole, split));
  FUZZ_CHECK(same(whole, stepwise));
  return 0;
}
