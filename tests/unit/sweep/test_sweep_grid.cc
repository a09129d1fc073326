// SPDX-License-Identifier: GPL-3.0-or-later
// The grid of a sweep: lists and their bounds, configuration ids, each load's command line, the
// manifest and the command lines of --emit-jobs.
#include <algorithm>

#include "expect.hh"
#include "sweep/sweep_grid.hh"
#include "util/exception.hh"

namespace {
SweepSettings small_sweep() {
  SweepSettings s;
  s.recording = "/data/rec";
  s.url = "http://a.test/index.html";
  s.rates_mbps = {1, 14};
  s.rtts_ms = {30, 120};
  s.losses = {0};
  s.runs = 2;
  s.timeout_s = 30;
  return s;
}
}  // namespace

TEST(SweepGrid, lists_are_sorted_bounded_and_without_repeats) {
  EXPECT_EQ(parse_number_list("25,1,14", "--rates", 0.001, 100000), (std::vector<double>{1, 14, 25}));
  EXPECT_EQ(parse_number_list("0.2", "--rates", 0.001, 100000), (std::vector<double>{0.2}));
  EXPECT_THROW_WITH(UsageError, parse_number_list("", "--rtts", 0, 10000), "--rtts needs a comma-separated list");
  EXPECT_THROW_WITH(UsageError, parse_number_list("1,,2", "--rtts", 0, 10000), "empty value");
  EXPECT_THROW_WITH(UsageError, parse_number_list("1,", "--rtts", 0, 10000), "empty value");
  EXPECT_THROW_WITH(UsageError, parse_number_list("1,x", "--rtts", 0, 10000), "--rtts must be a number, not \"x\"");
  EXPECT_THROW_WITH(UsageError, parse_number_list("1,1", "--rtts", 0, 10000), "lists 1 twice");
  EXPECT_THROW_WITH(UsageError, parse_number_list("20000", "--rtts", 0, 10000), "out of range (0 to 10000)");
  EXPECT_THROW_WITH(UsageError, parse_number_list("1", "--loss", 0, 0.99), "out of range (0 to 0.99)");
  EXPECT_THROW_WITH(UsageError, parse_number_list("-1", "--loss", 0, 0.99), "must not be negative");
  std::string many;
  for (int i = 0; i <= 100; i++) many += (i ? "," : "") + std::to_string(i);
  EXPECT_THROW_WITH(UsageError, parse_number_list(many, "--rtts", 0, 10000), "more than 100 values");
}

TEST(SweepGrid, queue_spec_names_a_queue_of_mm_link) {
  EXPECT_EQ(parse_queue_spec("codel"), "codel");
  EXPECT_EQ(parse_queue_spec("droptail:packets=100"), "droptail:packets=100");
  EXPECT_THROW_WITH(UsageError, parse_queue_spec("red"), "the queue type is one of infinite, droptail");
  EXPECT_THROW_WITH(UsageError, parse_queue_spec("droptail:"), "ARGS after the colon");
  EXPECT_THROW_WITH(UsageError, parse_queue_spec("droptail:packets=1;rm"), "ARGS after the colon");
  EXPECT_THROW_WITH(UsageError, parse_queue_spec(std::string(201, 'a')), "longer than 200");
}

TEST(SweepGrid, configurations_start_with_the_baseline_and_have_file_name_ids) {
  SweepSettings s = small_sweep();
  s.losses = {0, 0.01};
  const auto configs = sweep_configurations(s);
  ASSERT_EQ(configs.size(), 9u);
  EXPECT_FALSE(configs[0].emulated);
  EXPECT_EQ(configs[0].id(), "h1-multi-unemulated");
  EXPECT_EQ(configs[1].id(), "h1-multi-1mbit-30ms-loss0");
  EXPECT_EQ(configs[2].id(), "h1-multi-1mbit-30ms-loss0.01");
  EXPECT_EQ(configs[8].id(), "h1-multi-14mbit-120ms-loss0.01");
  s.protocols = {Protocol::kH2};
  s.single_server = true;
  s.rates_mbps = {0.2};
  EXPECT_EQ(sweep_configurations(s)[1].id(), "h2-single-0.2mbit-30ms-loss0");
  SweepSettings big = small_sweep();
  big.rates_mbps.assign(100, 1);
  big.rtts_ms.assign(100, 1);
  big.losses = {0, 0.1};
  EXPECT_THROW_WITH(UsageError, sweep_configurations(big), "20000 configurations");
}

