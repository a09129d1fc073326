// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Dates as text, one copy of each format: ISO 8601 for HAR files, and the readable UTC forms
// mm-recording show, the CA and mm-ca print. All in UTC, whatever the local time zone.
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

// ISO 8601 UTC with milliseconds, e.g. "2024-05-01T12:00:00.123Z" (`us`: microseconds since
// the Unix epoch; the sub-millisecond part is dropped).
std::string iso8601_from_us(uint64_t us);

// Microseconds since the epoch from ISO 8601: "YYYY-MM-DD", 'T' or a space, "hh:mm:ss", an
// optional fraction ('.' or ',', any number of digits, microseconds kept), an optional "Z"/"z"
// or "+hh:mm"/"-hhmm" offset. nullopt if malformed, out of range or before 1970.
std::optional<uint64_t> us_from_iso8601(std::string_view text);

// "2024-05-01 12:00:00.123456 UTC": microseconds since the epoch, to the microsecond.
std::string utc_text_us(uint64_t us);

// "2024-05-01 12:00:00 UTC": a time_t, to the second (strftime's %Y: no zero padding of years
// before 1000).
std::string utc_text(std::time_t time);
