// SPDX-License-Identifier: GPL-3.0-or-later
// Monkey Do without a network: the workload read back as Monkey See writes it, the requests'
// heads and the server's log, the plan (each client's path, think times, server delays) and the
// comparison of traced and replayed response times.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "expect.hh"
#include "monkey/monkey_do.hh"
#include "monkey/monkey_plots.hh"
#include "monkey/monkey_wire.hh"
#include "monkey/workload.hh"
#include "util/exception.hh"

namespace {
constexpr Nanos kMs = kNanosPerMs;

TcpEndpoint endpoint(const std::string& address, uint16_t port) {
  TcpEndpoint e;
  const uint32_t a = Ipv4::parse(address)->value;
  e.address = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8),
               static_cast<uint8_t>(a)};
  e.port = port;
  return e;
}

// A connection as Monkey See reports it: `rtt_ms` (0: not measured), one exchange per response
// size, each request 300 bytes starting `gap_ms` after the previous response's end.
MonkeyConnection connection(uint64_t id, const std::string& client, double rtt_ms, std::vector<uint64_t> responses,
                            double gap_ms = 50) {
  MonkeyConnection c;
  c.id = id;
  c.start = 1'700'000'000 * kNanosPerSec + static_cast<Nanos>(id) * kNanosPerSec;
  c.client = endpoint(client, 40000);
  c.server = endpoint("10.0.0.1", 443);
  c.ended_by = "fin";
  if (rtt_ms > 0) c.rtt = ms_to_nanos(rtt_ms);
  c.bandwidth_bps = 8e6;
  c.loss = 0.01;
  Nanos at = ms_to_nanos(rtt_ms + 1);  // the first request after the handshake and 1 ms
  for (uint64_t bytes : responses) {
    MonkeyExchange e;
    e.request_start = c.start + at;
    e.request_end = c.start + at + kMs;
    e.request_bytes = 300;
    e.response_start = e.request_end + 2 * kMs;
    e.response_end = *e.response_start + 10 * kMs;
    e.response_bytes = bytes;
    c.exchanges.push_back(e);
    at = *e.response_end - c.start + ms_to_nanos(gap_ms);
  }
  c.end = c.start + at;
  return c;
}

std::string workload_of(const std::vector<MonkeyConnection>& cs) {
  std::string text = workload_header("test.pcap");
  for (const MonkeyConnection& c : cs) text += workload_lines(c);
  return text;
}
}  // namespace

TEST(MonkeyDo, reads_back_what_monkey_see_writes) {
  const auto w = parse_workload(
      workload_of({connection(1, "10.9.0.1", 40, {1000, 20000}), connection(2, "10.9.0.2", 0, {5})}), "w");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].client, "10.9.0.1");
  EXPECT_EQ(w[0].server_port, 443);
  EXPECT_DOUBLE_EQ(*w[0].rtt_ms, 40);
  EXPECT_DOUBLE_EQ(*w[0].bandwidth_mbps, 8);
  EXPECT_DOUBLE_EQ(*w[0].loss, 0.01);
  ASSERT_EQ(w[0].exchanges.size(), 2u);
  EXPECT_EQ(w[0].exchanges[1].index, 2u);
  EXPECT_EQ(w[0].exchanges[1].response_bytes, 20000u);
  EXPECT_DOUBLE_EQ(w[0].exchanges[0].request_start_ms, 41);
  EXPECT_DOUBLE_EQ(*w[0].exchanges[0].response_time_ms, 13);  // 1 + 2 + 10
  EXPECT_FALSE(w[1].rtt_ms);
}

