// SPDX-License-Identifier: GPL-3.0-or-later
// Summaries of a sweep: the optimal page-load time of the paper (§5.1.2), each configuration's
// medians and percentiles over its ok loads, the CSV files; and the charts drawn from them.
#include <cairo.h>

#include "expect.hh"
#include "sweep/sweep_plots.hh"
#include "sweep/sweep_summary.hh"
#include "temp_files.hh"
#include "util/file_descriptor.hh"

namespace {
LoadResult load_of(LoadResult::Status status, std::optional<double> plt, std::optional<double> bytes = {},
                   std::optional<double> si = {}) {
  LoadResult load;
  load.url = "http://a.test/";
  load.status = status;
  load.plt_ms = plt;
  load.bytes = bytes;
  load.speed_index_ms = si;
  if (status != LoadResult::Status::Ok) load.reason = "no load event";
  return load;
}
constexpr auto kOk = LoadResult::Status::Ok;
}  // namespace

TEST(SweepSummary, optimal_is_rtt_plus_transfer_plus_browser_time) {
  const Configuration c{Variant{}, true, 8, 100, 0.01};
  // 1,000,000 bytes at 8 Mbit/s: 1000 ms; loss does not enter the optimal.
  EXPECT_DOUBLE_EQ(*optimal_plt_ms(c, 250.0, 1e6), 100 + 1000 + 250);
  EXPECT_FALSE(optimal_plt_ms(c, std::nullopt, 1e6));
  EXPECT_FALSE(optimal_plt_ms(c, 250.0, std::nullopt));
  EXPECT_DOUBLE_EQ(*optimal_plt_ms(Configuration{Variant{}, false, 0, 0, 0}, 250.0, std::nullopt), 250);
}

