// SPDX-License-Identifier: GPL-3.0-or-later
// mm-throughput-graph's computations: bins (a partly covered last bin), the summary of logs
// without packets or events (no "nan"), the CSV file and several logs on one chart.
#include <string>

#include "expect.hh"
#include "graphing/throughput_plot.hh"
#include "util/exception.hh"

namespace {
const char kHeader[] = "# mahimahi mm-link (Downlink) [rate:12Mbit/s] > d.log\n# base timestamp: 0\n";

// A 12 Mbit/s link (an opportunity per ms) for 10 ms: two packets arrive at 1, one leaves at 2
// after 1 ms, one is dropped at 3, one leaves at 9 after 8 ms.
const std::string kLog = std::string(kHeader) +
                         "0 # 1500\n1 # 1500\n1 + 1500\n1 + 1500\n2 # 1500\n2 - 1500 1\n3 # 1500\n3 d 1 1500\n"
                         "4 # 1500\n5 # 1500\n6 # 1500\n7 # 1500\n8 # 1500\n9 # 1500\n9 - 1500 8\n";

LabeledLog labeled(const std::string& label, const std::string& text) { return {label, LinkLog::parse(text, label)}; }
}  // namespace

TEST(ThroughputPlot, bins_count_bytes_and_drops_per_bin) {
  const LinkLog log = LinkLog::parse(kLog, "d.log");
  const ThroughputBins bins = bin_throughput(log, 4, "4");
  ASSERT_EQ(bins.size(), 3u);  // [0,4) [4,8) [8,10)
  EXPECT_EQ(bins.capacity_bytes[0], 4 * 1500.0);
  EXPECT_EQ(bins.ingress_bytes[0], 3000.0);
  EXPECT_EQ(bins.egress_bytes[0], 1500.0);
  EXPECT_EQ(bins.egress_bytes[2], 1500.0);
  EXPECT_EQ(bins.dropped_packets[0], 1.0);
  EXPECT_DOUBLE_EQ(bins.mbps(0, bins.capacity_bytes[0]), 12.0);
  // The last bin holds 2 ms of the log (8 and 9): its rate is over those, not over 4 ms.
  EXPECT_DOUBLE_EQ(bins.end_s(2), 0.010);
  EXPECT_DOUBLE_EQ(bins.mbps(2, bins.capacity_bytes[2]), 12.0);
  EXPECT_THROW_WITH(UsageError, bin_throughput(LinkLog::parse("0 # 1500\n7200000 # 1500\n", "l"), 0.001, "0.001"),
                    "MS-PER-BIN 0.001 makes more than 1000000 bins of this log's 7200000 ms; use 8 or more");
}

