// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Statistics of measured values, one copy each: the graph tools' delay percentiles and the page
// loads' summaries use the same definition.
#include <optional>
#include <vector>

// Nearest-rank percentile (0 < p <= 100; p is clamped into that range) of the values that are not
// NaN, which need not be sorted: the smallest value with at least p % of the values at or below
// it. nullopt when there is no such value.
std::optional<double> percentile(std::vector<double> values, double p);