TEST(SweepSummary, rows_count_loads_and_take_metrics_over_ok_loads) {
  const Configuration base{Variant{}, false, 0, 0, 0};
  const Configuration slow{Variant{}, true, 8, 100, 0};
  const Configuration h2{Variant{Protocol::kH2, false}, true, 8, 100, 0};  // no h2 baseline: no optimal
  std::map<std::string, std::vector<LoadResult>> loads;
  loads[base.id()] = {load_of(kOk, 200, 1e6), load_of(kOk, 300, 1e6), load_of(kOk, 250, 2e6)};
  loads[slow.id()] = {load_of(kOk, 2000, 1e6, 1500), load_of(kOk, 3000, 1e6, 1700), load_of(kOk, 4000, 1e6, 1600),
                      load_of(LoadResult::Status::Timeout, std::nullopt)};
  loads[h2.id()] = {load_of(kOk, 1000)};
  for (LoadResult& load : loads[slow.id()]) load.host = HostFacts{"node1", "6.1", "CPU, 2 GHz", 2, 0.5, "0.1"};
  const auto rows = summarize({base, slow, h2}, loads);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].loads_ok, 3u);
  EXPECT_DOUBLE_EQ(*rows[0].optimal_plt_ms, 250);
  EXPECT_DOUBLE_EQ(*rows[0].plt_ratio, 1);
  EXPECT_EQ(rows[1].loads_ok, 3u);
  EXPECT_EQ(rows[1].loads_total, 4u);
  EXPECT_EQ(rows[1].hosts, 1u);
  EXPECT_EQ(rows[0].hosts, 0u);
  EXPECT_DOUBLE_EQ(*rows[1].plt_median_ms, 3000);
  EXPECT_DOUBLE_EQ(*rows[1].plt_p95_ms, 4000);
  EXPECT_DOUBLE_EQ(*rows[1].si_median_ms, 1600);
  EXPECT_DOUBLE_EQ(*rows[1].site_bytes, 1e6);
  EXPECT_DOUBLE_EQ(*rows[1].optimal_plt_ms, 100 + 1000 + 250);
  EXPECT_DOUBLE_EQ(*rows[1].plt_ratio, 3000.0 / 1350);
  EXPECT_DOUBLE_EQ(*rows[1].optimal_si_ms, 1350);
  EXPECT_DOUBLE_EQ(*rows[1].si_ratio, 1600.0 / 1350);
  EXPECT_FALSE(rows[2].optimal_plt_ms);
  EXPECT_FALSE(rows[2].plt_ratio);

  const std::string summary = summary_csv(rows, "");
  EXPECT_EQ(summary.substr(0, summary.find('\n')),
            "configuration,protocol,servers,rate_mbps,rtt_ms,loss,queue,loads_ok,loads_total,plt_median_ms,plt_p75_ms,"
            "plt_p95_ms,si_median_ms,browser_ms,site_bytes,optimal_plt_ms,plt_ratio_to_optimal,optimal_si_ms,"
            "si_ratio_to_optimal,loads_asked,hosts");
  EXPECT_NE(summary.find("\nh1-multi-8mbit-100ms-loss0,h1,multi,8,100,0,infinite,3,4,3000.0,4000.0,4000.0,1600.0,"
                         "250.0,1000000,1350.0,2.222,1350.0,1.185,0,1\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(
      summary.find("\nh2-multi-8mbit-100ms-loss0,h2,multi,8,100,0,infinite,1,1,1000.0,1000.0,1000.0,,,,,,,,0,0\n"),
      std::string::npos)
      << summary;

  const std::string csv = loads_csv({base, slow, h2}, "codel", loads);
  size_t lines = 0;
  for (char ch : csv) lines += ch == '\n';
  EXPECT_EQ(lines, 1u + 3 + 4 + 1);
  EXPECT_EQ(csv.rfind("configuration,protocol,servers,rate_mbps,rtt_ms,loss,queue,url,run,status", 0), 0u) << csv;
  EXPECT_NE(csv.find(",protocols,host,kernel,cpu,cpus,load1,mahimahi\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nh1-multi-8mbit-100ms-loss0,h1,multi,8,100,0,codel,http://a.test/,1,ok,"), std::string::npos)
      << csv;
  // Where each load ran: node1 for those of the slow configuration, nothing recorded for the others.
  EXPECT_NE(csv.find(",node1,6.1,\"CPU, 2 GHz\",2,0.50,0.1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",,,,,,\n"), std::string::npos) << csv;
}

TEST(SweepPlots, charts_draw_cdfs_per_rate_and_lines_vs_rtt) {
  std::vector<Configuration> configs = {Configuration{Variant{}, false, 0, 0, 0}};
  std::map<std::string, std::vector<LoadResult>> loads;
  loads[configs[0].id()] = {load_of(kOk, 200, 1e5)};
  for (double rate : {1.0, 14.0})
    for (double rtt : {30.0, 120.0}) {
      configs.push_back(Configuration{Variant{}, true, rate, rtt, 0});
      loads[configs.back().id()] = {load_of(kOk, 1000 + rtt, 1e5, 800), load_of(kOk, 1100 + rtt, 1e5, 900)};
    }
  const auto rows = summarize(configs, loads);
  const auto charts = sweep_charts(rows, loads);
  std::vector<std::string> names;
  for (const auto& c : charts) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"plt-cdf-1mbit", "plt-cdf-14mbit", "median-plt-vs-rtt", "plt-ratio-vs-rtt",
                                             "si-ratio-vs-rtt"}));
  const Chart& cdf = charts[0].chart;
  ASSERT_EQ(cdf.series.size(), 2u);
  EXPECT_EQ(cdf.series[0].label, "30 ms");
  EXPECT_EQ(cdf.series[0].points.back(), (std::pair<double, double>{1.13, 1.0}));
  const Chart& median = charts[2].chart;
  ASSERT_EQ(median.series.size(), 2u);
  EXPECT_EQ(median.series[1].label, "14 Mbit/s");
  ASSERT_EQ(median.series[1].points.size(), 2u);
  EXPECT_DOUBLE_EQ(median.series[1].points[1].first, 120);
  EXPECT_DOUBLE_EQ(median.series[1].points[1].second, 1.12);  // nearest-rank median of {1120, 1220}
  EXPECT_TRUE(charts[3].chart.note.empty());
  // Drawn as PNG and SVG.
  TempDir dir;
  const std::string png = (dir.path / "m.png").string(), svg = (dir.path / "m.svg").string();
  render_chart(median, png);
  render_chart(median, svg);
  EXPECT_EQ(read_small_file(png).substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  cairo_surface_t* surface = cairo_image_surface_create_from_png(png.c_str());
  EXPECT_EQ(cairo_surface_status(surface), CAIRO_STATUS_SUCCESS);
  cairo_surface_destroy(surface);
  EXPECT_NE(read_small_file(svg).find("</svg>"), std::string::npos);

  // No successful load: the charts say so instead of drawing nothing.
  std::map<std::string, std::vector<LoadResult>> failed;
  failed[configs[1].id()] = {load_of(LoadResult::Status::Error, std::nullopt)};
  const auto empty = sweep_charts(summarize(configs, failed), failed);
  EXPECT_EQ(empty[0].chart.note, "no successful loads");
  EXPECT_EQ(empty[2].chart.note, "no successful loads");
}

