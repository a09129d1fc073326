// SPDX-License-Identifier: GPL-3.0-or-later
// The replay matcher: matching rules (scheme, Host normalisation, method, path, closest query,
// User-Agent, repeated requests), response preparation (de-chunking, hop-by-hop fields,
// Content-Length, HEAD), misses that explain themselves, loading with warnings, origins and DNS
// names.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "expect.hh"
#include "http/deterministic_page.hh"
#include "replay/replay_index.hh"
#include "replay_fixture.hh"
#include "util/exception.hh"

using namespace replay_test;

TEST(ReplayIndex, replay_exact_match) {
  PairSpec s = at("GET /index.html HTTP/1.1", "hello");
  s.response_headers = {{"Content-Type", "text/html"}, {"Content-Length", "5"}, {"Set-Cookie", "a=1"}};
  Recording rec({s});
  ASSERT_TRUE(rec.warnings.empty());
  ASSERT_EQ(rec.index->pairs(), size_t{1});
  const ReplayMatch m = rec.match(get("/index.html"));
  ASSERT_TRUE(m.found);
  ASSERT_EQ(m.response.status, 200);
  ASSERT_EQ(m.response.reason, std::string("OK"));
  ASSERT_EQ(m.response.body, std::string("hello"));
  ASSERT_EQ(m.response.headers.size(), size_t{3});
  ASSERT_EQ(m.response.headers[0].key, std::string("Content-Type"));
  ASSERT_EQ(m.response.headers[1].value, std::string("5"));
  ASSERT_EQ(m.response.headers[2].key, std::string("Set-Cookie"));
  ASSERT_TRUE(m.log_line.empty());
  // The HTTP version plays no part: a browser speaking HTTP/2 to Apache still matches.
  PairSpec old = at("GET /old HTTP/1.0", "old");
  Recording rec2({old});
  ASSERT_TRUE(rec2.match(get("/old")).found);
}

TEST(ReplayIndex, replay_scheme_mismatch) {
  Recording rec({at("GET /a HTTP/1.1", "plain")});
  const ReplayMatch m = rec.match(get("/a", "example.com", true));
  ASSERT_TRUE(!m.found);
  ASSERT_EQ(m.response.status, 404);
  ASSERT_TRUE(contains(m.response.body, "scheme"));
  ASSERT_TRUE(rec.match(get("/a", "example.com", false)).found);
}

TEST(ReplayIndex, replay_host_normalization) {
  PairSpec s = at("GET /x HTTP/1.1", "secure", "Example.COM");
  s.https = true;
  s.port = 443;
  PairSpec t = at("GET /y HTTP/1.1", "plain", "www.a.com:80");
  Recording rec({s, t});
  ASSERT_TRUE(rec.match(get("/x", "example.com", true)).found);
  ASSERT_TRUE(rec.match(get("/x", "EXAMPLE.com.:443", true)).found);
  ASSERT_TRUE(rec.match(get("/x", "example.com:443", true)).found);
  ASSERT_TRUE(!rec.match(get("/x", "example.com:80", true)).found);  // not the https default port
  ASSERT_TRUE(rec.match(get("/y", "WWW.A.COM")).found);
  ASSERT_TRUE(rec.match(get("/y", "www.a.com.")).found);
}

TEST(ReplayIndex, replay_non_default_port_must_match) {
  Recording rec({at("GET /p HTTP/1.1", "eight", "a.com:8080")});
  ASSERT_TRUE(rec.match(get("/p", "a.com:8080")).found);
  ASSERT_TRUE(rec.match(get("/p", "A.com:8080")).found);
  const ReplayMatch m = rec.match(get("/p", "a.com"));
  ASSERT_TRUE(!m.found);
  ASSERT_TRUE(!rec.match(get("/p", "a.com:8081")).found);
}

TEST(ReplayIndex, replay_method_mismatch) {
  Recording rec({at("GET /form HTTP/1.1", "form")});
  const ReplayMatch m = rec.match(get("/form", "example.com", false, "UA", "POST"));
  ASSERT_TRUE(!m.found);
  ASSERT_TRUE(contains(m.response.body, "method"));
  ASSERT_TRUE(contains(m.log_line, "method"));
}

