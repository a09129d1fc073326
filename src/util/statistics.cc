// SPDX-License-Identifier: GPL-3.0-or-later
// Percentiles (see statistics.hh).
#include "util/statistics.hh"

#include <algorithm>
#include <cmath>

std::optional<double> percentile(std::vector<double> values, double p) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty()) return std::nullopt;
  // The rank ceil(p/100 * n), computed as p * n / 100 so that whole ranks stay exact (95 % of 20
  // values is rank 19, not 20 by a rounding of 0.95 * 20).
  const double n = static_cast<double>(values.size());
  const double rank = std::ceil(std::clamp(p, 0.0, 100.0) * n / 100.0);
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, n)) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(index), values.end());
  return values[index];
}