TEST(MonkeyDo, refuses_what_is_not_a_workload_naming_the_line) {
  EXPECT_THROW_WITH(UserError, parse_workload("hello\n", "w"), "is not a workload of mm-monkey see");
  const std::string good = workload_of({connection(1, "10.9.0.1", 40, {1000})});
  EXPECT_THROW_WITH(UserError, parse_workload(good + "X\t1\n", "w"), "starts with C");
  EXPECT_THROW_WITH(UserError, parse_workload(good + "E\t1\t2\n", "w"), "has 15 fields, not 3");
  std::string wrong_id = good;
  wrong_id += "E\t7\t2\t1\t1\t1\t-\t-\t0\t-\t-\t0\t-\t-\t-\n";
  EXPECT_THROW_WITH(UserError, parse_workload(wrong_id, "w"), "not right after its connection");
  std::string negative = good;
  negative.replace(negative.rfind("\t41.000\t"), 8, "\t-4.000\t");
  EXPECT_THROW_WITH(UserError, parse_workload(negative, "w"), "request_start_ms \"-4.000\" is not a number");
  std::string spaced = good;
  spaced.replace(spaced.rfind("\t-\t-\n"), 5, "\tGET /a b\t-\n");
  EXPECT_THROW_WITH(UserError, parse_workload(spaced, "w"), "request: \"GET /a b\" is not \"METHOD TARGET\"");
}

TEST(MonkeyDo, reads_the_responses_parts_and_format_1) {
  MonkeyConnection c = connection(1, "10.9.0.1", 40, {4202});
  c.nodelay = true;
  c.exchanges[0].parts = {{202, 0}, {4000, 2 * kMs}};
  const auto w = parse_workload(workload_of({c}), "w");
  ASSERT_EQ(w[0].exchanges[0].parts.size(), 2u);
  EXPECT_EQ(w[0].exchanges[0].parts[1].bytes, 4000u);
  EXPECT_DOUBLE_EQ(w[0].exchanges[0].parts[1].pause_ms, 2);
  EXPECT_TRUE(w[0].nodelay);
  // The plan tells the server emulator: Nagle off for connection 1, the response in two parts.
  const MonkeyPlan plan = plan_replay(w, 10);
  EXPECT_EQ(plan.server, "1 1 1 202,4000@2000\n");
  const ServerPlan back = parse_server_plan(plan.server, "plan");
  EXPECT_EQ(back.parts.at({1, 1}), (std::vector<ServerPart>{{202, 0}, {4000, 2 * kMs}}));
  EXPECT_TRUE(back.nodelay.count(1));
  EXPECT_THROW_WITH(UserError, parse_server_plan("1 1 2 5\n", "plan"), "plan line 1");
  // Parts that do not add up to the response are refused.
  std::string wrong = workload_of({c});
  wrong.replace(wrong.rfind("202,4000@2.000"), 14, "202,4001@2.000");
  EXPECT_THROW_WITH(UserError, parse_workload(wrong, "w"), "add up to 4203 bytes, not 4202");
  // Format 1: no nodelay column, no parts.
  const std::string v1 =
      "# mahimahi monkey workload 1\n"
      "C\t1\t1.0\t10.9.0.1\t40000\t10.0.0.1\t80\tfin\t20\t20\t1\t10\t1\t0\t10\t0\t0\t1460\t1460\t7\t7\t1\t1\t0\t0\t"
      "65535\t1\t100\t1000\t1\t50\t-\n"
      "E\t1\t1\t20.0\t20.0\t100\t21.0\t30.0\t1000\t1.0\t10.0\t1\n";
  const auto old = parse_workload(v1, "w1");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_TRUE(old[0].exchanges[0].parts.empty());
  EXPECT_FALSE(old[0].nodelay);
  EXPECT_NE(plan_replay(old, 10).paths.find(" loss=0.000000,0"), std::string::npos);  // no pattern: the rate
}

