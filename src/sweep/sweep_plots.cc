// SPDX-License-Identifier: GPL-3.0-or-later
// The charts of a sweep (see sweep_plots.hh).
#include "sweep/sweep_plots.hh"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "util/exception.hh"

namespace {
struct Labels {
  bool variants = false, losses = false;  // whether labels must name them (more than one swept)
};

std::string variant_label(const Variant& v) { return v.protocol() + (v.single_server ? " single-server" : ""); }

// Solid for the first variant, then dashed, dotted for h3 and dash-dotted for Cumulus, so that
// the h1, h2, h3 and Cumulus lines of one rate differ.
Series::Style line_style(const Variant& v, const Variant& first) {
  if (v == first) return Series::Style::Line;
  if (v.protocol_kind == first.protocol_kind) return Series::Style::DashedLine;  // single-server
  if (v.protocol_kind == Protocol::kH3) return Series::Style::DottedLine;
  if (v.protocol_kind == Protocol::kCumulus) return Series::Style::DashDotLine;
  return Series::Style::DashedLine;
}

std::string loss_label(double loss) { return "loss " + number_text(loss * 100) + " %"; }

// What a line chart's x axis is: the RTT (one series per variant, rate and loss rate) or the
// loss rate (one series per variant, rate and RTT).
enum class Axis { Rtt, Loss };

// A chart of `value` vs `axis`: one series per combination of the other dimensions, points in
// axis order. Colours follow the rate; variants other than the first are dashed.
Chart versus(const std::vector<SummaryRow>& rows, const Labels& labels, const Variant& first, Axis axis,
             const std::function<std::optional<double>(const SummaryRow&)>& value, const std::string& title,
             const std::string& y_label) {
  Chart chart{title, axis == Axis::Rtt ? "RTT (ms)" : "loss rate (%)", y_label, false, {}, "", {}, {}};
  std::vector<double> rates;
  for (const SummaryRow& r : rows)
    if (r.config.emulated && std::find(rates.begin(), rates.end(), r.config.rate_mbps) == rates.end())
      rates.push_back(r.config.rate_mbps);
  // The dimension a series holds fixed besides variant and rate, and the point's x.
  const auto fixed = [axis](const Configuration& c) { return axis == Axis::Rtt ? c.loss : c.rtt_ms; };
  const auto x_of = [axis](const Configuration& c) { return axis == Axis::Rtt ? c.rtt_ms : c.loss * 100; };
  std::set<std::string> done;
  for (const SummaryRow& row : rows) {
    if (!row.config.emulated) continue;
    const Configuration& key = row.config;
    std::string label = number_text(key.rate_mbps) + " Mbit/s";
    if (axis == Axis::Loss) label += ", " + number_text(key.rtt_ms) + " ms";
    if (axis == Axis::Rtt && labels.losses) label += ", " + loss_label(key.loss);
    if (labels.variants) label = variant_label(key.variant) + ", " + label;
    if (!done.insert(label).second) continue;
    const size_t rate_index = std::find(rates.begin(), rates.end(), key.rate_mbps) - rates.begin();
    Series series{label, line_style(key.variant, first), palette_color(rate_index), {}};
    for (const SummaryRow& r : rows) {
      if (!r.config.emulated || r.config.variant != key.variant || r.config.rate_mbps != key.rate_mbps ||
          fixed(r.config) != fixed(key))
        continue;
      if (const auto v = value(r)) series.points.emplace_back(x_of(r.config), *v);
    }
    std::sort(series.points.begin(), series.points.end());
    if (series.points.empty()) continue;
    if (series.points.size() == 1) series.style = Series::Style::Dots;
    chart.series.push_back(series);
  }
  if (chart.series.empty()) chart.note = "no successful loads";
  return chart;
}

std::optional<double> median_plt_s(const SummaryRow& r) {
  if (!r.plt_median_ms) return std::nullopt;
  return *r.plt_median_ms / 1000;
}
}  // namespace

