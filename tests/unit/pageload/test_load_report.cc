// SPDX-License-Identifier: GPL-3.0-or-later
// A load's results: CSV quoting and empty fields, the JSON round trip and its errors, the summary.
#include <sstream>

#include "expect.hh"
#include "pageload/load_report.hh"
#include "util/exception.hh"

namespace {
LoadResult ok_load(const std::string& url, int run, double plt) {
  LoadResult load;
  load.url = url;
  load.run = run;
  load.status = LoadResult::Status::Ok;
  load.started = "2026-11-23T09:41:07.123Z";
  load.plt_ms = plt;
  load.fcp_ms = plt / 4;
  load.lcp_ms = plt / 2;
  load.speed_index_ms = plt / 3;
  load.bytes = 1000 * run;
  load.requests = 10 + run;
  load.origins = 3;
  load.frames = 25;
  load.protocols = {{"https://b.test:443", "h2"}, {"http://a.test:80", "h1"}};
  return load;
}

std::vector<LoadResult> round_trip(const std::vector<LoadResult>& loads) {
  std::stringstream text;
  write_load_json(loads, text);
  return read_load_json(text, "loads.json");
}

std::vector<LoadResult> read_text(const std::string& text) {
  std::istringstream in(text);
  return read_load_json(in, "loads.json");
}
}  // namespace

TEST(LoadReport, status_names) {
  EXPECT_EQ(status_name(LoadResult::Status::Ok), "ok");
  EXPECT_EQ(status_name(LoadResult::Status::Timeout), "timeout");
  EXPECT_EQ(status_name(LoadResult::Status::Error), "error");
}

TEST(LoadReport, csv_header_lists_the_columns_after_the_extra_ones) {
  EXPECT_EQ(load_csv_header(),
            "url,run,status,reason,started,plt_ms,fcp_ms,lcp_ms,speed_index_ms,bytes,requests,origins,frames,"
            "protocols\n");
  EXPECT_EQ(load_csv_header({"rate_mbps", "rtt,ms"}).substr(0, 30), "rate_mbps,\"rtt,ms\",url,run,sta");
}

TEST(LoadReport, csv_row_quotes_commas_and_quotes_and_leaves_absent_metrics_empty) {
  LoadResult load;
  load.url = "http://a.test/?q=1,2";
  load.run = 3;
  load.status = LoadResult::Status::Timeout;
  load.reason = "no \"load\" event within 60 s";
  load.started = "2026-11-23T09:41:07.123Z";
  load.fcp_ms = 812.25;
  load.protocols = {{"http://a.test:80", "h1"}};
  EXPECT_EQ(load_csv_row(load, {"14", "a,b"}),
            "14,\"a,b\",\"http://a.test/?q=1,2\",3,timeout,\"no \"\"load\"\" event within 60 s\","
            "2026-11-23T09:41:07.123Z,,812.250,,,,,,,http://a.test:80=h1\n");
}

TEST(LoadReport, csv_row_of_a_complete_load_has_every_field_and_protocols_in_origin_order) {
  const std::string row = load_csv_row(ok_load("http://a.test/", 2, 1500.5));
  EXPECT_EQ(row,
            "http://a.test/,2,ok,,2026-11-23T09:41:07.123Z,1500.500,375.125,750.250,500.167,2000,12,3,25,"
            "http://a.test:80=h1 https://b.test:443=h2\n");
}

