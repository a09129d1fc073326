// SPDX-License-Identifier: GPL-3.0-or-later
// A link direction's figures for a run, from an mm-link log.
#include <cmath>

#include "expect.hh"
#include "sweep/flow_figures.hh"

TEST(FlowFigures, throughput_delay_and_loss_of_a_log) {
  // 12 Mbit/s of opportunities (1500 bytes a ms) for 1 s; 500 packets of 1500 bytes arrive, one
  // every 2 ms, each delayed 4 ms in the queue but the last hundred (14 ms); 10 dropped, 5 marked.
  std::string text = "# base timestamp: 0\n";
  for (int t = 0; t < 1000; t++) text += std::to_string(t) + " # 1500\n";
  for (int i = 0; i < 500; i++) {
    const int delay = i < 400 ? 4 : 14;
    text += std::to_string(2 * i) + " + 1500\n";
    text += std::to_string(2 * i + delay) + " - 1500 " + std::to_string(delay) + "\n";
  }
  text += "500 d 10 15000\n500 m 5 7500\n";
  const FlowFigures f = flow_figures(LinkLog::parse(text, "log"), 20);
  EXPECT_EQ(f.arrived_packets, 500);
  EXPECT_EQ(f.delivered_packets, 500);
  EXPECT_EQ(f.dropped_packets, 10);
  EXPECT_EQ(f.marked_packets, 5);
  EXPECT_NEAR(f.duration_s, 1.012, 1e-9);  // the first arrival (0) to the last departure (1012)
  EXPECT_NEAR(f.throughput_mbps, 500 * 1500 * 8 / 1.012 / 1e6, 1e-9);
  EXPECT_NEAR(f.capacity_mbps, 1000 * 1500 * 8 / 1.012 / 1e6, 1e-9);  // the opportunities within it
  EXPECT_NEAR(*f.delay_mean_ms, 20 + (400 * 4 + 100 * 14) / 500.0, 1e-9);
  EXPECT_EQ(*f.delay_p95_ms, 34);  // 14 ms in the queue + 20 of propagation
  EXPECT_NEAR(f.loss_rate(), 10 / 500.0, 1e-12);
  ASSERT_EQ(f.throughput_series_mbps.size(), 3u);  // 0.5 s bins over 1.012 s
  EXPECT_NEAR(f.throughput_series_mbps[0], 248 * 1500 * 8 / 0.5 / 1e6, 1e-9);
  const std::optional<FlowFigures> back = flow_from_json(flow_json(f));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->throughput_mbps, f.throughput_mbps);
  EXPECT_EQ(back->delay_p95_ms, f.delay_p95_ms);
  EXPECT_EQ(back->throughput_series_mbps, f.throughput_series_mbps);
}

TEST(FlowFigures, a_link_that_delivered_nothing_has_no_delay) {
  const FlowFigures f = flow_figures(LinkLog::parse("# base timestamp: 0\n0 # 1500\n5 + 100\n6 d 1 100\n", "log"), 10);
  EXPECT_EQ(f.arrived_packets, 1);
  EXPECT_EQ(f.throughput_mbps, 0);
  EXPECT_FALSE(f.delay_mean_ms.has_value());
  EXPECT_FALSE(f.delay_p95_ms.has_value());
  EXPECT_EQ(f.loss_rate(), 1);
  const std::optional<FlowFigures> back = flow_from_json(flow_json(f));
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->delay_p95_ms.has_value());
  EXPECT_FALSE(flow_from_json(nlohmann::json::array()).has_value());
  EXPECT_FALSE(flow_from_json(nlohmann::json{{"throughput_mbps", "x"}}).has_value());
}
