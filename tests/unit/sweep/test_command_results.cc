// SPDX-License-Identifier: GPL-3.0-or-later
// A command sweep's results: stored runs, the summary that names missing and failed runs, and
// --merge of the parts of a sweep run apart.
#include "expect.hh"
#include "sweep/command_report.hh"
#include "sweep/command_results.hh"
#include "sweep/flow_figures.hh"
#include "sweep/sweep_store.hh"
#include "temp_files.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;

namespace {
CommandSweepSettings sweep_of(std::vector<std::string> ccs) {
  CommandSweepSettings s;
  s.schemes = {{"command", "iperf3 -c $MAHIMAHI_BASE"}};
  s.links = {rate_link(12)};
  s.rtts_ms = {40};
  s.losses = {0};
  s.ccs = std::move(ccs);
  s.runs = 2;
  return s;
}

// A run as command_run writes it: the downlink carried `mbps`, its p95 one-way delay `p95`.
nlohmann::json run_of(const std::string& id, int run, const std::string& status, double mbps, double p95,
                      const std::string& host = "node1") {
  FlowFigures down;
  down.delivered_bytes = mbps * 1e6 / 8;
  down.duration_s = 1;
  down.throughput_mbps = mbps;
  down.capacity_mbps = 12;
  down.delay_mean_ms = p95 - 5;
  down.delay_p95_ms = p95;
  FlowFigures up;
  up.throughput_mbps = 0.1;
  return {
      {"configuration", id},
      {"run", run},
      {"status", status},
      {"exit_status", status == "ok" ? 0 : 1},
      {"direction", "downlink"},
      {"uplink", flow_json(up)},
      {"downlink", flow_json(down)},
      {"seconds", 31.5},
      {"host", {{"host", host}, {"kernel", "6.1"}, {"cpu", "x"}, {"cpus", 2}, {"load1", 0.5}, {"mahimahi", "0.1"}}}};
}

void store(const CommandResults& results, const nlohmann::json& run) {
  const std::string id = run["configuration"];
  results.prepare(id);
  write_file_atomically(results.result_file(id, run["run"]), run.dump() + "\n");
}
}  // namespace

TEST(CommandResults, the_summary_names_missing_and_failed_runs) {
  TempDir dir;
  const CommandResults results = CommandResults::open_for_sweep(dir.path / "r", command_manifest(sweep_of({"reno"})));
  const std::string id = "command-reno-12mbit-40ms-loss0-infinite";
  EXPECT_EQ(results.configurations().at(0).id(), id);
  store(results, run_of(id, 1, "failed", 0, 0));
  const std::vector<CommandSummaryRow> rows = write_command_report(results);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].runs, 2);
  EXPECT_EQ(rows[0].stored, 1);
  EXPECT_EQ(rows[0].ok, 0);
  EXPECT_EQ(rows[0].others, "failed 1, missing 1");
  store(results, run_of(id, 2, "ok", 10, 60));
  const auto runs = results.read_runs();
  const std::string csv = command_runs_csv(results, runs);
  EXPECT_NE(csv.find(",2,ok,0,downlink,10.000,12.000,55.00,60.00,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",node1,6.1,x,2,0.50,0.1\n"), std::string::npos) << csv;
  const std::vector<CommandSummaryRow> again = summarize_command_runs(results, runs);
  EXPECT_EQ(again[0].ok, 1);
  EXPECT_EQ(again[0].others, "failed 1");
  EXPECT_EQ(again[0].throughput_mbps, 10);
  EXPECT_EQ(again[0].delay_p95_ms, 60);
  EXPECT_TRUE(fs::is_regular_file(dir.path / "r" / "plots" / "tput-delay-12mbit-40ms-loss0-infinite.png"));
  // A run file that is not this run is named, with the fix.
  write_file_atomically(results.result_file(id, 2), run_of(id, 1, "ok", 1, 1).dump());
  EXPECT_THROW_WITH(UserError, results.read_runs(), "is not run 2 of " + id + ": remove it");
}

TEST(CommandResults, parts_run_apart_merge_and_conflicts_are_refused) {
  TempDir dir;
  const nlohmann::json manifest = command_manifest(sweep_of({"reno", "bbr"}));
  const std::string reno = "command-reno-12mbit-40ms-loss0-infinite", bbr = "command-bbr-12mbit-40ms-loss0-infinite";
  const CommandResults a = CommandResults::open_for_sweep(dir.path / "parts" / reno, manifest);
  const CommandResults b = CommandResults::open_for_sweep(dir.path / "parts" / bbr, manifest);
  store(a, run_of(reno, 1, "ok", 9, 80, "node1"));
  store(a, run_of(reno, 2, "ok", 9.5, 85, "node2"));
  store(b, run_of(bbr, 1, "ok", 11, 50, "node3"));
  const CommandResults merged = merge_command_results(dir.path / "all", {a.dir(), b.dir()});
  EXPECT_TRUE(merged.has_run(reno, 2));
  EXPECT_TRUE(merged.has_run(bbr, 1));
  EXPECT_FALSE(merged.has_run(bbr, 2));
  const std::vector<CommandSummaryRow> rows = write_command_report(merged);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].hosts, 2u);
  EXPECT_EQ(rows[1].others, "missing 1");
  // A requeued task that stored another result for the same run: refused, naming both files.
  store(b, run_of(reno, 1, "ok", 3, 30));
  EXPECT_THROW_WITH(UserError, merge_command_results(dir.path / "all", {b.dir()}), "with different results");
  // Sweeps of other schemes do not merge.
  CommandSweepSettings other = sweep_of({"reno"});
  other.schemes[0].command = "./other";
  const CommandResults c = CommandResults::open_for_sweep(dir.path / "other", command_manifest(other));
  EXPECT_THROW_WITH(UserError, merge_command_results(dir.path / "all", {c.dir()}), "differ in \"schemes\"");
}