TEST(SweepGrid, a_load_runs_mm_pageload_in_the_shells_of_its_configuration) {
  SweepSettings s = small_sweep();
  SweepPrograms p;
  const auto configs = sweep_configurations(s);
  EXPECT_EQ(
      load_command(s, configs[0], p, "/r/x.json"),
      (std::vector<std::string>{"mm-replay", "/data/rec", "--ignore-user-agent", "--", "mm-pageload", "--runs", "1",
                                "--timeout", "30", "--json", "/r/x.json", "--no-http2", "http://a.test/index.html"}));
  s.protocols = {Protocol::kH2};
  s.single_server = true;
  s.queue = "droptail:packets=100";
  s.match_user_agent = true;
  Configuration c{Variant{Protocol::kH2, true}, true, 12, 25, 0.02};
  EXPECT_EQ(load_command(s, c, p, "/r/y.json"), (std::vector<std::string>{"mm-replay",
                                                                          "/data/rec",
                                                                          "--single-server",
                                                                          "--http2",
                                                                          "mm-delay",
                                                                          "12.5",
                                                                          "mm-loss",
                                                                          "uplink",
                                                                          "0.02",
                                                                          "downlink",
                                                                          "0.02",
                                                                          "mm-link",
                                                                          "rate:12Mbit/s",
                                                                          "rate:12Mbit/s",
                                                                          "--uplink-queue=droptail",
                                                                          "--uplink-queue-args=packets=100",
                                                                          "--downlink-queue=droptail",
                                                                          "--downlink-queue-args=packets=100",
                                                                          "--",
                                                                          "mm-pageload",
                                                                          "--runs",
                                                                          "1",
                                                                          "--timeout",
                                                                          "30",
                                                                          "--json",
                                                                          "/r/y.json",
                                                                          "--http2",
                                                                          "http://a.test/index.html"}));
  // No mm-loss without loss; a queue without arguments gives none.
  s.queue = "codel";
  const auto argv = load_command(s, Configuration{Variant{Protocol::kH2, true}, true, 1, 30, 0}, p, "/r/z.json");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "mm-loss"), 0);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--uplink-queue=codel"), 1);
  EXPECT_EQ(std::count_if(argv.begin(), argv.end(), [](const std::string& w) { return w.find("args") != w.npos; }), 0);
}

TEST(SweepGrid, manifest_lists_the_configurations_and_reads_back) {
  const SweepSettings s = small_sweep();
  const nlohmann::json m = sweep_manifest(s);
  EXPECT_EQ(m["url"], s.url);
  EXPECT_EQ(m["runs"], 2);
  EXPECT_EQ(manifest_configurations(m, "m"), sweep_configurations(s));
  SweepSettings other = s;
  other.rates_mbps = {1, 25};
  other.runs = 3;
  EXPECT_EQ(manifest_differences(m, sweep_manifest(other)),
            (std::vector<std::string>{"configurations", "rates_mbps", "runs"}));
  EXPECT_TRUE(manifest_differences(m, sweep_manifest(s)).empty());
  nlohmann::json broken = m;
  broken["configurations"][1]["id"] = "../../etc";
  EXPECT_THROW_WITH(UserError, manifest_configurations(broken, "x/sweep.json"), "x/sweep.json is not an mm-sweep");
  broken = m;
  broken["configurations"][1]["rate_mbps"] = -1;
  EXPECT_THROW_WITH(UserError, manifest_configurations(broken, "m"), "out of bounds");
  EXPECT_THROW_WITH(UserError, manifest_configurations(nlohmann::json::array(), "m"), "format");
  EXPECT_THROW_WITH(UserError, manifest_configurations(nlohmann::json{{"format", 3}}, "m"), "format");
}

TEST(SweepGrid, emitted_jobs_are_one_quoted_command_per_configuration) {
  SweepSettings s = small_sweep();
  s.recording = "/data/my rec";
  s.url = "http://a.test/?q=1&r='x'";
  const auto lines = job_lines("mm-sweep", s, "out/");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0],
            "mm-sweep --recording '/data/my rec' --url 'http://a.test/?q=1&r='\\''x'\\''' --rates 1,14 --rtts 30,120 "
            "--loss 0 --runs 2 --timeout 30 --jobs 1 --only h1-multi-unemulated --out out/parts/h1-multi-unemulated");
  EXPECT_NE(lines[4].find("--only h1-multi-14mbit-120ms-loss0 --out out/parts/h1-multi-14mbit-120ms-loss0"),
            std::string::npos);
}

