// SPDX-License-Identifier: GPL-3.0-or-later
// The servers' timing per origin, and mm-delay's map of their distances.
#include "expect.hh"
#include "packet/destination_delay.hh"
#include "recording/inspect.hh"
#include "recording/timings.hh"
#include "samples.hh"

namespace {
RecordingEntry timed(const std::string& ip, uint16_t port, const std::string& host, uint64_t start_ms,
                     std::optional<uint64_t> rtt_us, std::optional<uint64_t> think_us, size_t bytes = 10) {
  RecordedPair p = sample_pair(0);
  p.ip = ip;
  p.port = port;
  p.request.headers = {{"Host", host}};
  p.response.body = std::string(bytes, 'x');
  p.request_start_us = 1'700'000'000'000'000ULL + start_ms * 1000;
  p.request_end_us = p.request_start_us + 100;
  p.response_first_byte_us = p.request_end_us + rtt_us.value_or(0) + think_us.value_or(0);
  p.response_last_byte_us = p.response_first_byte_us + 1000;
  p.server_rtt_us = rtt_us;
  p.server_think_us = think_us;
  p.server_connect_us = std::nullopt;
  return {"f" + std::to_string(start_ms), p};
}
}  // namespace

TEST(Timings, per_origin_smallest_rtt_and_think_percentiles_in_order_of_first_request) {
  std::vector<RecordingEntry> entries = {
      timed("10.0.0.2", 443, "b.test", 30, 41000, 0), timed("10.0.0.1", 80, "a.test", 0, 20500, 100000),
      timed("10.0.0.1", 80, "www.a.test", 10, 20100, 5000), timed("10.0.0.1", 80, "a.test", 20, 20900, 7000),
      timed("10.0.0.3", 80, "c.test", 40, std::nullopt, std::nullopt, 7)};
  const auto origins = origin_timings(entries);
  ASSERT_EQ(origins.size(), 3u);
  EXPECT_EQ(origins[0].ip, "10.0.0.1");
  EXPECT_EQ(origins[0].names, (std::vector<std::string>{"a.test", "www.a.test"}));
  EXPECT_EQ(origins[0].responses, 3u);
  EXPECT_EQ(origins[0].bytes, 30u);
  EXPECT_DOUBLE_EQ(*origins[0].rtt_ms, 20.1);
  EXPECT_EQ(origins[0].timed, 3u);
  EXPECT_DOUBLE_EQ(*origins[0].think_median_ms, 7.0);
  EXPECT_DOUBLE_EQ(*origins[0].think_p90_ms, 100.0);
  EXPECT_EQ(origins[1].ip, "10.0.0.2");
  EXPECT_DOUBLE_EQ(*origins[1].think_median_ms, 0.0);  // a think time of 0 is a measured value
  EXPECT_FALSE(origins[2].rtt_ms.has_value());
  EXPECT_EQ(origins[2].timed, 0u);
  EXPECT_FALSE(origins[2].think_median_ms.has_value());
}

TEST(Timings, destinations_map_puts_each_address_at_half_its_smallest_rtt_and_parses_back) {
  std::vector<RecordingEntry> entries = {
      timed("10.0.0.1", 80, "a.test", 0, 20000, 0), timed("10.0.0.1", 443, "a.test", 1, 18500, 0),
      timed("10.0.0.2", 443, "b.test", 2, 41000, 0), timed("10.0.0.3", 80, "c.test", 3, std::nullopt, std::nullopt)};
  const std::string map = destinations_map(origin_timings(entries));
  EXPECT_NE(map.find("10.0.0.1 9.250  # RTT 18.5 ms: a.test\n"), std::string::npos) << map;
  EXPECT_NE(map.find("10.0.0.2 20.500  # RTT 41.0 ms: b.test\n"), std::string::npos) << map;
  EXPECT_NE(map.find("# 10.0.0.3:80: no round trip measured"), std::string::npos) << map;
  EXPECT_EQ(map.find("\n10.0.0.3"), std::string::npos);
  // What mm-delay --destinations reads.
  const auto rules = parse_destination_file(map, "map");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0], (DestinationRule{0x0a000001, 32, 0, 9'250'000, 9'250'000}));
  EXPECT_EQ(rules[1], (DestinationRule{0x0a000002, 32, 0, 20'500'000, 20'500'000}));
}

TEST(Timings, report_lists_origins_and_the_longest_chain_through_documents_and_scripts) {
  auto page = timed("10.0.0.1", 80, "a.test", 0, 20000, 50000);
  page.pair.response.headers = {{"Content-Type", "text/html"}};
  auto image = timed("10.0.0.2", 80, "img.test", 80, 30000, 1000);  // ends at 111 ms; an image leads nowhere
  image.pair.response.headers = {{"Content-Type", "image/svg+xml"}};
  auto script = timed("10.0.0.2", 80, "img.test", 75, 30000, 2000);
  script.pair.response.headers = {{"Content-Type", "application/javascript"}};
  auto late = timed("10.0.0.1", 80, "a.test", 120, 20000, 0);  // after both: the script is its parent
  const std::string report = timings_report({page, image, script, late});
  EXPECT_NE(report.find("ORIGIN"), std::string::npos);
  EXPECT_NE(report.find("3 levels"), std::string::npos) << report;
  EXPECT_NE(report.find("round trips 70.0 ms, think times 52.0 ms along it"), std::string::npos) << report;
  EXPECT_EQ(report.find("No server timing"), std::string::npos);
  RecordingEntry untimed = timed("10.0.0.1", 80, "a.test", 0, std::nullopt, std::nullopt);
  EXPECT_NE(timings_report({untimed}).find("No server timing in this recording"), std::string::npos);
}