TEST(ReplayIndex, replay_path_mismatch) {
  Recording rec({at("GET /a/b HTTP/1.1", "ab")});
  const ReplayMatch m = rec.match(get("/a/c"));
  ASSERT_TRUE(!m.found);
  ASSERT_TRUE(contains(m.response.body, "path"));
  ASSERT_TRUE(contains(m.response.body, "GET http://example.com/a/b"));
  ASSERT_TRUE(!rec.match(get("/a/b/")).found);
}

TEST(ReplayIndex, replay_query_closest_by_longest_common_substring) {
  Recording rec({at("GET /q?id=123&t=1 HTTP/1.1", "first"), at("GET /q?id=999&t=2 HTTP/1.1", "second")});
  ASSERT_EQ(rec.match(get("/q?id=123&t=7")).response.body, std::string("first"));
  ASSERT_EQ(rec.match(get("/q?id=999&t=7")).response.body, std::string("second"));
  ASSERT_EQ(rec.match(get("/q?id=999&t=2")).response.body, std::string("second"));
  ASSERT_EQ(rec.match(get("/q")).response.body, std::string("first"));  // a tie: the earliest
  ASSERT_EQ(rec.match(get("/q?zzz")).response.body, std::string("first"));
  // Unlike the original, a query on one side only is no obstacle.
  Recording bare({at("GET /r HTTP/1.1", "r")});
  ASSERT_TRUE(bare.match(get("/r?cachebust=42")).found);
  ASSERT_EQ(longest_common_substring("id=123&t=7", "id=123&t=1"), size_t{9});
  ASSERT_EQ(longest_common_substring("", "abc"), size_t{0});
  ASSERT_EQ(longest_common_substring("xabcy", "zzabczz"), size_t{3});
}

TEST(ReplayIndex, replay_user_agent_rule) {
  PairSpec none = at("GET /n HTTP/1.1", "no-ua");
  none.request_headers = {{"Host", "example.com"}};
  Recording rec({at("GET /u HTTP/1.1", "with-ua"), none});
  const ReplayMatch other = rec.match(get("/u", "example.com", false, "Other"));
  ASSERT_TRUE(!other.found);
  ASSERT_TRUE(contains(other.response.body, "user-agent"));
  ASSERT_TRUE(!rec.match(get("/u", "example.com", false, std::nullopt)).found);
  ASSERT_TRUE(rec.match(get("/u", "example.com", false, "UA")).found);
  ASSERT_TRUE(rec.match(get("/u", "example.com", false, "Other"), {true}).found);
  ASSERT_TRUE(rec.match(get("/u", "example.com", false, std::nullopt), {true}).found);
  ASSERT_TRUE(!rec.match(get("/n", "example.com", false, "UA")).found);
  ASSERT_TRUE(rec.match(get("/n", "example.com", false, std::nullopt)).found);
  ASSERT_TRUE(rec.match(get("/n", "example.com", false, "UA"), {true}).found);
}

TEST(ReplayIndex, replay_repeated_identical_requests_in_recorded_order) {
  PairSpec a = at("GET /counter HTTP/1.1", "third"), b = at("GET /counter HTTP/1.1", "first"),
           c = at("GET /counter HTTP/1.1", "second");
  a.start_us = 300;
  b.start_us = 100;
  c.start_us = 200;
  PairSpec other = at("GET /counter?x=1 HTTP/1.1", "query");
  other.start_us = 50;
  Recording rec({a, b, c, other});
  ASSERT_EQ(rec.match(get("/counter")).response.body, std::string("first"));
  ASSERT_EQ(rec.match(get("/counter")).response.body, std::string("second"));
  ASSERT_EQ(rec.match(get("/counter")).response.body, std::string("third"));
  ASSERT_EQ(rec.match(get("/counter")).response.body, std::string("third"));
  // Another Host spelling of the same request shares the counter; another User-Agent does not.
  ASSERT_EQ(rec.match(get("/counter", "EXAMPLE.COM:80")).response.body, std::string("third"));
  ASSERT_EQ(rec.match(get("/counter", "example.com", false, "Other"), {true}).response.body, std::string("first"));
  ASSERT_EQ(rec.match(get("/counter?x=1")).response.body, std::string("query"));
  ASSERT_EQ(rec.match(get("/counter?x=1")).response.body, std::string("query"));
}

