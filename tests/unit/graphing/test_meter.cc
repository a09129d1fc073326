// SPDX-License-Identifier: GPL-3.0-or-later
// The live meters: delay classes, slots in bounded memory (a sliding window, a whole run that
// coarsens), a meter's charts against mm-throughput-graph's and mm-delay-graph's of the same
// events, and the smoothed scale.
#include <cairo.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "expect.hh"
#include "graphing/delay_plot.hh"
#include "graphing/meter.hh"
#include "graphing/throughput_plot.hh"

namespace {
constexpr Nanos kMs = kNanosPerMs;

const Series* find_series(const Chart& chart, const std::string& prefix) {
  for (const Series& s : chart.series) {
    if (s.label.rfind(prefix, 0) == 0) return &s;
  }
  return nullptr;
}

// Every point of every series is a number or a gap (NaN), never infinite.
void expect_finite(const Chart& chart) {
  for (const Series& s : chart.series) {
    for (auto [x, y] : s.points) {
      EXPECT_TRUE(std::isfinite(x)) << s.label;
      EXPECT_FALSE(std::isinf(y)) << s.label << " at " << x;
    }
  }
}

// A saturated 12 Mbit/s link for `ms`: a 1500-byte packet arrives and leaves each ms, after
// `delay` ms in the queue; its log, as mm-link writes it, in `log`.
void saturate(LinkMeter& meter, std::string& log, int ms, int delay) {
  log = "# base timestamp: 0\n";
  for (int t = 0; t < ms; t++) {
    log += std::to_string(t) + " # 1500\n";
    meter.add({t * kMs + kMs / 2, 0, 1500, 1, '+'});
    log += std::to_string(t) + " + 1500\n";
    if (t >= delay) {
      meter.add({t * kMs + kMs / 2, (t - delay) * kMs + kMs / 2, 1500, 1, '-'});
      log += std::to_string(t) + " - 1500 " + std::to_string(delay) + "\n";
    }
  }
  meter.advance(ms * kMs);
}
// A meter of a 12 Mbit/s link saturated for `ms` with 20 ms of queueing, and its log.
struct Saturated {
  Saturated(const char* title, int ms) : meter(&trace, false, 0, title) {
    std::string text;
    saturate(meter, text, ms, 20);
    log = LinkLog::parse(text, "l.log");
  }
  const Trace trace = Trace::constant_rate(12e6, "rate:12Mbit/s");
  LinkMeter meter;
  LinkLog log;
};
}  // namespace

TEST(Meter, delay_classes_are_exact_below_64_ms_and_within_5_percent_above) {
  for (double ms : {0.0, 1.0, 17.0, 63.0}) EXPECT_EQ(delay_class_value(delay_class(ms)), ms);
  for (double ms : {64.0, 100.0, 999.0, 12345.0, 600000.0}) {
    const double v = delay_class_value(delay_class(ms));
    EXPECT_NEAR(v / ms, 1, 0.05) << ms;
  }
  EXPECT_EQ(delay_class(1e9), kDelayClasses - 1);  // beyond 1000 s: the last class
  EXPECT_EQ(delay_class(-1), 0u);
}