TEST(SweepGrid, three_protocols_make_each_configuration_three_times_with_their_commands) {
  EXPECT_EQ(parse_protocol_list("h3,h1"), (std::vector<Protocol>{Protocol::kH3, Protocol::kH1}));
  EXPECT_THROW_WITH(UsageError, parse_protocol_list("h1,h4"), "a comma-separated list of h1, h2, h3 and cumulus");
  EXPECT_THROW_WITH(UsageError, parse_protocol_list("h2,h2"), "lists h2 twice");
  EXPECT_THROW_WITH(UsageError, parse_protocol_list(""), "--protocols");
  SweepSettings s = small_sweep();
  s.rates_mbps = {14};
  s.rtts_ms = {120};
  s.protocols = {Protocol::kH1, Protocol::kH2, Protocol::kH3};
  const auto configs = sweep_configurations(s);
  std::vector<std::string> ids;
  for (const Configuration& c : configs) ids.push_back(c.id());
  EXPECT_EQ(ids, (std::vector<std::string>{"h1-multi-unemulated", "h2-multi-unemulated", "h3-multi-unemulated",
                                           "h1-multi-14mbit-120ms-loss0", "h2-multi-14mbit-120ms-loss0",
                                           "h3-multi-14mbit-120ms-loss0"}));
  const auto h3 = load_command(s, configs[5], SweepPrograms{}, "/r/h3.json");
  EXPECT_EQ(std::count(h3.begin(), h3.end(), "--http3"), 2);  // mm-replay's and mm-pageload's
  EXPECT_EQ(std::count(h3.begin(), h3.end(), "--http2"), 0);
  EXPECT_EQ(h3[2], "--http3");
  EXPECT_EQ(h3[h3.size() - 2], "--http3");
  const nlohmann::json m = sweep_manifest(s);
  EXPECT_EQ(m["protocols"], "h1,h2,h3");
  EXPECT_EQ(m["http2"], false);
  EXPECT_EQ(manifest_configurations(m, "m").size(), 6u);
  EXPECT_NE(job_lines("mm-sweep", s, "out").front().find(" --protocols h1,h2,h3 "), std::string::npos);
  // One protocol of h1 or h2 keeps the manifest it always had.
  s.protocols = {Protocol::kH2};
  EXPECT_FALSE(sweep_manifest(s).contains("protocols"));
  EXPECT_EQ(sweep_manifest(s)["http2"], true);
  s.protocols = {Protocol::kH3};
  EXPECT_EQ(sweep_manifest(s)["protocols"], "h3");
}

// --tcp-ecn: mm-replay's, right after the recording (every shell inside inherits it), in the
// manifest and the emitted jobs only when given, and a key that merged sweeps must share.
TEST(SweepGrid, tcp_ecn_goes_to_mm_replay) {
  SweepSettings s = small_sweep();
  const auto configs = sweep_configurations(s);
  const auto plain = load_command(s, configs[0], SweepPrograms{}, "/r/a.json");
  EXPECT_EQ(std::count_if(plain.begin(), plain.end(), [](const std::string& w) { return w.starts_with("--tcp-ecn"); }),
            0);
  EXPECT_FALSE(sweep_manifest(s).contains("tcp_ecn"));
  const nlohmann::json before = sweep_manifest(s);
  s.tcp_ecn = "on";
  for (const Configuration& c : configs) {
    const auto argv = load_command(s, c, SweepPrograms{}, "/r/a.json");
    ASSERT_GE(argv.size(), 3u);
    EXPECT_EQ(argv[2], "--tcp-ecn=on");
  }
  EXPECT_EQ(sweep_manifest(s)["tcp_ecn"], "on");
  EXPECT_EQ(manifest_differences(before, sweep_manifest(s)), std::vector<std::string>{"tcp_ecn"});
  EXPECT_NE(job_lines("mm-sweep", s, "out/")[0].find(" --tcp-ecn on "), std::string::npos);
}

// Cumulus: the Remote Proxy right inside mm-replay (outside the emulated link), the Local Proxy
// right around mm-pageload (inside it), the browser on HTTP/1.1 to the Local Proxy.
TEST(SweepGrid, cumulus_loads_run_through_both_proxies) {
  EXPECT_EQ(parse_protocol_list("h1,cumulus"), (std::vector<Protocol>{Protocol::kH1, Protocol::kCumulus}));
  SweepSettings s = small_sweep();
  s.rates_mbps = {14};
  s.rtts_ms = {120};
  s.protocols = {Protocol::kH1, Protocol::kCumulus};
  const auto configs = sweep_configurations(s);
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(configs[3].id(), "cumulus-multi-14mbit-120ms-loss0");
  const auto argv = load_command(s, configs[3], SweepPrograms{}, "/r/c.json");
  const std::vector<std::string> expected = {"mm-replay",
                                             s.recording,
                                             "--ignore-user-agent",
                                             "mm-cumulus-remote",
                                             "--",
                                             "mm-delay",
                                             "60",
                                             "mm-link",
                                             "rate:14Mbit/s",
                                             "rate:14Mbit/s",
                                             "--",
                                             "mm-cumulus-local",
                                             "--",
                                             "mm-pageload",
                                             "--runs",
                                             "1",
                                             "--timeout",
                                             "30",
                                             "--json",
                                             "/r/c.json",
                                             "--no-http2",
                                             s.url};
  EXPECT_EQ(argv, expected);
  const auto baseline = load_command(s, configs[1], SweepPrograms{}, "/r/b.json");
  EXPECT_EQ(std::vector<std::string>(baseline.begin() + 3, baseline.begin() + 8),
            (std::vector<std::string>{"mm-cumulus-remote", "--", "mm-cumulus-local", "--", "mm-pageload"}));
  EXPECT_EQ(sweep_manifest(s)["protocols"], "h1,cumulus");
  EXPECT_EQ(manifest_configurations(sweep_manifest(s), "m").at(3).variant.protocol_kind, Protocol::kCumulus);
}
