// SPDX-License-Identifier: GPL-3.0-or-later
// mm-delay-graph's computations: rows per millisecond, the summary of logs without packets (no
// "nan"), the CSV file and several logs on one chart.
#include <cmath>
#include <string>

#include "expect.hh"
#include "graphing/delay_plot.hh"

namespace {
const char kHeader[] = "# mahimahi mm-link (Uplink) [x] > u.log\n# base timestamp: 100\n";
// Relative to the base timestamp: a packet sent at 1 leaves at 2; two sent at 2 leave at 4 and 5.
const std::string kLog = std::string(kHeader) +
                         "101 # 1500\n101 + 1500\n102 - 1500 1\n102 + 100\n102 + 100\n"
                         "104 - 100 2\n105 - 100 3\n";

LabeledLog labeled(const std::string& label, const std::string& text) { return {label, LinkLog::parse(text, label)}; }
}  // namespace

TEST(DelayPlot, rows_hold_the_signal_delay_and_the_packets_of_each_ms) {
  const DelayRows rows = delay_rows(LinkLog::parse(kLog, "u.log"));
  ASSERT_EQ(rows.size(), 5u);  // ms 1 to 5
  EXPECT_EQ(rows.group_ms, 1u);
  EXPECT_EQ(rows.signal_delay_ms[0], 1.0);  // sent at 1, arrived at 2
  EXPECT_EQ(rows.signal_delay_ms[1], 2.0);  // sent at 2, arrived at 4
  EXPECT_TRUE(std::isnan(rows.signal_delay_ms[4]));
  EXPECT_EQ(rows.packets[1], 1.0);
  EXPECT_EQ(rows.packets[2], 0.0);
  EXPECT_TRUE(std::isnan(rows.mean_delay_ms[2]));
  EXPECT_DOUBLE_EQ(rows.start_s(0), 0.001);
  EXPECT_DOUBLE_EQ(rows.end_s(4), 0.006);
}

TEST(DelayPlot, csv_has_one_header_line_and_empty_fields_for_no_value) {
  const std::vector<LabeledLog> logs = {labeled("u.log", kLog)};
  EXPECT_EQ(delay_csv(logs, {delay_rows(logs[0].log)}),
            "log,start_s,end_s,signal_delay_ms,packets,mean_delay_ms,max_delay_ms\n"
            "u.log,0.001,0.002,1.000,0,,\n"
            "u.log,0.002,0.003,2.000,1,1.000,1.000\n"
            "u.log,0.003,0.004,,0,,\n"  // nothing sent at 3 or later arrived
            "u.log,0.004,0.005,,1,2.000,2.000\n"
            "u.log,0.005,0.006,,1,3.000,3.000\n");
}

TEST(DelayPlot, a_log_without_packets_is_summarized_and_drawn_without_nan) {
  const LinkLog no_packets = LinkLog::parse(std::string(kHeader) + "101 # 1500\n102 # 1500\n", "l");
  EXPECT_EQ(delay_summary(no_packets),
            "95th percentile per-packet queueing delay: - (no packets delivered)\n"
            "95th percentile signal delay: - (no packets delivered)\n");
  const Chart chart = delay_chart({{"l", no_packets}}, {delay_rows(no_packets)}, "", false);
  EXPECT_EQ(chart.note, "no packets delivered");
  EXPECT_EQ(chart.series[0].label, "Signal delay (no packets delivered)");
  const LinkLog header_only = LinkLog::parse(kHeader, "h");
  EXPECT_EQ(delay_summary(header_only).find("nan"), std::string::npos);
  EXPECT_EQ(delay_chart({{"h", header_only}}, {delay_rows(header_only)}, "", false).note, "no events in this log");
  EXPECT_EQ(delay_summary(LinkLog::parse(kLog, "u.log")),
            "95th percentile per-packet queueing delay: 3 ms\n95th percentile signal delay: 2 ms\n");
}

TEST(DelayPlot, several_logs_share_a_chart_each_in_its_colour_and_named) {
  const std::vector<LabeledLog> logs = {labeled("a", kLog), labeled("b", std::string(kHeader) + "101 # 1500\n")};
  const Chart chart = delay_chart(logs, {delay_rows(logs[0].log), delay_rows(logs[1].log)}, "Delays", true);
  EXPECT_EQ(chart.title, "Delays");
  ASSERT_EQ(chart.series.size(), 4u);
  EXPECT_EQ(chart.series[0].label, "a: signal delay (95th percentile 2 ms)");
  EXPECT_EQ(chart.series[1].label, "a: per-packet delay (95th percentile 3 ms)");
  EXPECT_EQ(chart.series[2].label, "b: signal delay (no packets delivered)");
  EXPECT_EQ(chart.series[0].style, Series::Style::Line);  // areas of several logs would hide each other
  EXPECT_NE(chart.series[0].color.g, chart.series[2].color.g);
  EXPECT_TRUE(chart.note.empty());  // one of them delivered packets
  const std::string csv = delay_csv(logs, {delay_rows(logs[0].log), delay_rows(logs[1].log)});
  EXPECT_NE(csv.find("\nb,0.001,0.002,,0,,\n"), std::string::npos) << csv;
}

// Each CE mark is a dot at its time, at the delay of the first packet to leave then or after.
TEST(DelayPlot, marks_are_dots_at_the_delay_of_the_packet_leaving_then) {
  const std::string text =
      "# base timestamp: 0\n0 + 1500\n1 + 1500\n3 m 1 1500\n3 - 1500 3\n5 m 1 1500\n6 - 1500 5\n9 m 1 1500\n";
  const LinkLog log = LinkLog::parse(text, "m.log");
  const std::vector<std::pair<double, double>> points = mark_points(log);
  ASSERT_EQ(points.size(), 2u);  // the last mark has no packet leaving after it
  EXPECT_EQ(points[0], std::make_pair(0.003, 3.0));
  EXPECT_EQ(points[1], std::make_pair(0.005, 5.0));
  const std::vector<LabeledLog> logs = {{"m.log", log}};
  const Chart chart = delay_chart(logs, {delay_rows(log)}, "", false);
  ASSERT_EQ(chart.series.size(), 3u);
  EXPECT_EQ(chart.series[2].label, "ECN CE marks");
  EXPECT_EQ(chart.series[2].style, Series::Style::Dots);
  EXPECT_NE(delay_summary(log).find("Marked packets (ECN CE): 3\n"), std::string::npos);
  // Without marks: no such series.
  const LinkLog plain = LinkLog::parse("# base timestamp: 0\n0 + 1500\n3 - 1500 3\n", "p.log");
  EXPECT_EQ(delay_chart({{"p.log", plain}}, {delay_rows(plain)}, "", false).series.size(), 2u);
}
