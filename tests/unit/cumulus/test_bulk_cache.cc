// SPDX-License-Identifier: GPL-3.0-or-later
// The Local Proxy's cache: exact matches only, GET and HEAD only, repeats in order, bounded.
#include <gtest/gtest.h>

#include "cumulus/bulk_cache.hh"

namespace {
RecordedPair pair(const std::string& request_line, const std::string& host, const std::string& status_line,
                  std::vector<HttpHeader> response_headers, const std::string& body, bool https = false) {
  RecordedPair p;
  p.ip = "10.0.0.1";
  p.port = https ? 443 : 80;
  p.https = https;
  p.request.first_line = request_line;
  p.request.headers = {{"Host", host}};
  p.response.first_line = status_line;
  p.response.headers = std::move(response_headers);
  p.response.body = body;
  return p;
}
RecordedPair get(const std::string& target, const std::string& body, const std::string& host = "a.test",
                 bool https = false) {
  return pair("GET " + target + " HTTP/1.1", host, "HTTP/1.1 200 OK", {{"Content-Length", std::to_string(body.size())}},
              body, https);
}
}  // namespace

TEST(BulkCache, answers_the_same_request_with_the_response_as_sent) {
  BulkCache cache(1 << 20);
  ASSERT_TRUE(cache.add(get("/a.js?v=1", "js", "A.Test", true)));
  const auto hit = cache.take(true, "a.test:443", "GET", "/a.js?v=1");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->bytes, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\njs");
  EXPECT_FALSE(hit->close_after);
  EXPECT_EQ(cache.entries(), 1u);
}

TEST(BulkCache, anything_else_is_a_miss) {
  BulkCache cache(1 << 20);
  cache.add(get("/a.js?v=1", "js", "a.test", true));
  EXPECT_FALSE(cache.take(false, "a.test", "GET", "/a.js?v=1"));      // another scheme
  EXPECT_FALSE(cache.take(true, "b.test", "GET", "/a.js?v=1"));       // another host
  EXPECT_FALSE(cache.take(true, "a.test:8443", "GET", "/a.js?v=1"));  // another port
  EXPECT_FALSE(cache.take(true, "a.test", "GET", "/a.js?v=2"));       // another query: not guessed
  EXPECT_FALSE(cache.take(true, "a.test", "HEAD", "/a.js?v=1"));      // another method
  EXPECT_FALSE(cache.take(true, "a.test", "POST", "/a.js?v=1"));
}

TEST(BulkCache, keeps_only_get_and_head_with_a_host) {
  BulkCache cache(1 << 20);
  EXPECT_FALSE(cache.add(pair("POST /api HTTP/1.1", "a.test", "HTTP/1.1 200 OK", {{"Content-Length", "0"}}, "")));
  RecordedPair no_host = get("/", "x");
  no_host.request.headers.clear();
  EXPECT_FALSE(cache.add(std::move(no_host)));
  EXPECT_TRUE(cache.add(pair("HEAD /h HTTP/1.1", "a.test", "HTTP/1.1 200 OK", {{"Content-Length", "99"}}, "")));
  EXPECT_EQ(cache.entries(), 1u);
  const auto head = cache.take(false, "a.test", "HEAD", "/h");
  ASSERT_TRUE(head);
  EXPECT_FALSE(head->close_after);
}

TEST(BulkCache, repeats_get_the_responses_in_order_then_the_last_again) {
  BulkCache cache(1 << 20);
  cache.add(get("/poll", "1"));
  cache.add(get("/poll", "2"));
  EXPECT_TRUE(cache.take(false, "a.test", "GET", "/poll")->bytes.ends_with("1"));
  EXPECT_TRUE(cache.take(false, "a.test", "GET", "/poll")->bytes.ends_with("2"));
  EXPECT_TRUE(cache.take(false, "a.test", "GET", "/poll")->bytes.ends_with("2"));
}

TEST(BulkCache, bound_refuses_and_counts_what_does_not_fit_and_clear_empties) {
  BulkCache cache(100);
  EXPECT_TRUE(cache.add(get("/small", "x")));
  EXPECT_FALSE(cache.add(get("/big", std::string(200, 'b'))));
  EXPECT_GT(cache.refused_bytes(), 200u);
  EXPECT_FALSE(cache.take(false, "a.test", "GET", "/big"));
  cache.clear();
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_FALSE(cache.take(false, "a.test", "GET", "/small"));
}

TEST(BulkCache, responses_that_end_with_their_connection_close_it) {
  HttpMessage response;
  response.first_line = "HTTP/1.0 200 OK";
  EXPECT_TRUE(response_closes_connection(response, "GET"));  // no length: the close ends it
  EXPECT_FALSE(response_closes_connection(response, "HEAD"));
  response.headers = {{"Content-Length", "3"}};
  EXPECT_FALSE(response_closes_connection(response, "GET"));
  response.headers.push_back({"Connection", "Close"});
  EXPECT_TRUE(response_closes_connection(response, "GET"));
  response.headers = {{"Transfer-Encoding", "chunked"}};
  EXPECT_FALSE(response_closes_connection(response, "GET"));
  response.first_line = "HTTP/1.1 304 Not Modified";
  response.headers.clear();
  EXPECT_FALSE(response_closes_connection(response, "GET"));
}

TEST(BulkCache, redirect_targets_resolve_like_a_browser) {
  const auto to = [](std::string_view location, bool https = false) {
    const auto t = redirect_target(location, https, "a.test", "/dir/page?x=1");
    return t ? std::string(t->https ? "https://" : "http://") + t->host + t->target : std::string("-");
  };
  EXPECT_EQ(to("https://www.a.test/"), "https://www.a.test/");
  EXPECT_EQ(to("HTTPS://www.a.test"), "https://www.a.test/");
  EXPECT_EQ(to("http://b.test?q#frag"), "http://b.test/?q");
  EXPECT_EQ(to("//cdn.test/x", true), "https://cdn.test/x");
  EXPECT_EQ(to("/login#top"), "http://a.test/login");
  EXPECT_EQ(to("next?y=2"), "http://a.test/dir/next?y=2");
  EXPECT_EQ(to("ftp://x.test/"), "-");  // another scheme
  EXPECT_EQ(to("javascript:alert(1)"), "-");
  EXPECT_EQ(to("a/b:c"), "http://a.test/dir/a/b:c");  // a colon after a slash: a relative path
  EXPECT_EQ(to("https://user@evil.test/"), "-");
  EXPECT_EQ(to(""), "-");
}

TEST(BulkCache, remembers_where_the_pages_redirects_lead) {
  BulkCache cache(1 << 20);
  cache.add(pair("GET / HTTP/1.1", "shop.test", "HTTP/1.1 301 Moved Permanently",
                 {{"Location", "https://www.shop.test/"}, {"Content-Length", "0"}}, ""));
  EXPECT_TRUE(cache.redirects_to(true, "WWW.shop.test:443", "/"));
  EXPECT_FALSE(cache.redirects_to(false, "www.shop.test", "/"));
  EXPECT_FALSE(cache.redirects_to(true, "www.shop.test", "/other"));
  cache.clear();
  EXPECT_FALSE(cache.redirects_to(true, "www.shop.test", "/"));
}
