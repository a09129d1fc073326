// SPDX-License-Identifier: GPL-3.0-or-later
// Monkey Do's request heads and the server's log lines (monkey_wire.hh).
#include "monkey/monkey_wire.hh"

#include <charconv>

namespace {
// The space-separated words of `line`, at most `max` (more: nullopt).
std::optional<std::vector<std::string_view>> words_of(std::string_view line, size_t max) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at <= line.size()) {
    const size_t space = line.find(' ', at);
    words.push_back(line.substr(at, space == std::string_view::npos ? std::string_view::npos : space - at));
    if (words.size() > max) return std::nullopt;
    if (space == std::string_view::npos) break;
    at = space + 1;
  }
  return words;
}

std::optional<uint64_t> number(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}
}  // namespace

std::string encode_request_head(const MonkeyRequest& r) {
  return "MKY1 " + std::to_string(r.connection) + " " + std::to_string(r.index) + " " +
         std::to_string(r.request_bytes) + " " + std::to_string(r.response_bytes) + " " + std::to_string(r.delay_us) +
         "\n";
}

ParsedHead parse_request_head(std::string_view line) {
  ParsedHead head;
  const auto words = words_of(line, 6);
  if (!words || (*words)[0] != "MKY1") return head;
  if (words->size() == 3 && (*words)[1] == "stop") {
    const auto status = number((*words)[2]);
    if (status && *status <= 255) head.stop = MonkeyStop{static_cast<int>(*status)};
    return head;
  }
  if (words->size() != 6) return head;
  uint64_t v[5];
  for (size_t i = 0; i < 5; i++) {
    const auto n = number((*words)[i + 1]);
    if (!n) return head;
    v[i] = *n;
  }
  if (v[1] > UINT32_MAX || v[4] > kMaxServerDelayUs) return head;
  head.request = MonkeyRequest{v[0], static_cast<uint32_t>(v[1]), v[2], v[3], v[4]};
  return head;
}

std::string served_line(const ServedExchange& e) {
  return std::to_string(e.connection) + " " + std::to_string(e.index) + " " + std::to_string(e.first_byte) + " " +
         std::to_string(e.last_byte_sent) + " " + std::to_string(e.response_bytes) + "\n";
}

std::optional<ServedExchange> parse_served_line(std::string_view line) {
  const auto words = words_of(line, 5);
  if (!words || words->size() != 5) return std::nullopt;
  uint64_t v[5];
  for (size_t i = 0; i < 5; i++) {
    const auto n = number((*words)[i]);
    if (!n) return std::nullopt;
    v[i] = *n;
  }
  if (v[1] > UINT32_MAX || v[2] > INT64_MAX || v[3] > INT64_MAX) return std::nullopt;
  return ServedExchange{v[0], static_cast<uint32_t>(v[1]), static_cast<Nanos>(v[2]), static_cast<Nanos>(v[3]), v[4]};
}