std::vector<NamedChart> sweep_charts(const std::vector<SummaryRow>& rows,
                                     const std::map<std::string, std::vector<LoadResult>>& loads) {
  Labels labels;
  std::optional<Variant> first;
  std::set<double> losses;
  std::vector<double> rates;
  for (const SummaryRow& r : rows) {
    if (!first) first = r.config.variant;
    labels.variants = labels.variants || r.config.variant != *first;
    if (!r.config.emulated) continue;
    losses.insert(r.config.loss);
    if (std::find(rates.begin(), rates.end(), r.config.rate_mbps) == rates.end()) rates.push_back(r.config.rate_mbps);
  }
  labels.losses = losses.size() > 1;
  const Variant first_variant = first.value_or(Variant{});
  std::vector<NamedChart> charts;
  std::sort(rates.begin(), rates.end());
  for (double rate : rates) {
    Chart chart{"Page-load time CDF at " + number_text(rate) + " Mbit/s",
                "page-load time (s)",
                "fraction of loads",
                false,
                {},
                "",
                {},
                {}};
    size_t index = 0;
    for (const SummaryRow& row : rows) {
      if (!row.config.emulated || row.config.rate_mbps != rate) continue;
      std::string label = number_text(row.config.rtt_ms) + " ms";
      if (labels.losses) label += ", " + loss_label(row.config.loss);
      if (labels.variants) label = variant_label(row.config.variant) + ", " + label;
      std::vector<double> plts;
      const auto found = loads.find(row.config.id());
      if (found != loads.end())
        for (const LoadResult& load : found->second)
          if (load.status == LoadResult::Status::Ok && load.plt_ms) plts.push_back(*load.plt_ms / 1000);
      const Color color = palette_color(index++);
      if (plts.empty()) continue;
      std::sort(plts.begin(), plts.end());
      Series series{label, line_style(row.config.variant, first_variant), color, {}};
      // A step function: at each PLT the fraction rises by 1/n.
      for (size_t i = 0; i < plts.size(); i++) {
        series.points.emplace_back(plts[i], static_cast<double>(i) / plts.size());
        series.points.emplace_back(plts[i], static_cast<double>(i + 1) / plts.size());
      }
      chart.series.push_back(series);
    }
    if (chart.series.empty()) chart.note = "no successful loads";
    charts.push_back({"plt-cdf-" + number_text(rate) + "mbit", chart});
  }
  charts.push_back({"median-plt-vs-rtt", versus(rows, labels, first_variant, Axis::Rtt, median_plt_s,
                                                "Median page-load time vs RTT", "median page-load time (s)")});
  charts.push_back(
      {"plt-ratio-vs-rtt", versus(
                               rows, labels, first_variant, Axis::Rtt, [](const SummaryRow& r) { return r.plt_ratio; },
                               "Median page-load time / optimal vs RTT", "median PLT / optimal PLT")});
  charts.push_back(
      {"si-ratio-vs-rtt", versus(
                              rows, labels, first_variant, Axis::Rtt, [](const SummaryRow& r) { return r.si_ratio; },
                              "Median speed index / optimal bound vs RTT", "median SI / optimal SI bound")});
  if (labels.losses)
    charts.push_back({"median-plt-vs-loss", versus(rows, labels, first_variant, Axis::Loss, median_plt_s,
                                                   "Median page-load time vs loss rate", "median page-load time (s)")});
  return charts;
}

void write_named_charts(const std::filesystem::path& dir, const std::vector<NamedChart>& charts) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw UserError("cannot create " + dir.string() + ": " + error.message());
  for (const NamedChart& named : charts) {
    for (const char* extension : {".png", ".svg"}) {
      const std::filesystem::path final_path = dir / (named.name + extension);
      const std::filesystem::path temporary = dir / (".tmp-" + named.name + extension);
      render_chart(named.chart, temporary.string());
      std::filesystem::rename(temporary, final_path, error);
      if (error) throw UserError("cannot write " + final_path.string() + ": " + error.message());
    }
  }
}
