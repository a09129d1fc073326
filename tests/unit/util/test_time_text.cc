// SPDX-License-Identifier: GPL-3.0-or-later
// Dates as text: ISO 8601 both ways and the readable UTC forms, independent of the time zone.
#include <cstdlib>

#include "expect.hh"
#include "util/time_text.hh"

TEST(TimeText, iso8601_with_milliseconds) {
  EXPECT_EQ(iso8601_from_us(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(iso8601_from_us(1700000000123456ULL), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(iso8601_from_us(1700000000999999ULL), "2023-11-14T22:13:20.999Z");  // truncated, not rounded
}

TEST(TimeText, iso8601_parsing_accepts_fractions_and_offsets) {
  EXPECT_EQ(*us_from_iso8601("2023-11-14T22:13:20.123456Z"), uint64_t{1700000000123456ULL});
  EXPECT_EQ(*us_from_iso8601("2023-11-14T23:13:20.1+01:00"), uint64_t{1700000000100000ULL});
  EXPECT_EQ(*us_from_iso8601("2023-11-14T21:13:20-0100"), uint64_t{1700000000000000ULL});
  EXPECT_EQ(*us_from_iso8601("2023-11-14T22:13:20Z"), uint64_t{1700000000000000ULL});
  EXPECT_EQ(*us_from_iso8601("2023-11-14 22:13:20z"), uint64_t{1700000000000000ULL});
  EXPECT_EQ(*us_from_iso8601("2023-11-14T22:13:20,5"), uint64_t{1700000000500000ULL});  // no offset: UTC
  EXPECT_EQ(*us_from_iso8601("2023-11-14T22:13:20.1234567Z"), uint64_t{1700000000123456ULL});
}

TEST(TimeText, iso8601_parsing_rejects_malformed_text) {
  EXPECT_FALSE(us_from_iso8601("yesterday"));
  EXPECT_FALSE(us_from_iso8601(""));
  EXPECT_FALSE(us_from_iso8601("2023-13-14T22:13:20Z"));   // month 13
  EXPECT_FALSE(us_from_iso8601("2023-11-14T24:00:00Z"));   // hour 24
  EXPECT_FALSE(us_from_iso8601("2023-11-14T22:13:20.Z"));  // a point without digits
  EXPECT_FALSE(us_from_iso8601("2023-11-14T22:13:20+1"));  // a short offset
  EXPECT_FALSE(us_from_iso8601("2023-11-14T22:13:20Z "));  // trailing text
  EXPECT_FALSE(us_from_iso8601("1969-12-31T23:59:59Z"));   // before the epoch
  EXPECT_FALSE(us_from_iso8601("2023-11-14"));             // no time
}

TEST(TimeText, readable_utc_forms) {
  EXPECT_EQ(utc_text_us(0), "1970-01-01 00:00:00.000000 UTC");
  EXPECT_EQ(utc_text_us(1700000000123456ULL), "2023-11-14 22:13:20.123456 UTC");
  EXPECT_EQ(utc_text(1700000000), "2023-11-14 22:13:20 UTC");
  EXPECT_EQ(utc_text(0), "1970-01-01 00:00:00 UTC");
}

TEST(TimeText, the_local_time_zone_changes_nothing) {
  const char* saved = std::getenv("TZ");
  const std::string saved_tz = saved ? saved : "";
  ::setenv("TZ", "Asia/Kolkata", 1);
  ::tzset();
  EXPECT_EQ(utc_text(1700000000), "2023-11-14 22:13:20 UTC");
  EXPECT_EQ(iso8601_from_us(1700000000000000ULL), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(*us_from_iso8601("2023-11-14T22:13:20Z"), uint64_t{1700000000000000ULL});
  if (saved)
    ::setenv("TZ", saved_tz.c_str(), 1);
  else
    ::unsetenv("TZ");
  ::tzset();
}