TEST(MonkeyDo, request_heads_and_log_lines_go_and_come_back) {
  const MonkeyRequest r{12, 3, 500, 1'000'000, 2500};
  const std::string head = encode_request_head(r);
  ASSERT_EQ(head.back(), '\n');
  EXPECT_LE(head.size(), kMaxRequestHead);
  EXPECT_EQ(parse_request_head(head.substr(0, head.size() - 1)).request, r);
  EXPECT_EQ(parse_request_head("MKY1 stop 1").stop->status, 1);
  EXPECT_FALSE(parse_request_head("MKY1 stop 300").stop);
  EXPECT_FALSE(parse_request_head("MKY1 1 2 3 4").request);
  EXPECT_FALSE(parse_request_head("MKY1 1 2 3 4 5 6").request);
  EXPECT_FALSE(parse_request_head("GET / HTTP/1.1").request);
  EXPECT_FALSE(parse_request_head("MKY1 1 2 3 4 999999999999").request);  // a delay past ten minutes
  const ServedExchange e{12, 3, 1000, 5000, 77};
  const auto back = parse_served_line(served_line(e).substr(0, served_line(e).size() - 1));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->last_byte_sent, 5000);
  EXPECT_FALSE(parse_served_line("1 2 3"));
}

TEST(MonkeyDo, plans_each_clients_path_and_the_think_times) {
  MonkeyConnection first = connection(1, "10.9.0.1", 40, {1000, 20000}, 100),
                   second = connection(2, "10.9.0.1", 30, {5});
  first.server_segments = 20;
  first.retransmissions = 2;
  first.lost_packets = {3, 7};
  second.lost_packets = {5};
  const auto w = parse_workload(workload_of({first, second, connection(3, "10.9.0.2", 0, {5})}), "w");
  const MonkeyPlan plan = plan_replay(w, 1024);
  ASSERT_EQ(plan.clients.size(), 2u);
  EXPECT_EQ(plan.clients[0].str(), "172.16.0.1");
  // Client 1: its connections' smallest RTT, halved each way, and the trace's losses packet by
  // packet (the second connection's after the first's 22 packets); client 2 has no RTT: the
  // median of all (of 40 and 30, the nearest rank's: 30), and lost nothing.
  EXPECT_EQ(plan.paths,
            "172.16.0.1 delay=15.000 rate=8000000bit/s drops=3,7,27\n"
            "172.16.0.2 delay=15.000 rate=8000000bit/s\n");
  EXPECT_EQ(plan.without_rtt, 1u);
  ASSERT_EQ(plan.connections.size(), 3u);
  EXPECT_EQ(plan.connections[1].start, 1000 * kMs);  // a second after the first
  const auto& x = plan.connections[0].exchanges;
  ASSERT_EQ(x.size(), 2u);
  // The first request 41 ms after the SYN, less the handshake's round trip (the client's, 30):
  // 11 ms of thought; the second 100 ms after the response, less a round trip: 70 ms.
  EXPECT_EQ(x[0].think, 11 * kMs);
  EXPECT_EQ(x[1].think, 70 * kMs);
  EXPECT_EQ(x[1].request.delay_us, 2000u);
  EXPECT_EQ(x[1].request.response_bytes, 20000u);
  EXPECT_EQ(x[1].request.request_bytes, 300u);
  EXPECT_THROW_WITH(UserError, plan_replay(w, 1), "more than 1 clients");
}

TEST(MonkeyDo, compares_traced_and_replayed_response_times) {
  const auto w = parse_workload(workload_of({connection(1, "10.9.0.1", 40, {1000, 20000})}), "w");
  const MonkeyPlan plan = plan_replay(w, 1024);
  ClientRunResult clients;
  clients.connections = 1;
  clients.exchanges = {{1, 1, 0, 50 * kMs, true}, {1, 2, 0, 0, false}};
  // Traced 13 ms; replayed 14.2 ms (9.2 % over).
  const MonkeyResults r = compare_replay(w, plan, clients, {{1, 1, 1000 * kMs, 1000 * kMs + 14'200'000, 1000}});
  EXPECT_EQ(r.compared, 1u);
  EXPECT_EQ(r.within_10, 1u);
  EXPECT_NE(r.csv.find("\n1,1,10.9.0.1,172.16.0.1,40.000,8.000,0.0100,300,1000,13.000,14.200,0.0923,50.000,ok\n"),
            std::string::npos)
      << r.csv;
  EXPECT_NE(r.csv.find("\n1,2,10.9.0.1,172.16.0.1,40.000,8.000,0.0100,300,20000,13.000,,,,failed\n"), std::string::npos)
      << r.csv;
  EXPECT_NE(r.summary.find("1 exchange not replayed"), std::string::npos) << r.summary;
}

