// SPDX-License-Identifier: GPL-3.0-or-later
// The named profiles carry each tool's numbers with the stated conversions: DevTools' factors,
// Lighthouse's 1024-bit kbps and its stated round trip (not its request latency).
#include <gtest/gtest.h>

#include <set>

#include "packet/presets.hh"

TEST(NetworkPresets, each_tools_numbers_with_its_conversions) {
  const auto slow4g = find_network_preset("Lighthouse:Slow4G");
  ASSERT_TRUE(slow4g.has_value());
  EXPECT_DOUBLE_EQ(slow4g->rtt_ms, 150);  // not 562.5
  EXPECT_DOUBLE_EQ(slow4g->down_bps, 1474.56 * 1024);
  EXPECT_DOUBLE_EQ(slow4g->up_bps, 675 * 1024);
  const auto devtools = find_network_preset("devtools:slow3g");
  ASSERT_TRUE(devtools.has_value());
  EXPECT_DOUBLE_EQ(devtools->down_bps, 400'000);  // 500 kbps x 0.8
  EXPECT_DOUBLE_EQ(devtools->rtt_ms, 400);        // not 2000
  const auto wpt = find_network_preset("wpt:3G");
  ASSERT_TRUE(wpt.has_value());
  EXPECT_DOUBLE_EQ(wpt->down_bps, 1.6e6);
  EXPECT_DOUBLE_EQ(wpt->up_bps, 768'000);
  EXPECT_DOUBLE_EQ(wpt->rtt_ms, 300);
  const auto cable = find_network_preset("browsertime:cable");
  ASSERT_TRUE(cable.has_value());
  EXPECT_DOUBLE_EQ(cable->rtt_ms, 14);
  EXPECT_FALSE(find_network_preset("wpt:5g").has_value());
  EXPECT_FALSE(find_network_preset("3g").has_value());
}

TEST(NetworkPresets, names_are_unique_lower_case_and_values_sane) {
  std::set<std::string> names;
  for (const NetworkPreset& p : network_presets()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    for (char c : p.name) EXPECT_FALSE(c >= 'A' && c <= 'Z') << p.name;
    EXPECT_GT(p.down_bps, 1000) << p.name;
    EXPECT_GT(p.up_bps, 1000) << p.name;
    EXPECT_GT(p.rtt_ms, 0) << p.name;
    EXPECT_FALSE(p.source.empty()) << p.name;
  }
  EXPECT_EQ(names.size(), 26u);
}
