// SPDX-License-Identifier: GPL-3.0-or-later
// The results directory: the manifest decides whether a command continues a sweep; loads are
// stored whole under their run; --merge combines directories and refuses conflicts.
#include <fstream>
#include <sstream>

#include "expect.hh"
#include "sweep/sweep_report.hh"
#include "sweep/sweep_store.hh"
#include "temp_files.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace fs = std::filesystem;

namespace {
SweepSettings sweep_of(std::vector<double> rates, bool http2 = false) {
  SweepSettings s;
  s.recording = "/data/rec";
  s.url = "http://a.test/";
  s.rates_mbps = std::move(rates);
  s.rtts_ms = {30};
  s.losses = {0};
  s.runs = 2;
  if (http2) s.protocols = {Protocol::kH2};
  return s;
}

LoadResult ok_load(double plt) {
  LoadResult load;
  load.url = "http://a.test/";
  load.status = LoadResult::Status::Ok;
  load.started = "2026-11-23T09:41:07.123Z";
  load.plt_ms = plt;
  load.bytes = 1000;
  return load;
}
}  // namespace

TEST(SweepStore, same_sweep_continues_and_another_is_refused_naming_out) {
  TempDir dir;
  const fs::path out = dir.path / "results";
  const nlohmann::json manifest = sweep_manifest(sweep_of({1}));
  {
    const ResultStore store = ResultStore::open_for_sweep(out, manifest);
    EXPECT_TRUE(fs::is_regular_file(out / "sweep.json"));
    store.prepare("h1-multi-1mbit-30ms-loss0");
    store.store_load("h1-multi-1mbit-30ms-loss0", 2, ok_load(500));
  }
  const ResultStore again = ResultStore::open_for_sweep(out, manifest);
  EXPECT_FALSE(again.has_load("h1-multi-1mbit-30ms-loss0", 1));
  EXPECT_TRUE(again.has_load("h1-multi-1mbit-30ms-loss0", 2));
  const auto loads = again.read_loads();
  ASSERT_EQ(loads.at("h1-multi-1mbit-30ms-loss0").size(), 1u);
  EXPECT_EQ(loads.at("h1-multi-1mbit-30ms-loss0")[0].run, 2);
  EXPECT_EQ(*loads.at("h1-multi-1mbit-30ms-loss0")[0].plt_ms, 500);
  EXPECT_TRUE(loads.at("h1-multi-unemulated").empty());
  EXPECT_THROW_WITH(UserError, ResultStore::open_for_sweep(out, sweep_manifest(sweep_of({1, 14}))),
                    "holds another sweep (it differs in: configurations, rates_mbps");
  EXPECT_THROW_WITH(UserError, ResultStore::open_for_sweep(out, sweep_manifest(sweep_of({1, 14}))), "another --out");
  // No temporary file is left beside what was stored.
  for (const auto& entry : fs::recursive_directory_iterator(out))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST(SweepStore, a_damaged_manifest_or_load_is_named) {
  TempDir dir;
  std::ofstream(dir.path / "sweep.json") << "{not json";
  EXPECT_THROW_WITH(UserError, ResultStore::open_existing(dir.path), "is not valid JSON");
  EXPECT_THROW_WITH(UserError, ResultStore::open_existing(dir.path / "none"), "is not a directory");
  TempDir empty;
  EXPECT_THROW_WITH(UserError, ResultStore::open_existing(empty.path), "has no sweep.json");
  std::ofstream(empty.path / "two.json") << "[]";
  EXPECT_THROW_WITH(UserError, read_single_load(empty.path / "two.json"), "holds 0 loads, not one");
  EXPECT_THROW_WITH(UserError, read_single_load(empty.path / "missing.json"), "missing.json");
}

TEST(SweepStore, merge_combines_protocols_and_refuses_conflicting_loads) {
  TempDir dir;
  const ResultStore h1 = ResultStore::open_for_sweep(dir.path / "h1", sweep_manifest(sweep_of({1})));
  const ResultStore h2 = ResultStore::open_for_sweep(dir.path / "h2", sweep_manifest(sweep_of({1, 14}, true)));
  for (const ResultStore* store : {&h1, &h2}) {
    for (const Configuration& c : store->configurations()) {
      store->prepare(c.id());
      store->store_load(c.id(), 1, ok_load(c.variant.protocol_kind == Protocol::kH2 ? 300 : 400));
    }
  }
  const fs::path out = dir.path / "all";
  const ResultStore merged = merge_results(out, {dir.path / "h1", dir.path / "h2"});
  EXPECT_EQ(merged.configurations().size(), 5u);  // two baselines, 1 + 2 configurations
  const auto loads = merged.read_loads();
  EXPECT_EQ(*loads.at("h1-multi-1mbit-30ms-loss0").at(0).plt_ms, 400);
  EXPECT_EQ(*loads.at("h2-multi-14mbit-30ms-loss0").at(0).plt_ms, 300);
  EXPECT_EQ(merged.manifest()["rates_mbps"], nlohmann::json({1.0, 14.0}));
  EXPECT_EQ(merged.manifest()["http2"], "mixed");
  // Merging again, and merging OUT with itself, keeps every load once.
  EXPECT_EQ(merge_results(out, {dir.path / "h1", out}).read_loads().at("h1-multi-1mbit-30ms-loss0").size(), 1u);
  // The same run with another result is refused, naming both files.
  h1.store_load("h1-multi-1mbit-30ms-loss0", 1, ok_load(999));
  EXPECT_THROW_WITH(UserError, merge_results(out, {dir.path / "h1"}), "both hold run 1 of h1-multi-1mbit-30ms-loss0");
  // Sweeps of another page do not merge.
  SweepSettings other = sweep_of({1});
  other.url = "http://b.test/";
  ResultStore::open_for_sweep(dir.path / "b", sweep_manifest(other));
  EXPECT_THROW_WITH(UserError, merge_results(dir.path / "ab", {dir.path / "h1", dir.path / "b"}),
                    "their sweeps differ in \"url\"");
}

// --submit slurm's merge: RESULTS holds the whole sweep's manifest, a part per configuration that
// ran; a configuration whose task never finished is in the summary, short of its loads.
TEST(SweepStore, a_merge_into_the_sweeps_own_results_names_what_never_ran) {
  TempDir dir;
  const SweepSettings s = sweep_of({1, 14});
  const fs::path out = dir.path / "res";
  ResultStore::open_for_sweep(out, sweep_manifest(s));
  const ResultStore part = ResultStore::open_for_sweep(out / "parts" / "h1-multi-1mbit-30ms-loss0", sweep_manifest(s));
  part.prepare("h1-multi-1mbit-30ms-loss0");
  LoadResult load = ok_load(400);
  load.host = HostFacts{"node2", "6.1", "cpu", 2, 0.25, "0.1.0"};
  for (int run : {1, 2}) part.store_load("h1-multi-1mbit-30ms-loss0", run, load);
  const ResultStore merged = merge_results(out, {out / "parts" / "h1-multi-1mbit-30ms-loss0"});
  const std::vector<SummaryRow> rows = write_sweep_report(merged);
  ASSERT_EQ(rows.size(), 3u);  // the baseline and both rates, though only one ran
  for (const SummaryRow& row : rows) {
    EXPECT_EQ(row.loads_asked, 2u) << row.config.id();
    EXPECT_EQ(row.loads_total, row.config.id() == "h1-multi-1mbit-30ms-loss0" ? 2u : 0u) << row.config.id();
    EXPECT_EQ(row.hosts, row.config.id() == "h1-multi-1mbit-30ms-loss0" ? 1u : 0u) << row.config.id();
  }
  const std::string summary = read_small_file((out / "summary.csv").string());
  EXPECT_NE(summary.find("\nh1-multi-14mbit-30ms-loss0,h1,multi,14,30,0,infinite,0,0,"), std::string::npos) << summary;
  EXPECT_NE(read_small_file((out / "loads.csv").string()).find(",node2,6.1,cpu,2,0.25,0.1.0\n"), std::string::npos);
}

// What RESULTS/cumulus.csv takes from a Cumulus load's log.
TEST(SweepReport, cumulus_log_gives_the_bulk_and_the_remote_load) {
  const std::string log =
      "mm-cumulus-remote: listening on 10.79.1.2:42299\n"
      "mm-cumulus-local: http://www.news.test/: bulk response of 46 objects, 404 KiB in 1616 ms; the Remote Proxy's "
      "load ok, 534 ms, CPU 2143 ms\n"
      "mm-pageload: [1/1] http://www.news.test/ run 1: ok  PLT 1494 ms\n"
      "mm-cumulus-local: 1 page load, 45 requests answered from bulk responses (46 objects, 404 KiB), 1 sent to "
      "servers\n";
  const CumulusLoadLog parsed = parse_cumulus_log(log);
  EXPECT_EQ(parsed.bulk_objects, 46);
  EXPECT_EQ(parsed.bulk_kib, 404);
  EXPECT_EQ(parsed.bulk_ms, 1616);
  EXPECT_EQ(parsed.remote_status, "ok");
  EXPECT_EQ(parsed.remote_load_ms, 534);
  EXPECT_EQ(parsed.remote_cpu_ms, 2143);
  EXPECT_EQ(parsed.answered, 45);
  EXPECT_EQ(parsed.forwarded, 1);
  EXPECT_EQ(cumulus_csv_row("cumulus-multi-unemulated", 2, parsed),
            "cumulus-multi-unemulated,2,ok,534,2143,46,404,1616,45,1,\n");

  const CumulusLoadLog failed = parse_cumulus_log(
      "mm-cumulus-local: http://a.test/: the Remote Proxy sent nothing for 10 s; what the page still needs goes to "
      "its origins\nmm-cumulus-local: 1 page load, 0 requests answered from bulk responses (0 objects, 0 KiB), 12 sent "
      "to servers; 1 bulk response failed\n");
  EXPECT_EQ(failed.remote_status, "");
  EXPECT_EQ(failed.bulk_failure, "the Remote Proxy sent nothing for 10 s");
  EXPECT_EQ(failed.forwarded, 12);
  EXPECT_FALSE(failed.remote_cpu_ms);
  EXPECT_EQ(cumulus_csv_header().substr(0, 40), "configuration,run,remote_status,remote_l");
}