TEST(ThroughputPlot, summary_of_a_log_without_packets_says_so_instead_of_nan) {
  const LinkLog no_packets = LinkLog::parse(std::string(kHeader) + "0 # 1500\n1 # 1500\n2 # 1500\n", "l");
  const std::string summary = throughput_summary(no_packets);
  EXPECT_EQ(summary.find("nan"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Average throughput: 0.00 Mbits/s (no packets delivered)\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find("95th percentile per-packet queueing delay: - (no packets delivered)\n"), std::string::npos);
  EXPECT_NE(summary.find("95th percentile signal delay: - (no packets delivered)\n"), std::string::npos);
  const ThroughputBins bins = bin_throughput(no_packets, 100, "100");
  const Chart chart = throughput_chart({{"l", no_packets}}, {bins}, "", false);
  EXPECT_EQ(chart.note, "no packets delivered");
  for (const auto& s : chart.series) EXPECT_EQ(s.label.find("nan"), std::string::npos) << s.label;
  // A single bin is drawn from its start to its end (a line through one point shows nothing).
  ASSERT_EQ(chart.series[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(chart.series[0].points[1].first, 0.003);

  const LinkLog header_only = LinkLog::parse(kHeader, "h");
  EXPECT_TRUE(header_only.empty());
  const std::string empty_summary = throughput_summary(header_only);
  EXPECT_EQ(empty_summary.find("nan"), std::string::npos) << empty_summary;
  EXPECT_NE(empty_summary.find("Average capacity: - (no events in the log)\n"), std::string::npos) << empty_summary;
  EXPECT_EQ(throughput_chart({{"h", header_only}}, {bin_throughput(header_only, 500, "500")}, "", false).note,
            "no events in this log");
}

TEST(ThroughputPlot, summary_of_a_log_with_traffic) {
  const std::string summary = throughput_summary(LinkLog::parse(kLog, "d.log"));
  EXPECT_EQ(summary,
            "Average capacity: 13.33 Mbits/s\n"  // 10 opportunities over the 9 ms from first to last event
            "Average throughput: 2.67 Mbits/s (20.0% utilization)\n"
            "95th percentile per-packet queueing delay: 8 ms\n"
            "95th percentile signal delay: 2 ms\n"  // both sent at 1: the first arrived 1 ms later
            "Dropped packets: 1\n");
}

TEST(ThroughputPlot, csv_holds_the_binned_series_with_one_header_line) {
  const std::vector<LabeledLog> logs = {labeled("d.log", kLog)};
  const std::string csv = throughput_csv(logs, {bin_throughput(logs[0].log, 4, "4")});
  EXPECT_EQ(csv,
            "log,start_s,end_s,capacity_mbps,ingress_mbps,egress_mbps,dropped_packets,marked_packets\n"
            "d.log,0.000000,0.004000,12.000000,6.000000,3.000000,1,0\n"
            "d.log,0.004000,0.008000,12.000000,0.000000,0.000000,0,0\n"
            "d.log,0.008000,0.010000,12.000000,0.000000,6.000000,0,0\n");
  // A label with a comma or a quote is quoted (RFC 4180).
  const std::vector<LabeledLog> odd = {labeled("a,\"b\"", kLog)};
  EXPECT_NE(throughput_csv(odd, {bin_throughput(odd[0].log, 10, "10")}).find("\n\"a,\"\"b\"\"\",0.000000,"),
            std::string::npos);
}

TEST(ThroughputPlot, several_logs_share_a_chart_each_in_its_colour_and_named) {
  const std::string slow = std::string(kHeader) + "0 # 1500\n2 # 1500\n2 + 1500\n4 # 1500\n4 - 1500 2\n";
  const std::vector<LabeledLog> logs = {labeled("fast.log", kLog), labeled("slow.log", slow)};
  const std::vector<ThroughputBins> bins = {bin_throughput(logs[0].log, 2, "2"), bin_throughput(logs[1].log, 2, "2")};
  const Chart chart = throughput_chart(logs, bins, "Two links", true);
  EXPECT_EQ(chart.title, "Two links");
  ASSERT_EQ(chart.series.size(), 6u);
  EXPECT_EQ(chart.series[0].label, "fast.log: capacity (mean 13.33 Mbit/s)");
  EXPECT_EQ(chart.series[1].label.rfind("fast.log: traffic ingress", 0), 0u);
  EXPECT_EQ(chart.series[3].label, "slow.log: capacity (mean 9.00 Mbit/s)");
  EXPECT_EQ(chart.series[4].style, Series::Style::DashedLine);  // ingress, told from egress by its dashes
  EXPECT_EQ(chart.series[5].style, Series::Style::Line);
  EXPECT_NE(chart.series[0].color.r, chart.series[3].color.r);
  EXPECT_EQ(chart.series[3].color.r, chart.series[5].color.r);  // one colour per log
  EXPECT_TRUE(chart.note.empty());
  const std::string csv = throughput_csv(logs, bins);
  EXPECT_NE(csv.find("\nfast.log,0.000000,0.002000,"), std::string::npos);
  EXPECT_NE(csv.find("\nslow.log,0.004000,0.005000,12.000000,0.000000,12.000000,0,0\n"), std::string::npos) << csv;
  // One log, not named: the original's legend.
  const Chart one = throughput_chart({logs[0]}, {bins[0]}, "", false);
  EXPECT_EQ(one.title, "Throughput");
  EXPECT_EQ(one.series[0].label, "Capacity (mean 13.33 Mbit/s)");
  EXPECT_EQ(one.series[1].label.rfind("Traffic ingress (mean ", 0), 0u);
}

// A queue that marks CE (ECN): the 'm' lines are read, binned, drawn as their own series, and
// counted in the CSV and the summary; a log without them keeps the original's summary.
TEST(ThroughputPlot, marks_are_a_series_a_column_and_a_summary_line) {
  const std::string text = std::string(kHeader) +
                           "0 # 1500\n0 + 1500\n0 + 1500\n1 # 1500\n1 m 1 1500\n1 - 1500 1\n2 # 1500\n2 m 2 3000\n"
                           "2 - 1500 2\n3 # 1500\n";
  const std::vector<LabeledLog> logs = {labeled("m.log", text)};
  ASSERT_EQ(logs[0].log.marks.size(), 2u);
  const std::vector<ThroughputBins> bins = {bin_throughput(logs[0].log, 2, "2")};
  const Chart chart = throughput_chart(logs, bins, "", false);
  ASSERT_EQ(chart.series.size(), 4u);
  EXPECT_EQ(chart.series[3].label, "Marked CE (mean 12.00 Mbit/s)");  // 4500 bytes over 3 ms
  EXPECT_EQ(chart.series[3].style, Series::Style::DottedLine);
  ASSERT_EQ(chart.series[3].points.size(), 2u);
  EXPECT_DOUBLE_EQ(chart.series[3].points[0].second, 6);  // 1500 bytes in the first 2 ms
  const std::string csv = throughput_csv(logs, bins);
  EXPECT_NE(csv.find("\nm.log,0.000000,0.002000,12.000000,12.000000,6.000000,0,1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nm.log,0.002000,0.004000,12.000000,0.000000,6.000000,0,2\n"), std::string::npos) << csv;
  EXPECT_NE(throughput_summary(logs[0].log).find("Dropped packets: 0\nMarked packets (ECN CE): 3\n"),
            std::string::npos);
  EXPECT_EQ(throughput_summary(LinkLog::parse(kLog, "d.log")).find("Marked"), std::string::npos);
  // A malformed mark line is refused as the other kinds are.
  EXPECT_THROW_WITH(UserError, LinkLog::parse(std::string(kHeader) + "1 m 1\n", "bad.log"), "malformed 'm' line");
}