TEST(MonkeyDo, plot_reads_the_results_it_draws) {
  const auto w = parse_workload(workload_of({connection(1, "10.9.0.1", 40, {1000, 20000})}), "w");
  ClientRunResult clients;
  clients.connections = 1;
  clients.exchanges = {{1, 1, 0, 50 * kMs, true}, {1, 2, 0, 0, false}};
  const MonkeyResults r = compare_replay(w, plan_replay(w, 10), clients, {{1, 1, 0, 14'200'000, 1000}});
  const std::vector<ReplayedRow> rows = parse_replay_results(r.csv, "results");
  ASSERT_EQ(rows.size(), 1u);  // the failed exchange is not drawn
  EXPECT_EQ(rows[0].response_bytes, 1000u);
  EXPECT_DOUBLE_EQ(rows[0].traced_ms, 13);
  EXPECT_DOUBLE_EQ(rows[0].replayed_ms, 14.2);
  EXPECT_THROW_WITH(UserError, parse_replay_results("a,b\n", "x.csv"), "is not the results of mm-monkey do");
  std::string cut = r.csv;
  cut.replace(cut.find(",ok\n"), 4, "\n");
  EXPECT_THROW_WITH(UserError, parse_replay_results(cut, "x.csv"), "x.csv line 2: 14 fields expected");
}

TEST(MonkeyDo, a_real_servers_request_is_the_traced_one_at_its_size) {
  WorkloadExchange get;
  get.method = "GET";
  get.target = "/o4000?x=1";
  get.host = "example.org";
  get.request_bytes = 300;
  const auto g = http_request_plan(get, "10.0.0.1");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->head.size(), 300u);
  EXPECT_TRUE(g->head.starts_with("GET /o4000?x=1 HTTP/1.1\r\nHost: example.org\r\n")) << g->head;
  EXPECT_TRUE(g->head.ends_with("\r\n\r\n"));
  EXPECT_EQ(g->body, 0u);
  // Smaller than its head: the head alone; no Host in the trace: the server's address.
  get.request_bytes = 10;
  get.host.clear();
  EXPECT_EQ(http_request_plan(get, "10.0.0.1")->head, "GET /o4000?x=1 HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n");
  // A method with a body: Content-Length gives the rest, the whole as recorded.
  // Every size from the head's own on: exactly, whether by a field, or the Host field's spaces.
  const uint64_t bare = http_request_plan(get, "10.0.0.1")->head.size();  // no padding at 10 bytes
  for (uint64_t size = 40; size < 2000; size++) {
    WorkloadExchange sized = get;
    sized.request_bytes = size;
    const auto p = http_request_plan(sized, "10.0.0.1");
    ASSERT_EQ(p->head.size(), std::max(size, bare)) << p->head;
  }
  // Across the lengths of Content-Length's number.
  for (uint64_t size = 64; size < 20000; size++) {
    WorkloadExchange post = get;
    post.method = "POST";
    post.request_bytes = size;
    const auto p = http_request_plan(post, "h");
    ASSERT_TRUE(p);
    ASSERT_EQ(p->head.size() + p->body, size) << p->head;
    ASSERT_NE(p->head.find(" " + std::to_string(p->body) + "\r\n\r\n"), std::string::npos) << p->head;
  }
  WorkloadExchange tls;
  tls.request_bytes = 517;
  EXPECT_FALSE(http_request_plan(tls, "h"));
}