TEST(ReplayIndex, replay_repeats_first_serves_the_first_recorded_response_every_time) {
  PairSpec a = at("GET /counter HTTP/1.1", "second"), b = at("GET /counter HTTP/1.1", "first");
  a.start_us = 200;
  b.start_us = 100;
  Recording rec({a, b});
  ReplayOptions first;
  first.repeats_in_order = false;
  for (int i = 0; i < 3; i++) ASSERT_EQ(rec.match(get("/counter"), first).response.body, std::string("first"));
  // The in-order counter was not moved by them.
  ASSERT_EQ(rec.match(get("/counter")).response.body, std::string("first"));
  ASSERT_EQ(rec.match(get("/counter")).response.body, std::string("second"));
  ASSERT_EQ(rec.match(get("/counter"), first).response.body, std::string("first"));
}

TEST(ReplayIndex, replay_deterministic_pages_get_the_script_for_their_recorded_time) {
  PairSpec page = at("GET /page HTTP/1.1", "<!doctype html><html><head><title>p</title></head></html>");
  page.response_headers = {{"Content-Type", "text/html"}, {"Content-Security-Policy", "script-src 'self'"}};
  page.start_us = 1'790'000'000'123'456;
  PairSpec script = at("GET /app.js HTTP/1.1", "<head>");
  script.response_headers = {{"Content-Type", "application/javascript"}};
  Recording plain({page, script});
  ASSERT_EQ(plain.match(get("/page")).response.body, page.body);
  Recording deterministic({page, script}, true);
  const ReplayMatch m = deterministic.match(get("/page"));
  ASSERT_TRUE(m.found);
  ASSERT_EQ(m.response.body, "<!doctype html><html><head><script>" + deterministic_script(1'790'000'000'123) +
                                 "</script><title>p</title></head></html>");
  bool length = false, policy = false;
  for (const HttpHeader& h : m.response.headers) {
    if (h.key == "Content-Length") length = h.value == std::to_string(m.response.body.size());
    if (h.key == "Content-Security-Policy") policy = h.value.starts_with("script-src 'self' 'sha256-");
  }
  ASSERT_TRUE(length && policy);
  ASSERT_EQ(deterministic.match(get("/app.js")).response.body, "<head>");  // not a page
}

