// SPDX-License-Identifier: GPL-3.0-or-later
// The runner's pure parts: which loads remain (baselines first), and the time-left text.
#include <algorithm>

#include "expect.hh"
#include "sweep/sweep_runner.hh"
#include "temp_files.hh"

namespace {
SweepSettings sweep_of(std::vector<double> rtts, int runs) {
  SweepSettings s;
  s.recording = "/data/rec";
  s.url = "http://a.test/";
  s.rates_mbps = {1};
  s.rtts_ms = std::move(rtts);
  s.losses = {0};
  s.runs = runs;
  return s;
}
}  // namespace

TEST(SweepRunner, pending_loads_skip_stored_runs_and_put_baselines_first) {
  TempDir dir;
  const SweepSettings s = sweep_of({30, 120}, 2);
  const ResultStore store = ResultStore::open_for_sweep(dir.path, sweep_manifest(s));
  auto configs = sweep_configurations(s);
  std::rotate(configs.begin(), configs.begin() + 1, configs.end());  // baseline last in the list
  LoadResult load;
  load.url = s.url;
  load.status = LoadResult::Status::Ok;
  store.prepare(configs[0].id());
  store.store_load(configs[0].id(), 1, load);
  const auto tasks = pending_loads(store, configs);
  ASSERT_EQ(tasks.size(), 5u);
  EXPECT_EQ(tasks[0].config.id(), "h1-multi-unemulated");
  EXPECT_EQ(tasks[1].config.id(), "h1-multi-unemulated");
  EXPECT_EQ(tasks[2].config.id(), "h1-multi-1mbit-30ms-loss0");
  EXPECT_EQ(tasks[2].run, 2);
  EXPECT_EQ(tasks[4].config.id(), "h1-multi-1mbit-120ms-loss0");
  EXPECT_TRUE(pending_loads(store, {configs[0]}).size() == 1);
}

TEST(SweepRunner, time_left_reads_naturally) {
  EXPECT_EQ(duration_text(4.4), "about 4 s");
  EXPECT_EQ(duration_text(130), "about 2 min 10 s");
  EXPECT_EQ(duration_text(3900), "about 1 h 5 min");
  EXPECT_EQ(duration_text(-3), "about 0 s");
}

// --baseline-runs: the baseline gets its own number of loads (0: none at all), the manifest says
// so only when it differs from --runs (a sweep without the option keeps its manifest), and a
// merge keeps the baseline loads of the input with the most.
TEST(SweepRunner, baseline_runs_set_the_baselines_loads_apart_from_the_grids) {
  TempDir dir;
  SweepSettings s = sweep_of({30}, 4);
  EXPECT_FALSE(sweep_manifest(s).contains("baseline_runs"));
  s.baseline_runs = 4;
  EXPECT_FALSE(sweep_manifest(s).contains("baseline_runs"));
  s.baseline_runs = 1;
  const ResultStore store = ResultStore::open_for_sweep(dir.path / "one", sweep_manifest(s));
  const auto configs = sweep_configurations(s);
  EXPECT_EQ(store.baseline_runs(), 1);
  const auto tasks = pending_loads(store, configs);
  ASSERT_EQ(tasks.size(), 5u);  // one baseline load, then the configuration's four
  EXPECT_FALSE(tasks[0].config.emulated);
  EXPECT_TRUE(tasks[1].config.emulated);
  EXPECT_NE(job_lines("mm-sweep", s, "res")[0].find(" --runs 4 --baseline-runs 1 "), std::string::npos);

  s.baseline_runs = 0;
  const auto without = sweep_configurations(s);
  ASSERT_EQ(without.size(), 1u);
  EXPECT_TRUE(without[0].emulated);
  const ResultStore none = ResultStore::open_for_sweep(dir.path / "none", sweep_manifest(s));
  EXPECT_EQ(pending_loads(none, without).size(), 4u);

  LoadResult load;
  load.url = s.url;
  load.status = LoadResult::Status::Ok;
  load.plt_ms = 100;
  store.prepare(configs[0].id());
  store.store_load(configs[0].id(), 1, load);
  const ResultStore merged = merge_results(dir.path / "merged", {dir.path / "none", dir.path / "one"});
  EXPECT_EQ(merged.baseline_runs(), 1);
  EXPECT_EQ(merged.read_loads().at("h1-multi-unemulated").size(), 1u);
  EXPECT_EQ(merged.configurations().size(), 2u);
}
