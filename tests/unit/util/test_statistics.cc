// SPDX-License-Identifier: GPL-3.0-or-later
// Nearest-rank percentiles of known sets.
#include <cmath>

#include "expect.hh"
#include "util/statistics.hh"

TEST(Statistics, nearest_rank_percentiles_of_known_sets) {
  // Wikipedia's nearest-rank example: 15, 20, 35, 40, 50.
  const std::vector<double> five = {50, 15, 40, 20, 35};
  EXPECT_EQ(percentile(five, 5), 15);
  EXPECT_EQ(percentile(five, 30), 20);
  EXPECT_EQ(percentile(five, 40), 20);
  EXPECT_EQ(percentile(five, 50), 35);
  EXPECT_EQ(percentile(five, 100), 50);

  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  EXPECT_EQ(percentile(hundred, 50), 50);
  EXPECT_EQ(percentile(hundred, 75), 75);
  EXPECT_EQ(percentile(hundred, 95), 95);

  // 95 % of 20 values is the 19th, exactly (0.95 * 20 must not round up to 20).
  std::vector<double> twenty;
  for (int i = 1; i <= 20; ++i) twenty.push_back(i);
  EXPECT_EQ(percentile(twenty, 95), 19);
  EXPECT_EQ(percentile(twenty, 50), 10);
  EXPECT_EQ(percentile({7}, 95), 7);
}

TEST(Statistics, nan_values_are_left_out_and_none_gives_nullopt) {
  EXPECT_EQ(percentile({NAN, 3, NAN, 1, 2}, 50), 2);
  EXPECT_FALSE(percentile({}, 50));
  EXPECT_FALSE(percentile({NAN, NAN}, 95));
}