TEST(Meter, a_window_keeps_its_last_slots_and_a_whole_run_coarsens_keeping_every_byte) {
  MeterSeries window(MeterSeries::Mode::Window, 10, 100);
  MeterSeries whole(MeterSeries::Mode::WholeRun, 10, 100);
  double total = 0;
  for (int t = 0; t < 100'000; t += 5) {  // 100 s, a packet every 5 ms
    window.arrival(t, 100);
    whole.arrival(t, 100);
    total += 100;
  }
  EXPECT_EQ(window.size(), 100u);
  EXPECT_DOUBLE_EQ(window.start_ms(0), 99'000);  // the last second
  EXPECT_DOUBLE_EQ(window.slot(99).arrived_bytes, 200);
  EXPECT_LE(whole.size(), 100u);
  EXPECT_DOUBLE_EQ(whole.slot_ms(), 1280);  // 10 ms doubled until 100 s fits in 100 slots
  double kept = 0;
  for (size_t i = 0; i < whole.size(); i++) kept += whole.slot(i).arrived_bytes;
  EXPECT_DOUBLE_EQ(kept, total);
  // A departure whose arrival left the window still counts where it leaves.
  window.departure(99'995, 1500, 50'000, 49'995);
  EXPECT_DOUBLE_EQ(window.slot(99).departed_bytes, 1500);
}

TEST(Meter, capacity_comes_from_the_trace_and_the_charts_agree_with_the_graph_tools) {
  const Saturated run("[link] downlink", 3000);
  const LinkMeter& meter = run.meter;
  const LinkLog& log = run.log;

  const Chart whole = meter.throughput_chart(MeterScope::WholeRun);
  expect_finite(whole);
  const Series* capacity = find_series(whole, "Capacity");
  const Series* egress = find_series(whole, "Traffic egress");
  ASSERT_TRUE(capacity && egress);
  for (auto [x, y] : capacity->points) EXPECT_NEAR(y, 12, 0.2) << "capacity at " << x;
  // The same bins from the log, with mm-throughput-graph's code: the same egress, bin by bin.
  const double bin_ms = 100;  // a whole run of 3 s: bins of 100 ms, the least
  const std::vector<ThroughputBins> bins{bin_throughput(log, bin_ms, "100")};
  const Chart offline = throughput_chart(std::vector<LabeledLog>{{"d.log", log}}, bins, "", false);
  const Series* offline_egress = find_series(offline, "Traffic egress");
  ASSERT_TRUE(offline_egress);
  ASSERT_EQ(egress->points.size(), offline_egress->points.size());
  for (size_t i = 1; i + 1 < egress->points.size(); i++)  // the first and last bins start and end differently
    EXPECT_NEAR(egress->points[i].second, offline_egress->points[i].second, 1.3) << "bin " << i;
  EXPECT_NE(egress->label.find("(mean 11."), std::string::npos) << egress->label;

  const Chart live = meter.throughput_chart(MeterScope::Live);
  expect_finite(live);
  ASSERT_TRUE(live.x_range);
  EXPECT_DOUBLE_EQ(live.x_range->first, 0);  // the first 20 s: a fixed axis, filled from the left
  EXPECT_DOUBLE_EQ(live.x_range->second, 20);
  EXPECT_NE(live.title.find("[link] downlink (200 ms bins)"), std::string::npos) << live.title;
}

TEST(Meter, the_delay_chart_shows_each_delay_and_the_signal_delay) {
  const Saturated run("[link] uplink", 2000);
  const LinkMeter& meter = run.meter;
  const LinkSummary summary = summarize(run.log);
  for (MeterScope scope : {MeterScope::Live, MeterScope::WholeRun}) {
    const Chart chart = meter.delay_chart(scope);
    expect_finite(chart);
    EXPECT_TRUE(chart.log_y);
    const Series* packets = find_series(chart, "Per-packet delay");
    const Series* signal = find_series(chart, "Signal delay");
    ASSERT_TRUE(packets && signal);
    ASSERT_FALSE(packets->points.empty());
    for (auto [x, y] : packets->points) EXPECT_EQ(y, 20) << "at " << x;
    EXPECT_NE(packets->label.find("95th percentile 20 ms"), std::string::npos) << packets->label;
    // mm-delay-graph's signal delay of the same log (whole milliseconds): 20 ms; the meter's,
    // at its slots' starts, within a millisecond of it (the packets arrive half-way through).
    EXPECT_EQ(summary.signal_delay_p95_ms, 20);
    size_t valued = 0;
    for (auto [x, y] : signal->points) {
      if (std::isnan(y)) continue;
      valued++;
      EXPECT_NEAR(y, summary.signal_delay_p95_ms, 1) << "signal delay at " << x;
    }
    EXPECT_GT(valued, signal->points.size() / 2);
  }
}

TEST(Meter, a_live_chart_paints_on_a_window_sized_surface) {
  const Saturated run("[link] downlink", 6000);
  Chart chart = run.meter.throughput_chart(MeterScope::Live);
  SmoothScale scale;
  chart.y_range = scale.next(0, 13.2, false);
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 900, 480);
  cairo_t* cr = cairo_create(surface);
  paint_chart(cr, chart, 900, 480);
  EXPECT_EQ(cairo_status(cr), CAIRO_STATUS_SUCCESS) << cairo_status_to_string(cairo_status(cr));
  cairo_destroy(cr);
  // Something was drawn on the background: more than one colour on the surface.
  cairo_surface_flush(surface);
  const unsigned char* data = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  std::set<uint32_t> colours;
  for (int y = 0; y < 480; y += 4) {
    for (int x = 0; x < 900; x += 4) {
      uint32_t pixel;
      std::memcpy(&pixel, data + y * stride + x * 4, sizeof pixel);
      colours.insert(pixel & 0xffffff);
    }
  }
  EXPECT_GT(colours.size(), 2u);
  cairo_surface_destroy(surface);
}

TEST(Meter, a_meter_without_a_link_has_no_capacity_and_an_idle_one_says_so) {
  LinkMeter idle(nullptr, false, 0, "[meter] uplink", true);
  idle.advance(5000 * kMs);
  const Chart chart = idle.throughput_chart(MeterScope::Live);
  EXPECT_EQ(find_series(chart, "Capacity"), nullptr);
  ASSERT_EQ(chart.series.size(), 1u);  // what arrives leaves at once: one line
  EXPECT_EQ(chart.series[0].label, "Traffic (no events)");
  expect_finite(chart);
  EXPECT_EQ(idle.delay_chart(MeterScope::Live).note, "no packets yet");
}

TEST(Meter, a_delay_shell_shows_ingress_and_egress_without_capacity) {
  // mm-delay's meter: no link, so no capacity; what arrives leaves 50 ms later.
  LinkMeter meter(nullptr, false, 0, "[delay 50 ms] uplink");
  for (int i = 0; i < 100; i++) {
    const Nanos t = i * 10 * kMs;
    meter.add({t, 0, 1250, 1, '+'});
    if (i >= 5) meter.add({t, t - 50 * kMs, 1250, 1, '-'});
  }
  meter.advance(1000 * kMs);
  const Chart chart = meter.throughput_chart(MeterScope::WholeRun);
  EXPECT_EQ(find_series(chart, "Capacity"), nullptr);
  ASSERT_EQ(chart.series.size(), 2u);
  EXPECT_NE(chart.series[0].label.find("Traffic ingress"), std::string::npos);
  EXPECT_NE(chart.series[1].label.find("Traffic egress"), std::string::npos);
  const Chart delays = meter.delay_chart(MeterScope::WholeRun);
  expect_finite(delays);
}

TEST(Meter, the_live_axis_scrolls_after_its_first_20_seconds) {
  const Trace trace = Trace::constant_rate(1e6, "rate:1Mbit/s");
  LinkMeter meter(&trace, false, 0, "t");
  meter.add({30'000 * kMs, 0, 100, 1, '+'});
  meter.advance(31'000 * kMs);
  const Chart chart = meter.throughput_chart(MeterScope::Live);
  ASSERT_TRUE(chart.x_range);
  EXPECT_DOUBLE_EQ(chart.x_range->first, 11);
  EXPECT_DOUBLE_EQ(chart.x_range->second, 31);
  expect_finite(chart);
  const Series* capacity = find_series(chart, "Capacity");
  ASSERT_TRUE(capacity);
  EXPECT_GE(capacity->points.front().first, 11 - 0.2);  // nothing older than the window is kept
  for (auto [x, y] : capacity->points) EXPECT_NEAR(y, 1, 0.07) << x;
}

TEST(Meter, the_scale_rises_fast_and_falls_slowly) {
  SmoothScale scale;
  EXPECT_EQ(scale.next(0, 10, false).second, 10);
  const double up = scale.next(0, 100, false).second;
  EXPECT_GT(up, 40);
  EXPECT_LT(up, 100);
  double hi = up;
  for (int i = 0; i < 30; i++) hi = scale.next(0, 100, false).second;
  EXPECT_NEAR(hi, 100, 0.1);
  const double down = scale.next(0, 10, false).second;
  EXPECT_GT(down, 90);
  const auto [lo, top] = SmoothScale().next(1, 1000, true);
  EXPECT_DOUBLE_EQ(lo, 1);
  EXPECT_NEAR(top, 1000, 1e-9);
}

// A live meter shows marks as mm-throughput-graph and mm-delay-graph show them from the log.
TEST(Meter, marks_are_shown_as_the_graph_tools_show_them) {
  const Trace trace = Trace::constant_rate(12e6, "rate:12Mbit/s");
  LinkMeter meter(&trace, false, 0, "[link] uplink");
  std::string text = "# base timestamp: 0\n";
  for (int t = 0; t < 1000; t++) {
    text += std::to_string(t) + " # 1500\n" + std::to_string(t) + " + 1500\n";
    meter.add({t * kMs + kMs / 2, 0, 1500, 1, '+'});
    if (t >= 10) {
      if (t % 10 == 0) {  // every tenth packet leaves marked, after 10 ms
        meter.add({t * kMs + kMs / 2, 0, 1500, 1, 'm'});
        text += std::to_string(t) + " m 1 1500\n";
      }
      meter.add({t * kMs + kMs / 2, (t - 10) * kMs + kMs / 2, 1500, 1, '-'});
      text += std::to_string(t) + " - 1500 10\n";
    }
  }
  meter.advance(1000 * kMs);
  const LinkLog log = LinkLog::parse(text, "m.log");
  const Chart throughput = meter.throughput_chart(MeterScope::WholeRun);
  const Series* marked = find_series(throughput, "Marked CE");
  ASSERT_TRUE(marked);
  EXPECT_NE(marked->label.find("(mean 1.1"), std::string::npos) << marked->label;  // 99 marks of 1500 bytes in 1 s
  const Chart delays = meter.delay_chart(MeterScope::WholeRun);
  const Series* marks = find_series(delays, "ECN CE marks");
  ASSERT_TRUE(marks);
  ASSERT_FALSE(marks->points.empty());
  for (auto [x, y] : marks->points) EXPECT_EQ(y, 10) << "at " << x;
  EXPECT_EQ(mark_points(log).size(), 99u);
  // A meter without marks has neither series.
  const Saturated plain("[link] uplink", 500);
  EXPECT_FALSE(find_series(plain.meter.throughput_chart(MeterScope::WholeRun), "Marked CE"));
  EXPECT_FALSE(find_series(plain.meter.delay_chart(MeterScope::WholeRun), "ECN CE marks"));
}