TEST(LoadReport, json_round_trip_keeps_every_field_and_absent_metrics) {
  LoadResult failed;
  failed.url = "https://c.test/\"quoted\"";
  failed.run = 7;
  failed.status = LoadResult::Status::Error;
  failed.reason = "net::ERR_CERT_AUTHORITY_INVALID";
  failed.started = "2026-11-23T09:42:00.000Z";
  failed.fcp_ms = 12.5;  // a failed load may still have painted
  failed.host = HostFacts{"node2", "6.1.0-28-amd64", "Intel(R) Xeon(R) \"Gold\"", 16, 3.25, "0.1.0"};
  const std::vector<LoadResult> loads = {ok_load("http://a.test/", 1, 1234.567890123), failed};
  const auto back = round_trip(loads);
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].url, loads[i].url);
    EXPECT_EQ(back[i].run, loads[i].run);
    EXPECT_EQ(back[i].status, loads[i].status);
    EXPECT_EQ(back[i].reason, loads[i].reason);
    EXPECT_EQ(back[i].started, loads[i].started);
    EXPECT_EQ(back[i].plt_ms, loads[i].plt_ms);
    EXPECT_EQ(back[i].fcp_ms, loads[i].fcp_ms);
    EXPECT_EQ(back[i].lcp_ms, loads[i].lcp_ms);
    EXPECT_EQ(back[i].speed_index_ms, loads[i].speed_index_ms);
    EXPECT_EQ(back[i].bytes, loads[i].bytes);
    EXPECT_EQ(back[i].requests, loads[i].requests);
    EXPECT_EQ(back[i].origins, loads[i].origins);
    EXPECT_EQ(back[i].frames, loads[i].frames);
    EXPECT_EQ(back[i].protocols, loads[i].protocols);
    EXPECT_EQ(back[i].host, loads[i].host);
  }
  EXPECT_FALSE(back[0].host);
  EXPECT_FALSE(back[1].plt_ms);
  EXPECT_FALSE(back[1].speed_index_ms);
  EXPECT_TRUE(round_trip({}).empty());
}

TEST(LoadReport, host_facts_are_this_machines_and_bounded_when_read) {
  const HostFacts here = host_facts();
  EXPECT_FALSE(here.host.empty());
  EXPECT_FALSE(here.kernel.empty());
  EXPECT_FALSE(here.cpu.empty());
  EXPECT_GE(here.cpus, 1);
  EXPECT_GE(here.load1, 0);
  EXPECT_EQ(here.mahimahi, PACKAGE_VERSION);
  // Read back from a file anyone may have written: texts bounded and printable, wrong types left out.
  std::istringstream text("[{\"url\":\"http://a.test/\",\"run\":1,\"status\":\"ok\",\"host\":{\"host\":\"" +
                          std::string(500, 'n') + "\",\"kernel\":\"a\\nb\",\"cpus\":\"2\",\"load1\":1.5}}]");
  const std::vector<LoadResult> loads = read_load_json(text, "x.json");
  ASSERT_EQ(loads.size(), 1u);
  ASSERT_TRUE(loads[0].host);
  EXPECT_EQ(loads[0].host->host, std::string(64, 'n') + "...");
  EXPECT_EQ(loads[0].host->kernel.find('\n'), std::string::npos);
  EXPECT_EQ(loads[0].host->cpus, 0);
  EXPECT_DOUBLE_EQ(loads[0].host->load1, 1.5);
}

TEST(LoadReport, json_writes_absent_metrics_as_null) {
  LoadResult load;
  load.url = "http://a.test/";
  std::ostringstream text;
  write_load_json({load}, text);
  EXPECT_NE(text.str().find("\"plt_ms\":null"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"status\":\"error\""), std::string::npos) << text.str();
}

TEST(LoadReport, read_load_json_names_the_file_and_the_problem) {
  EXPECT_THROW_WITH(UserError, read_text("{\"url\": 1"), "loads.json: not JSON");
  EXPECT_THROW_WITH(UserError, read_text("[{\"plt_ms\": 1e999}]"), "loads.json: not JSON");  // beyond a double
  EXPECT_THROW_WITH(UserError, read_text("{}"), "loads.json: a JSON object, not the array of loads");
  EXPECT_THROW_WITH(UserError, read_text("[3]"), "loads.json: load 1 is not a JSON object");
  EXPECT_THROW_WITH(UserError, read_text("[{\"run\": 1, \"status\": \"ok\"}]"), "loads.json: load 1 has no \"url\"");
  EXPECT_THROW_WITH(UserError, read_text("[{\"url\": \"u\", \"run\": 0, \"status\": \"ok\"}]"),
                    "\"run\" is 0, not a run number from 1 to 10000");
  EXPECT_THROW_WITH(UserError, read_text("[{\"url\": \"u\", \"run\": 1.5, \"status\": \"ok\"}]"), "\"run\" is 1.5");
  EXPECT_THROW_WITH(UserError, read_text("[{\"url\": \"u\", \"run\": 1, \"status\": \"done\"}]"),
                    "\"status\" is \"done\", not ok, timeout or error");
  EXPECT_THROW_WITH(UserError, read_text("[{\"url\": \"u\", \"run\": 1, \"status\": \"ok\", \"plt_ms\": \"fast\"}]"),
                    "\"plt_ms\" is \"fast\", not a number >= 0 or null");
  EXPECT_THROW_WITH(UserError, read_text("[{\"url\": \"u\", \"run\": 1, \"status\": \"ok\", \"bytes\": -1}]"),
                    "\"bytes\" is -1");
  EXPECT_THROW_WITH(UserError,
                    read_text("[{\"url\": \"u\", \"run\": 1, \"status\": \"ok\", \"started\": \"yesterday\"}]"),
                    "\"started\" is \"yesterday\", not an ISO 8601 time");
  EXPECT_THROW_WITH(UserError,
                    read_text("[{\"url\": \"u\", \"run\": 1, \"status\": \"ok\", \"protocols\": {\"o\": 2}}]"),
                    "the protocol of o is 2, not a string");
  EXPECT_THROW_WITH(UserError, read_text("[{\"url\": \"u\", \"run\": 1, \"status\": \"ok\"}, {\"url\": \"\"}]"),
                    "loads.json: load 2: \"url\" is empty");
  EXPECT_THROW_WITH(UserError, read_text("[[[[[]]]]]"), "nested deeper than an array of loads");
}

