// SPDX-License-Identifier: GPL-3.0-or-later
// Monkey Do's request heads and the server's log lines (monkey_wire.hh).
#include "monkey/monkey_wire.hh"

#include <charconv>

#include "util/exception.hh"
#include "util/text.hh"

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

std::string server_plan_line(uint64_t connection, uint32_t index, bool nodelay, const std::vector<ServerPart>& parts) {
  std::string line = std::to_string(connection) + " " + std::to_string(index) + " " + (nodelay ? "1" : "0") + " ";
  for (size_t i = 0; i < parts.size(); i++) {
    if (i) line += ",";
    line += std::to_string(parts[i].bytes);
    if (i) line += "@" + std::to_string(parts[i].pause / 1000);
  }
  return line + "\n";
}

ServerPlan parse_server_plan(std::string_view text, const std::string& source) {
  ServerPlan plan;
  size_t line_number = 0;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    line_number++;
    if (line.empty()) continue;
    const auto words = words_of(line, 4);
    const auto bad = [&] { return UserError(source + " line " + std::to_string(line_number) + ": not a plan's line"); };
    if (!words || words->size() != 4) throw bad();
    const auto connection = number((*words)[0]), index = number((*words)[1]), nodelay = number((*words)[2]);
    if (!connection || !index || *index > UINT32_MAX || !nodelay || *nodelay > 1) throw bad();
    std::vector<ServerPart> parts;
    std::string_view list = (*words)[3];
    while (!list.empty()) {
      const size_t comma = list.find(',');
      const std::string_view item = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
      const size_t at = item.find('@');
      const auto bytes = number(item.substr(0, at));
      const auto pause = at == std::string_view::npos ? std::optional<uint64_t>(0) : number(item.substr(at + 1));
      if (!bytes || !pause || *pause > kMaxServerDelayUs || parts.size() == 64) throw bad();
      parts.push_back({*bytes, static_cast<Nanos>(*pause) * 1000});
    }
    if (parts.empty()) throw bad();
    if (*nodelay) plan.nodelay.insert(*connection);
    plan.parts[{*connection, static_cast<uint32_t>(*index)}] = std::move(parts);
  }
  return plan;
}