// After --merge of an HTTP/1.1 and an HTTP/2 sweep: both protocols' ratios on one chart, each
// line labelled with its protocol, h2's dashed in the same colour as h1's at that rate; a sweep
// over loss rates also gets PLT vs loss.
TEST(SweepPlots, merged_protocols_share_charts_and_loss_gets_its_own_axis) {
  std::vector<Configuration> configs;
  std::map<std::string, std::vector<LoadResult>> loads;
  for (bool http2 : {false, true}) {
    configs.push_back(Configuration{Variant{http2 ? Protocol::kH2 : Protocol::kH1, false}, false, 0, 0, 0});
    loads[configs.back().id()] = {load_of(kOk, 200, 1e5)};
    for (double loss : {0.0, 0.02})
      for (double rtt : {30.0, 300.0}) {
        configs.push_back(Configuration{Variant{http2 ? Protocol::kH2 : Protocol::kH1, false}, true, 14, rtt, loss});
        loads[configs.back().id()] = {load_of(kOk, (http2 ? 900 : 1000) + rtt * 10 + loss * 1e4, 1e5)};
      }
  }
  const auto charts = sweep_charts(summarize(configs, loads), loads);
  const auto chart_named = [&](const std::string& name) -> const Chart& {
    for (const auto& c : charts)
      if (c.name == name) return c.chart;
    ADD_FAILURE() << "no chart " << name;
    return charts.front().chart;
  };
  const Chart& ratio = chart_named("plt-ratio-vs-rtt");
  ASSERT_EQ(ratio.series.size(), 4u);
  EXPECT_EQ(ratio.series[0].label, "h1, 14 Mbit/s, loss 0 %");
  EXPECT_EQ(ratio.series[2].label, "h2, 14 Mbit/s, loss 0 %");
  EXPECT_EQ(ratio.series[0].style, Series::Style::Line);
  EXPECT_EQ(ratio.series[2].style, Series::Style::DashedLine);
  EXPECT_EQ(ratio.series[0].color.r, ratio.series[2].color.r);
  // h1 at 300 ms, no loss: 4000 ms against 300 + 1e5 * 8 / 14e6 s + 200 ms.
  ASSERT_EQ(ratio.series[0].points.size(), 2u);
  EXPECT_NEAR(ratio.series[0].points[1].second, 4000 / (300 + 1e5 * 8 / 14e3 + 200), 1e-9);
  const Chart& by_loss = chart_named("median-plt-vs-loss");
  EXPECT_EQ(by_loss.x_label, "loss rate (%)");
  ASSERT_EQ(by_loss.series.size(), 4u);
  EXPECT_EQ(by_loss.series[1].label, "h1, 14 Mbit/s, 300 ms");
  ASSERT_EQ(by_loss.series[1].points.size(), 2u);
  EXPECT_DOUBLE_EQ(by_loss.series[1].points[1].first, 2);
  EXPECT_DOUBLE_EQ(by_loss.series[1].points[1].second, 4.2);
}

// Cumulus's optimal is the page's: h1's baseline, not the unemulated Cumulus load.
TEST(SweepSummary, cumulus_takes_the_optimal_of_h1s_baseline) {
  const Configuration h1_base{Variant{}, false, 0, 0, 0};
  const Configuration cumulus_base{Variant{Protocol::kCumulus, false}, false, 0, 0, 0};
  const Configuration cumulus{Variant{Protocol::kCumulus, false}, true, 8, 100, 0};
  std::map<std::string, std::vector<LoadResult>> loads;
  loads[h1_base.id()] = {load_of(kOk, 250, 1e6)};
  loads[cumulus_base.id()] = {load_of(kOk, 900, 1e6)};
  loads[cumulus.id()] = {load_of(kOk, 2700, 1e6)};
  const auto rows = summarize({h1_base, cumulus_base, cumulus}, loads);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(*rows[2].optimal_plt_ms, 100 + 1000 + 250);
  EXPECT_DOUBLE_EQ(*rows[2].plt_ratio, 2);
  // Without an h1 baseline, its own.
  const auto alone = summarize({cumulus_base, cumulus}, loads);
  EXPECT_DOUBLE_EQ(*alone[1].optimal_plt_ms, 100 + 1000 + 900);
}