TEST(LoadReport, read_load_json_refuses_a_file_larger_than_its_bound) {
  std::stringstream text;
  write_load_json({ok_load("http://a.test/", 1, 100), ok_load("http://a.test/", 2, 200)}, text);
  const size_t size = text.str().size();
  std::istringstream exact(text.str()), over(text.str());
  EXPECT_EQ(read_load_json(exact, "loads.json", size).size(), 2u);
  EXPECT_THROW_WITH(UserError, read_load_json(over, "loads.json", size - 1), "loads.json: larger than ");
  EXPECT_EQ(kMaxLoadJsonBytes, 256u * 1024 * 1024);
}

TEST(LoadReport, read_load_json_accepts_missing_optional_fields) {
  const auto loads = read_text("[{\"url\": \"http://a.test/\", \"run\": 2, \"status\": \"timeout\"}]");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0].run, 2);
  EXPECT_EQ(loads[0].status, LoadResult::Status::Timeout);
  EXPECT_FALSE(loads[0].plt_ms);
  EXPECT_TRUE(loads[0].protocols.empty());
}

TEST(LoadReport, summary_gives_each_url_its_medians_and_the_loads_that_failed) {
  std::vector<LoadResult> loads;
  // a.test: PLTs 100..1000 in runs 1..10, run 4 timed out: ok PLTs 100,200,300,500,...,1000.
  for (int run = 1; run <= 10; ++run) {
    LoadResult load = ok_load("http://a.test/", run, 100.0 * run);
    if (run == 4) {
      load.status = LoadResult::Status::Timeout;
      load.reason = "no load event within 60 s";
    }
    loads.push_back(load);
  }
  LoadResult b = ok_load("http://b.test/", 1, 2000);
  b.lcp_ms.reset();
  loads.push_back(b);
  std::ostringstream out;
  write_load_summary(loads, out);
  const std::string text = out.str();

  EXPECT_NE(text.find("http://a.test/: 9 of 10 ok\n"), std::string::npos) << text;
  // Nine ok PLTs: 100 200 300 500 600 700 800 900 1000; median the 5th (600), p75 the 7th (800),
  // p95 the 9th (1000).
  EXPECT_NE(text.find("  PLT (ms)                 600.0       800.0      1000.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  FCP (ms)                 150.0       200.0       250.0\n"), std::string::npos) << text;
  // bytes 1000*run over the ok runs: median 6000; requests 10+run: median 16; origins 3.
  EXPECT_NE(text.find("  bytes                     6000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  requests                    16\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  origins                      3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  run 4: timeout: no load event within 60 s\n"), std::string::npos) << text;
  EXPECT_LT(text.find("http://a.test/"), text.find("http://b.test/"));
  EXPECT_NE(text.find("http://b.test/: 1 of 1 ok\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  LCP (ms)                     -           -           -  (0 loads)\n"), std::string::npos)
      << text;
}

TEST(LoadReport, summary_of_a_url_without_ok_loads_lists_the_reasons) {
  LoadResult load;
  load.url = "http://never.test/";
  load.status = LoadResult::Status::Error;
  load.reason = "net::ERR_NAME_NOT_RESOLVED";
  std::ostringstream out;
  write_load_summary({load}, out);
  EXPECT_EQ(out.str(), "http://never.test/: 0 of 1 ok\n  run 1: error: net::ERR_NAME_NOT_RESOLVED\n");
}