TEST(ReplayIndex, replay_chunked_body_served_dechunked) {
  PairSpec s = at("GET /chunked HTTP/1.1", "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
  s.response_headers = {{"Content-Type", "text/plain"}, {"Transfer-Encoding", "chunked"}, {"Trailer", "X-Trailer"}};
  Recording rec({s});
  const ReplayMatch m = rec.match(get("/chunked"));
  ASSERT_TRUE(m.found);
  ASSERT_EQ(m.response.body, std::string("hello world"));
  ASSERT_EQ(header(m.response, "Content-Length").value_or(""), std::string("11"));
  ASSERT_TRUE(!header(m.response, "Transfer-Encoding"));
  ASSERT_TRUE(!header(m.response, "Trailer"));
}

TEST(ReplayIndex, replay_hop_by_hop_headers_removed) {
  PairSpec s = at("GET /h HTTP/1.1", "abc");
  s.response_headers = {{"Connection", "keep-alive, X-Private"},
                        {"Keep-Alive", "timeout=5"},
                        {"X-Private", "p"},
                        {"Proxy-Connection", "keep-alive"},
                        {"Upgrade", "h2c"},
                        {"TE", "trailers"},
                        {"X-Kept", "yes"},
                        {"Content-Length", "99"},
                        {"content-length", "3"},
                        {"Content-Encoding", "identity"}};
  Recording rec({s});
  const ReplayMatch m = rec.match(get("/h"));
  ASSERT_TRUE(m.found);
  ASSERT_EQ(m.response.headers.size(), size_t{3});
  ASSERT_EQ(header(m.response, "X-Kept").value_or(""), std::string("yes"));
  ASSERT_EQ(header(m.response, "Content-Encoding").value_or(""), std::string("identity"));
  ASSERT_EQ(header(m.response, "Content-Length").value_or(""), std::string("3"));  // fixed, duplicates dropped
  ASSERT_EQ(count_headers(m.response, "Content-Length"), size_t{1});
  // A right Content-Length is kept as recorded; a missing one is added.
  PairSpec ok = at("GET /ok HTTP/1.1", "abcd");
  ok.response_headers = {{"Content-Length", "4"}};
  PairSpec missing = at("GET /close-delimited HTTP/1.1", std::string("bin\0ary", 7));
  missing.response_headers = {{"Content-Type", "application/octet-stream"}};
  Recording rec2({ok, missing});
  ASSERT_EQ(header(rec2.match(get("/ok")).response, "Content-Length").value_or(""), std::string("4"));
  const ReplayMatch added = rec2.match(get("/close-delimited"));
  ASSERT_EQ(header(added.response, "Content-Length").value_or(""), std::string("7"));
  ASSERT_EQ(added.response.body.size(), size_t{7});
}

TEST(ReplayIndex, replay_head_keeps_content_length_without_body) {
  PairSpec head = at("HEAD /big HTTP/1.1", "");
  head.response_headers = {{"Content-Type", "video/mp4"}, {"Content-Length", "1234"}};
  PairSpec not_modified = at("GET /cached HTTP/1.1", "stray");
  not_modified.status_line = "HTTP/1.1 304 Not Modified";
  not_modified.response_headers = {{"ETag", "\"1\""}};
  PairSpec no_content = at("GET /nothing HTTP/1.1", "");
  no_content.status_line = "HTTP/1.1 204 No Content";
  no_content.response_headers = {};
  Recording rec({head, not_modified, no_content});
  const ReplayMatch m = rec.match(get("/big", "example.com", false, "UA", "HEAD"));
  ASSERT_TRUE(m.found);
  ASSERT_TRUE(m.response.body.empty());
  ASSERT_EQ(header(m.response, "Content-Length").value_or(""), std::string("1234"));
  const ReplayMatch n = rec.match(get("/cached"));
  ASSERT_EQ(n.response.status, 304);
  ASSERT_EQ(n.response.reason, std::string("Not Modified"));
  ASSERT_TRUE(n.response.body.empty());
  ASSERT_TRUE(!header(n.response, "Content-Length"));
  const ReplayMatch o = rec.match(get("/nothing"));
  ASSERT_EQ(o.response.status, 204);
  ASSERT_TRUE(o.response.body.empty());
  ASSERT_TRUE(!header(o.response, "Content-Length"));
  // HEAD is a method of its own: a recorded GET does not answer it.
  ASSERT_TRUE(!rec.match(get("/cached", "example.com", false, "UA", "HEAD")).found);
}

TEST(ReplayIndex, replay_miss_explains_nearest_candidates) {
  PairSpec other_host = at("GET /b HTTP/1.1", "b", "other.com");
  other_host.https = true;
  other_host.port = 443;
  Recording rec({at("GET /a?x=1 HTTP/1.1", "a"), other_host, at("GET /zz HTTP/1.1", "zz")});
  const ReplayMatch scheme = rec.match(get("/a?x=1", "example.com", true));
  ASSERT_TRUE(!scheme.found);
  ASSERT_EQ(scheme.response.status, 404);
  ASSERT_EQ(scheme.response.reason, std::string("Not Found"));
  ASSERT_TRUE(contains(header(scheme.response, "Content-Type").value_or(""), "text/plain"));
  ASSERT_EQ(header(scheme.response, "Content-Length").value_or(""), std::to_string(scheme.response.body.size()));
  ASSERT_TRUE(contains(scheme.response.body, "GET https://example.com/a?x=1"));                      // what was asked
  ASSERT_TRUE(contains(scheme.response.body, "GET http://example.com/a?x=1 (differs in: scheme)"));  // nearest first
  ASSERT_TRUE(contains(scheme.log_line, "GET https://example.com/a?x=1"));
  ASSERT_TRUE(contains(scheme.log_line, "(differs in: scheme)"));
  ASSERT_TRUE(scheme.log_line.find('\n') == std::string::npos);

  const ReplayMatch host = rec.match(get("/b", "third.com", true));
  ASSERT_TRUE(!host.found);
  ASSERT_TRUE(contains(host.response.body, "https://other.com/b (differs in: host)"));

  const ReplayMatch nothing = rec.match(get("/c", "nowhere.org"));
  ASSERT_TRUE(!nothing.found);
  ASSERT_TRUE(contains(nothing.response.body, "Nothing was recorded for host nowhere.org or path /c"));
  ASSERT_TRUE(contains(nothing.log_line, "nothing recorded"));

  // At most three candidates, same host first.
  const ReplayMatch many = rec.match(get("/b", "example.com", false, "Other", "POST"));
  size_t lines = 0;
  for (size_t pos = 0; (pos = many.response.body.find("(differs in:", pos)) != std::string::npos; pos++) lines++;
  ASSERT_EQ(lines, size_t{3});
  ASSERT_TRUE(many.response.body.find("example.com/zz") < many.response.body.find("other.com/b"));
  ASSERT_TRUE(contains(many.response.body, "method, path, query, user-agent"));

  // A HEAD miss has the 404's length but no body.
  const ReplayMatch head = rec.match(get("/nope", "example.com", false, "UA", "HEAD"));
  ASSERT_TRUE(!head.found);
  ASSERT_TRUE(head.response.body.empty());
  ASSERT_TRUE(header(head.response, "Content-Length").value_or("0") != "0");
}

TEST(ReplayIndex, replay_load_warns_and_skips) {
  TempDir dir;
  write_pair(dir.path, "save.good", at("GET / HTTP/1.1", "ok"));
  write_file(dir.path / "save.corrupt", "this is not a protobuf \xff\xff\xff\xff");
  PairSpec no_host = at("GET / HTTP/1.1", "x");
  no_host.request_headers = {{"User-Agent", "UA"}};
  write_pair(dir.path, "save.nohost", no_host);
  PairSpec bad_ip = at("GET / HTTP/1.1", "x");
  bad_ip.ip = "not-an-ip";
  write_pair(dir.path, "save.badip", bad_ip);
  PairSpec bad_status = at("GET / HTTP/1.1", "x");
  bad_status.status_line = "garbage";
  write_pair(dir.path, "save.badstatus", bad_status);
  std::vector<std::string> warnings;
  ReplayIndex index = ReplayIndex::load(dir.path, &warnings);
  ASSERT_EQ(index.pairs(), size_t{1});
  ASSERT_EQ(warnings.size(), size_t{4});
  auto warned = [&](const std::string& a, const std::string& b) {
    for (const std::string& w : warnings) {
      if (contains(w, a) && contains(w, b)) return true;
    }
    return false;
  };
  ASSERT_TRUE(warned("save.corrupt", "skipped"));
  ASSERT_TRUE(warned((dir.path / "save.nohost").string() + ": the request has no Host header; skipped", ""));
  ASSERT_TRUE(warned("save.badip", "invalid server address"));
  ASSERT_TRUE(warned("save.badstatus", "status line"));
  ASSERT_TRUE(index.match(get("/"), {}).found);
  // warnings may be null
  ASSERT_EQ(ReplayIndex::load(dir.path, nullptr).pairs(), size_t{1});
}

TEST(ReplayIndex, replay_load_errors) {
  TempDir dir;
  write_file(dir.path / "save.corrupt", "garbage");
  PairSpec no_host = at("GET / HTTP/1.1", "x");
  no_host.request_headers = {};
  write_pair(dir.path, "save.nohost", no_host);
  std::vector<std::string> warnings;
  EXPECT_THROW_WITH(UserError, ReplayIndex::load(dir.path, &warnings), "holds no valid recorded pair");
  ASSERT_EQ(warnings.size(), size_t{2});
  TempDir empty;
  EXPECT_THROW_WITH(UserError, ReplayIndex::load(empty.path, nullptr),
                    "holds no valid recorded pair (the directory has no files)");
  EXPECT_THROW_WITH(UserError, ReplayIndex::load(dir.path / "missing", nullptr), "cannot read recording directory");
}

// Bodies live in an unlinked file in $TMPDIR, not in the index: each is served back byte for
// byte (whatever the order the index sorts its entries in), nothing is left in TMPDIR, and a
// TMPDIR where no file can be made is an error that says so.
TEST(ReplayIndex, replay_bodies_are_kept_in_an_unlinked_temporary_file) {
  TempDir tmp;
  const char* saved = std::getenv("TMPDIR");
  const std::string saved_value = saved ? saved : "";
  ::setenv("TMPDIR", tmp.path.c_str(), 1);
  std::vector<PairSpec> specs;
  for (int i = 0; i < 50; i++) {
    PairSpec s =
        at("GET /o" + std::to_string(i) + " HTTP/1.1", std::string(1000 * (i + 1), static_cast<char>('a' + i % 26)));
    s.start_us = 1'000'000 - static_cast<uint64_t>(i);  // recorded in the reverse order of their files
    specs.push_back(s);
  }
  {
    Recording rec(specs);
    ASSERT_EQ(rec.index->pairs(), size_t{50});
    for (int i = 0; i < 50; i++) {
      const ReplayMatch m = rec.match(get("/o" + std::to_string(i)));
      ASSERT_TRUE(m.found);
      ASSERT_EQ(m.response.body, std::string(1000 * (i + 1), static_cast<char>('a' + i % 26)));
    }
    ASSERT_TRUE(std::filesystem::is_empty(tmp.path));
  }
  ::setenv("TMPDIR", (tmp.path / "missing").c_str(), 1);
  TempDir dir;
  write_pair(dir.path, "save.one", at("GET / HTTP/1.1", "x"));
  EXPECT_THROW_WITH(UserError, ReplayIndex::load(dir.path, nullptr), "set TMPDIR to a writable directory");
  if (saved) {
    ::setenv("TMPDIR", saved_value.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
}

TEST(ReplayIndex, replay_origins_and_names) {
  PairSpec tls = at("GET / HTTP/1.1", "1", "a.com");
  tls.ip = "10.0.0.2";
  tls.port = 443;
  tls.https = true;
  tls.server_name = "A.com";
  tls.protocol = "h2";
  PairSpec sni_only = tls;
  sni_only.request_headers = {{"Host", "a.com"}};
  sni_only.server_name = "cdn.a.com.";
  PairSpec clear = at("GET / HTTP/1.1", "2", "A.com:80");
  clear.ip = "10.0.0.2";
  clear.port = 80;
  PairSpec alt = at("GET / HTTP/1.1", "3", "b.com:8080");
  alt.ip = "10.0.0.10";
  alt.port = 8080;
  PairSpec literal = at("GET / HTTP/1.1", "4", "10.0.0.3");
  literal.ip = "10.0.0.3";
  literal.port = 443;
  literal.https = true;
  PairSpec second_ip = at("GET /x HTTP/1.1", "5", "a.com");
  second_ip.ip = "10.0.0.9";
  PairSpec weird = at("GET / HTTP/1.1", "6", "bad name");
  weird.ip = "10.0.0.9";
  Recording rec({tls, sni_only, clear, alt, literal, second_ip, weird});
  const auto& origins = rec.index->origins();
  ASSERT_EQ(origins.size(), size_t{5});
  ASSERT_EQ(origins[0].ip + ":" + std::to_string(origins[0].port), std::string("10.0.0.2:80"));
  ASSERT_EQ(origins[1].ip + ":" + std::to_string(origins[1].port), std::string("10.0.0.2:443"));
  ASSERT_EQ(origins[2].ip, std::string("10.0.0.3"));
  ASSERT_EQ(origins[3].ip, std::string("10.0.0.9"));
  ASSERT_EQ(origins[4].ip + ":" + std::to_string(origins[4].port), std::string("10.0.0.10:8080"));
  ASSERT_TRUE(!origins[0].https && !origins[0].h2);
  ASSERT_TRUE(origins[1].https && origins[1].h2);
  ASSERT_TRUE(origins[2].https && origins[2].names.empty());
  ASSERT_EQ(join(origins[0].names), std::string("a.com"));
  ASSERT_EQ(join(origins[1].names), std::string("a.com,cdn.a.com"));
  ASSERT_EQ(join(origins[4].names), std::string("b.com"));
  const auto& names = rec.index->names();
  ASSERT_EQ(names.size(), size_t{3});
  ASSERT_EQ(join(names.at("a.com")), std::string("10.0.0.2,10.0.0.9"));
  ASSERT_EQ(join(names.at("b.com")), std::string("10.0.0.10"));
  ASSERT_EQ(join(names.at("cdn.a.com")), std::string("10.0.0.2"));
  ASSERT_TRUE(!names.count("10.0.0.3"));
  ASSERT_EQ(rec.warnings.size(), size_t{1});  // "bad name" is not resolvable
  ASSERT_TRUE(contains(rec.warnings[0], "not a valid host name"));
}

// What the supervisor accepts from the ferry for an isolated (replay) namespace.

// --timing=recorded's inputs: each response's think time (bounded), each origin's smallest RTT.
TEST(ReplayIndex, think_times_and_origin_round_trips_come_from_the_recording) {
  PairSpec slow = at("GET /slow HTTP/1.1", "s"), fast = at("GET /fast HTTP/1.1", "f"),
           huge = at("GET /huge HTTP/1.1", "h"), other = at("GET / HTTP/1.1", "o", "other.test");
  slow.think_us = 150'000, slow.rtt_us = 40'000;
  fast.think_us = 0, fast.rtt_us = 38'000;
  huge.think_us = 3'600'000'000ULL;  // an hour: the recording's word, bounded
  other.ip = "10.0.0.2";
  Recording rec({slow, fast, huge, other});
  EXPECT_EQ(rec.match(get("/slow")).response.think_us, 150'000u);
  EXPECT_EQ(rec.match(get("/fast")).response.think_us, 0u);
  EXPECT_EQ(rec.match(get("/huge")).response.think_us, kMaxThinkUs);
  EXPECT_EQ(rec.match(get("/", "other.test")).response.think_us, 0u);
  const auto& origins = rec.index->origins();
  ASSERT_EQ(origins.size(), 2u);
  EXPECT_EQ(origins[0].rtt_us, std::optional<uint64_t>(38'000));
  EXPECT_EQ(origins[1].rtt_us, std::nullopt);
  EXPECT_EQ(rec.index->think_time_summary(), "2 of 4 responses wait, median 150.0 ms, p90 30000.0 ms");
  Recording plain({at("GET / HTTP/1.1", "x")});
  EXPECT_TRUE(contains(plain.index->think_time_summary(), "none recorded"));
}

// The origins' certificates as recorded: per SNI name, the hosts of the origin its certificate
// covered (a wildcard covers one label); names with the same cover share one; a name recorded
// without one gets its own; none recorded, none (one certificate for all, as before).
TEST(ReplayIndex, certificates_follow_what_the_origins_presented) {
  auto tls = [](std::string line, std::string host, std::vector<std::string> san) {
    PairSpec s = at(std::move(line), "x", host);
    s.https = true;
    s.port = 443;
    s.server_name = host;
    s.certificate_names = std::move(san);
    return s;
  };
  Recording rec({tls("GET /1 HTTP/1.1", "b.test", {"b.test"}),
                 tls("GET /2 HTTP/1.1", "www.b.test", {"*.b.test", "b.test"}),
                 tls("GET /3 HTTP/1.1", "cdn.b.test", {"*.b.test", "b.test"}), tls("GET /4 HTTP/1.1", "x.b.test", {}),
                 tls("GET /5 HTTP/1.1", "old.test", {})});
  ASSERT_EQ(rec.index->origins().size(), 1u);
  const auto& certificates = rec.index->origins()[0].certificates;
  ASSERT_EQ(certificates.size(), 3u);
  EXPECT_EQ(certificates[0], (ReplayCertificate{{"b.test"}, {"b.test"}}));
  EXPECT_EQ(certificates[1],
            (ReplayCertificate{{"cdn.b.test", "www.b.test"}, {"b.test", "cdn.b.test", "www.b.test", "x.b.test"}}));
  EXPECT_EQ(certificates[2], (ReplayCertificate{{"old.test", "x.b.test"}, {"old.test", "x.b.test"}}));
  Recording plain({at("GET / HTTP/1.1", "x")});
  EXPECT_TRUE(plain.index->origins()[0].certificates.empty());
}

// An origin whose every recorded handshake chose TLS 1.2 is replayed with TLS 1.2 at most.
TEST(ReplayIndex, tls_version_as_recorded) {
  auto tls = [](std::string line, std::string ip, std::string version) {
    PairSpec s = at(std::move(line), "x");
    s.https = true;
    s.port = 443;
    s.ip = std::move(ip);
    s.tls_version = std::move(version);
    return s;
  };
  Recording rec({tls("GET /1 HTTP/1.1", "10.0.0.1", "TLSv1.2"), tls("GET /2 HTTP/1.1", "10.0.0.1", "TLSv1.2"),
                 tls("GET /3 HTTP/1.1", "10.0.0.2", "TLSv1.2"), tls("GET /4 HTTP/1.1", "10.0.0.2", "TLSv1.3"),
                 tls("GET /5 HTTP/1.1", "10.0.0.3", "")});
  ASSERT_EQ(rec.index->origins().size(), 3u);
  EXPECT_EQ(rec.index->origins()[0].tls_max, "TLSv1.2");
  EXPECT_EQ(rec.index->origins()[1].tls_max, "");
  EXPECT_EQ(rec.index->origins()[2].tls_max, "");
}

// --ignore-query-param: cache busters left out of the comparison, in either request.
TEST(ReplayIndex, ignored_query_parameters_do_not_count) {
  EXPECT_EQ(without_query_parameters("a=1&_=123&b=2", {"_"}), "a=1&b=2");
  EXPECT_EQ(without_query_parameters("_=123", {"_"}), "");
  EXPECT_EQ(without_query_parameters("t&x=1&t=5", {"t"}), "x=1");
  EXPECT_EQ(without_query_parameters("a=1&&b", {"x"}), "a=1&b");
  EXPECT_EQ(without_query_parameters("a=1", {}), "a=1");
  Recording rec({at("GET /api?id=7&_=1111111111 HTTP/1.1", "seven"), at("GET /api?id=8&_=1700000001 HTTP/1.1", "eight"),
                 at("GET /plain HTTP/1.1", "plain"), at("GET /again?cb=1 HTTP/1.1", "first"),
                 at("GET /again?cb=2 HTTP/1.1", "second")});
  ReplayOptions options;
  options.ignored_query_parameters = {"_", "cb"};
  // Without the option the closest query wins, which a cache buster can mislead: id=8's
  // buster shares more with this request than id=7's does.
  EXPECT_EQ(rec.match(get("/api?id=7&_=1700000001")).response.body, "eight");
  EXPECT_EQ(rec.match(get("/api?id=7&_=1700000001"), options).response.body, "seven");
  EXPECT_EQ(rec.match(get("/api?_=999&id=8"), options).response.body, "eight");
  EXPECT_EQ(rec.match(get("/plain?_=42"), options).response.body, "plain");
  // Requests that are the same without the busters are repeats: served in recorded order.
  EXPECT_EQ(rec.match(get("/again?cb=77"), options).response.body, "first");
  EXPECT_EQ(rec.match(get("/again?cb=78"), options).response.body, "second");
}

// A request with a body: among recorded ones that match otherwise, the one with the same body
// (de-chunked) wins; repeats are counted per body; no such body: the rules as before.
TEST(ReplayIndex, request_bodies_choose_among_identical_requests) {
  auto post = [](std::string body, std::string answer, bool chunked = false) {
    PairSpec s = at("POST /graphql HTTP/1.1", std::move(answer));
    s.request_headers.push_back(chunked ? HttpHeader{"Transfer-Encoding", "chunked"}
                                        : HttpHeader{"Content-Length", std::to_string(body.size())});
    char size[16];
    std::snprintf(size, sizeof size, "%zx", body.size());
    s.request_body = chunked ? size + ("\r\n" + body + "\r\n0\r\n\r\n") : body;
    return s;
  };
  Recording rec(
      {post("{\"q\":\"user\"}", "user"), post("{\"q\":\"feed\"}", "feed 1", true), post("{\"q\":\"feed\"}", "feed 2")});
  auto with_body = [](std::string body) {
    ReplayRequest r = get("/graphql", "example.com", false, std::string("UA"), "POST");
    r.body = std::move(body);
    return r;
  };
  EXPECT_EQ(rec.match(with_body("{\"q\":\"feed\"}")).response.body, "feed 1");
  EXPECT_EQ(rec.match(with_body("{\"q\":\"user\"}")).response.body, "user");
  EXPECT_EQ(rec.match(with_body("{\"q\":\"feed\"}")).response.body, "feed 2");
  EXPECT_EQ(rec.match(with_body("{\"q\":\"user\"}")).response.body, "user");  // the last again
  // A body nothing recorded: in recorded order, as without bodies.
  EXPECT_EQ(rec.match(with_body("{\"q\":\"other\"}")).response.body, "user");
  EXPECT_NE(request_body_hash("a"), request_body_hash("b"));
}

TEST(ReplayIndex, replay_unmatched_close_marks_misses_only) {
  Recording rec({at("GET /here HTTP/1.1", "here")});
  ReplayOptions close;
  close.close_unmatched = true;
  const ReplayMatch hit = rec.match(get("/here"), close);
  ASSERT_TRUE(hit.found);
  ASSERT_FALSE(hit.close);
  const ReplayMatch miss = rec.match(get("/gone"), close);
  ASSERT_FALSE(miss.found);
  ASSERT_TRUE(miss.close);
  ASSERT_TRUE(miss.log_line.ends_with(" [no response: --unmatched=close]"));
  const ReplayMatch plain = rec.match(get("/gone"));
  ASSERT_FALSE(plain.close);
  ASSERT_EQ(plain.response.status, 404);
}
