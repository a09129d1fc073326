// SPDX-License-Identifier: GPL-3.0-or-later
// Date formatting and ISO 8601 parsing without the C library's locale or time zone.
#include "util/time_text.hh"

#include <cstdio>

namespace {
std::tm utc_parts(std::time_t seconds) {
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  return tm;
}

// Reads text[pos...] left to right: fixed-width digit fields and single separators.
class IsoReader {
 public:
  explicit IsoReader(std::string_view text) : text_(text) {}

  std::optional<int> digits(size_t n) {
    if (text_.size() - pos_ < n) return std::nullopt;
    int value = 0;
    for (size_t i = 0; i < n; i++) {
      const char c = text_[pos_ + i];
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    pos_ += n;
    return value;
  }
  bool expect(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      pos_++;
      return true;
    }
    return false;
  }
  bool at_digit() const { return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; }
  char next() { return text_[pos_++]; }
  bool at_sign() const { return pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'); }
  bool at_end() const { return pos_ == text_.size(); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

// The fraction after '.' or ',' as microseconds (digits past the sixth ignored); nullopt if no digit.
std::optional<int64_t> fraction_us(IsoReader& in) {
  int64_t us = 0, scale = 100000;
  size_t count = 0;
  while (in.at_digit()) {
    us += (in.next() - '0') * scale;
    scale /= 10;
    count++;
  }
  if (count == 0) return std::nullopt;
  return us;
}

// The offset from UTC in seconds: "Z", "z", "+hh:mm", "-hhmm", or nothing (UTC).
std::optional<int64_t> offset_seconds(IsoReader& in) {
  if (in.expect('Z') || in.expect('z') || !in.at_sign()) return 0;
  const int sign = in.next() == '-' ? -1 : 1;
  auto hours = in.digits(2);
  if (!hours) return std::nullopt;
  in.expect(':');
  auto minutes = in.digits(2);
  if (!minutes) return std::nullopt;
  return sign * (*hours * 3600 + *minutes * 60);
}
}  // namespace

std::string iso8601_from_us(uint64_t us) {
  const std::tm tm = utc_parts(static_cast<time_t>(us / 1000000));
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(us % 1000000 / 1000));
  return text;
}

std::optional<uint64_t> us_from_iso8601(std::string_view text) {
  IsoReader in(text);
  auto year = in.digits(4);
  if (!year || !in.expect('-')) return std::nullopt;
  auto month = in.digits(2);
  if (!month || !in.expect('-')) return std::nullopt;
  auto day = in.digits(2);
  if (!day || !(in.expect('T') || in.expect(' '))) return std::nullopt;
  auto hour = in.digits(2);
  if (!hour || !in.expect(':')) return std::nullopt;
  auto minute = in.digits(2);
  if (!minute || !in.expect(':')) return std::nullopt;
  auto second = in.digits(2);
  if (!second) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60)
    return std::nullopt;
  int64_t fraction = 0;
  if (in.expect('.') || in.expect(',')) {
    auto us = fraction_us(in);
    if (!us) return std::nullopt;
    fraction = *us;
  }
  const auto offset = offset_seconds(in);
  if (!offset || !in.at_end()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  const int64_t seconds = static_cast<int64_t>(timegm(&tm)) - *offset;
  if (seconds < 0) return std::nullopt;
  return static_cast<uint64_t>(seconds) * 1000000 + static_cast<uint64_t>(fraction);
}

std::string utc_text_us(uint64_t us) {
  const std::tm tm = utc_parts(static_cast<time_t>(us / 1000000));
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%02d.%06u UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(us % 1000000));
  return text;
}

std::string utc_text(std::time_t time) {
  const std::tm tm = utc_parts(time);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}
