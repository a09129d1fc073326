// SPDX-License-Identifier: GPL-3.0-or-later
// Range requests in replay: Range, Content-Range and If-Range parsing, and what the matcher
// answers a GET with a Range from a recorded full 200 (206, 416, the whole 200) and from recorded
// 206 responses (the recorded slice, a part of it, or a miss naming the recorded ranges).
#include <string>
#include <vector>

#include "expect.hh"
#include "replay/replay_range.hh"
#include "replay_fixture.hh"

using namespace replay_test;

namespace {
ReplayRequest ranged(std::string range, std::optional<std::string> if_range = std::nullopt,
                     std::string method = "GET") {
  ReplayRequest r = get("/video", "example.com", false, std::string("UA"), std::move(method));
  r.range = std::move(range);
  r.if_range = std::move(if_range);
  return r;
}

PairSpec full_video(std::string body = "0123456789") {
  PairSpec s = at("GET /video HTTP/1.1", std::move(body));
  s.response_headers = {{"Content-Type", "video/mp4"},
                        {"ETag", "\"v1\""},
                        {"Last-Modified", "Tue, 01 Jan 2019 00:00:00 GMT"},
                        {"Content-Length", "10"}};
  return s;
}

// A recorded 206: the request asked for `range`, the server answered `content_range` with `body`.
PairSpec recorded_slice(std::string range, std::string content_range, std::string body, uint64_t start_us) {
  PairSpec s = at("GET /video HTTP/1.1", std::move(body));
  s.request_headers.push_back({"Range", std::move(range)});
  s.status_line = "HTTP/1.1 206 Partial Content";
  s.response_headers = {{"Content-Type", "video/mp4"}, {"Content-Range", std::move(content_range)}};
  s.start_us = start_us;
  return s;
}
}  // namespace

TEST(ReplayRange, parses_range_sets) {
  auto specs = parse_range_header("bytes=0-99, 200-,-50");
  ASSERT_TRUE(specs);
  ASSERT_EQ(specs->size(), size_t{3});
  EXPECT_EQ(*(*specs)[0].first, 0u);
  EXPECT_EQ(*(*specs)[0].last, 99u);
  EXPECT_EQ(*(*specs)[1].first, 200u);
  EXPECT_FALSE((*specs)[1].last);
  EXPECT_FALSE((*specs)[2].first);
  EXPECT_EQ(*(*specs)[2].last, 50u);
  EXPECT_TRUE(parse_range_header("Bytes = 5-5,,"));  // unit case-insensitive, empty list elements
  for (const char* invalid : {"bytes=", "bytes=a-b", "bytes=5-4", "items=0-1", "bytes 0-1", "0-1", "bytes=-",
                              "bytes=1-2-3", "bytes=99999999999999999999-"}) {
    EXPECT_FALSE(parse_range_header(invalid)) << invalid;
  }
  std::string many = "bytes=0-0";
  for (int i = 0; i < 100; i++) many += ",0-0";
  EXPECT_FALSE(parse_range_header(many));
}

TEST(ReplayRange, satisfiable_ranges_clip_and_drop) {
  const auto specs = *parse_range_header("bytes=2-4,8-,-3,20-30,-0,5-100");
  const std::vector<ByteRange> expected = {{2, 4}, {8, 9}, {7, 9}, {5, 9}};
  EXPECT_EQ(satisfiable_ranges(specs, 10), expected);
  EXPECT_TRUE(satisfiable_ranges(*parse_range_header("bytes=0-"), 0).empty());
  EXPECT_EQ(satisfiable_ranges(*parse_range_header("bytes=-50"), 10), (std::vector<ByteRange>{{0, 9}}));
  EXPECT_EQ(merge_ranges({{8, 9}, {0, 2}, {3, 4}, {7, 8}}), (std::vector<ByteRange>{{0, 4}, {7, 9}}));
}

TEST(ReplayRange, parses_content_range) {
  const auto known = parse_content_range("bytes 10-19/100");
  ASSERT_TRUE(known);
  EXPECT_EQ(known->range, (ByteRange{10, 19}));
  EXPECT_EQ(*known->complete_length, 100u);
  const auto unknown = parse_content_range("bytes 0-0/*");
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(unknown->complete_length);
  for (const char* invalid : {"bytes */100", "bytes 5-4/10", "bytes 0-10/10", "items 0-1/2", "bytes 0-1"}) {
    EXPECT_FALSE(parse_content_range(invalid)) << invalid;
  }
}

TEST(ReplayRange, if_range_strong_etag_or_same_date) {
  const std::vector<HttpHeader> headers = {{"ETag", "\"v1\""}, {"Last-Modified", "Tue, 01 Jan 2019 00:00:00 GMT"}};
  EXPECT_TRUE(if_range_matches("\"v1\"", headers));
  EXPECT_FALSE(if_range_matches("\"v2\"", headers));
  EXPECT_FALSE(if_range_matches("W/\"v1\"", headers));
  EXPECT_FALSE(if_range_matches("\"v1\"", {{"ETag", "W/\"v1\""}}));
  EXPECT_TRUE(if_range_matches(" Tue, 01 Jan 2019 00:00:00 GMT", headers));
  EXPECT_FALSE(if_range_matches("Wed, 02 Jan 2019 00:00:00 GMT", headers));
  EXPECT_FALSE(if_range_matches("\"v1\"", {}));
}

TEST(ReplayRange, full_200_gives_206_with_the_slice) {
  Recording rec({full_video()});
  for (auto [range, content_range, body] :
       {std::tuple{"bytes=2-4", "bytes 2-4/10", "234"}, std::tuple{"bytes=7-", "bytes 7-9/10", "789"},
        std::tuple{"bytes=-2", "bytes 8-9/10", "89"}, std::tuple{"bytes=5-100", "bytes 5-9/10", "56789"},
        std::tuple{"bytes=0-1,2-3", "bytes 0-3/10", "0123"}}) {
    const ReplayMatch m = rec.match(ranged(range));
    ASSERT_TRUE(m.found) << range;
    EXPECT_EQ(m.response.status, 206) << range;
    EXPECT_EQ(m.response.reason, "Partial Content");
    EXPECT_EQ(header(m.response, "Content-Range"), std::string(content_range)) << range;
    EXPECT_EQ(header(m.response, "Content-Length"), std::to_string(std::string(body).size())) << range;
    EXPECT_EQ(count_headers(m.response, "Content-Length"), size_t{1});
    EXPECT_EQ(header(m.response, "ETag"), std::string("\"v1\""));
    EXPECT_EQ(m.response.body, body) << range;
  }
}

TEST(ReplayRange, unsatisfiable_gives_416_with_the_length) {
  Recording rec({full_video()});
  for (const char* range : {"bytes=10-", "bytes=50-60", "bytes=-0"}) {
    const ReplayMatch m = rec.match(ranged(range));
    EXPECT_EQ(m.response.status, 416) << range;
    EXPECT_EQ(header(m.response, "Content-Range"), std::string("bytes */10")) << range;
    EXPECT_TRUE(contains(m.response.body, "10 bytes")) << m.response.body;
  }
}

TEST(ReplayRange, whole_200_for_disjoint_ranges_invalid_range_other_methods_and_failed_if_range) {
  PairSpec head = full_video("");
  head.request_line = "HEAD /video HTTP/1.1";
  Recording rec({full_video(), head});
  auto whole = [&](const ReplayRequest& r) {
    const ReplayMatch m = rec.match(r);
    EXPECT_TRUE(m.found);
    EXPECT_EQ(m.response.status, 200) << (r.range ? *r.range : "");
    EXPECT_FALSE(header(m.response, "Content-Range"));
    if (r.method == "GET") {
      EXPECT_EQ(m.response.body, "0123456789");
    }
  };
  whole(ranged("bytes=0-1,5-6"));
  whole(ranged("bytes=4-2"));
  whole(ranged("lines=1-2"));
  whole(ranged("bytes=0-1", "\"v0\""));
  whole(ranged("bytes=0-1", "W/\"v1\""));
  whole(ranged("bytes=0-1", "Mon, 01 Jan 2018 00:00:00 GMT"));
  whole(ranged("bytes=0-1", std::nullopt, "HEAD"));
  EXPECT_EQ(rec.match(ranged("bytes=0-1", "\"v1\"")).response.status, 206);
  EXPECT_EQ(rec.match(ranged("bytes=0-1", "Tue, 01 Jan 2019 00:00:00 GMT")).response.status, 206);
}

TEST(ReplayRange, ranges_of_a_compressed_body_count_encoded_bytes) {
  PairSpec s = at("GET /video HTTP/1.1", std::string("\x1f\x8b\x08\x00gzipped", 11));
  s.response_headers = {{"Content-Encoding", "gzip"}, {"Content-Type", "text/plain"}};
  Recording rec({s});
  const ReplayMatch m = rec.match(ranged("bytes=0-2"));
  EXPECT_EQ(m.response.status, 206);
  EXPECT_EQ(m.response.body, std::string("\x1f\x8b\x08", 3));
  EXPECT_EQ(header(m.response, "Content-Encoding"), std::string("gzip"));
  EXPECT_EQ(header(m.response, "Content-Range"), std::string("bytes 0-2/11"));
}

TEST(ReplayRange, recorded_206_served_by_matching_range) {
  Recording rec({recorded_slice("bytes=0-", "bytes 0-3/10", "0123", 1),
                 recorded_slice("bytes=4-7", "bytes 4-7/10", "4567", 2),
                 recorded_slice("bytes=8-9", "bytes 8-9/10", "89", 3)});
  // The same Range as recorded: the recorded response as it is, whichever was asked last.
  for (int round = 0; round < 2; round++) {
    for (auto [range, body] :
         {std::pair{"bytes=8-9", "89"}, std::pair{"bytes=0-", "0123"}, std::pair{"bytes=4-7", "4567"}}) {
      const ReplayMatch m = rec.match(ranged(range));
      ASSERT_TRUE(m.found) << range;
      EXPECT_EQ(m.response.status, 206);
      EXPECT_EQ(m.response.body, body) << range;
    }
  }
  // Another spelling of a recorded range, and a part of one: cut from it.
  ReplayMatch m = rec.match(ranged("bytes=-2"));
  EXPECT_EQ(m.response.body, "89");
  EXPECT_EQ(header(m.response, "Content-Range"), std::string("bytes 8-9/10"));
  m = rec.match(ranged("bytes=5-6"));
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.response.status, 206);
  EXPECT_EQ(m.response.body, "56");
  EXPECT_EQ(header(m.response, "Content-Range"), std::string("bytes 5-6/10"));
  EXPECT_EQ(header(m.response, "Content-Length"), std::string("2"));
  // Across two recorded slices: not recorded as one; the miss names what was.
  m = rec.match(ranged("bytes=2-5"));
  EXPECT_FALSE(m.found);
  EXPECT_EQ(m.response.status, 404);
  EXPECT_TRUE(contains(m.response.body, "bytes 0-3/10, bytes 4-7/10, bytes 8-9/10")) << m.response.body;
  EXPECT_TRUE(contains(m.log_line, "bytes=2-5")) << m.log_line;
  // Beyond the recorded complete length: 416.
  m = rec.match(ranged("bytes=10-"));
  EXPECT_EQ(m.response.status, 416);
  EXPECT_EQ(header(m.response, "Content-Range"), std::string("bytes */10"));
}

TEST(ReplayRange, recorded_206_and_full_200_together) {
  Recording rec({recorded_slice("bytes=0-1", "bytes 0-1/10", "01", 1), full_video()});
  ReplayMatch m = rec.match(ranged("bytes=2-5"));
  EXPECT_EQ(m.response.status, 206);
  EXPECT_EQ(m.response.body, "2345");
  m = rec.match(ranged("bytes=0-1"));
  EXPECT_EQ(m.response.body, "01");
  // Without a Range: the response recorded without one, however often ranges were asked for.
  for (int i = 0; i < 2; i++) {
    m = rec.match(get("/video"));
    EXPECT_EQ(m.response.status, 200);
    EXPECT_EQ(m.response.body, "0123456789");
  }
}

TEST(ReplayRange, other_statuses_ignore_the_range) {
  PairSpec moved = at("GET /video HTTP/1.1", "");
  moved.status_line = "HTTP/1.1 302 Found";
  moved.response_headers = {{"Location", "/elsewhere"}};
  Recording rec({moved});
  const ReplayMatch m = rec.match(ranged("bytes=0-1"));
  EXPECT_TRUE(m.found);
  EXPECT_EQ(m.response.status, 302);
}

// A request without a Range never gets a 206: recorded slices that together cover the whole body
// are assembled into a 200 (Content-Length of the whole, no Content-Range).
TEST(ReplayRange, no_range_gets_the_whole_body_assembled_from_covering_slices) {
  Recording rec({recorded_slice("bytes=4-9", "bytes 4-9/10", "456789", 1),
                 recorded_slice("bytes=0-5", "bytes 0-5/10", "012345", 2)});
  for (int round = 0; round < 2; round++) {
    const ReplayMatch m = rec.match(get("/video"));
    ASSERT_TRUE(m.found);
    EXPECT_EQ(m.response.status, 200);
    EXPECT_EQ(m.response.reason, "OK");
    EXPECT_EQ(m.response.body, "0123456789");
    EXPECT_EQ(header(m.response, "Content-Length"), std::string("10"));
    EXPECT_EQ(count_headers(m.response, "Content-Length"), size_t{1});
    EXPECT_FALSE(header(m.response, "Content-Range"));
    EXPECT_EQ(header(m.response, "Content-Type"), std::string("video/mp4"));
  }
  // A Range is still answered from the slices.
  EXPECT_EQ(rec.match(ranged("bytes=0-5")).response.status, 206);
}

// Slices that leave a gap, or that do not say the complete length: a miss that says so and
// names what was recorded.
TEST(ReplayRange, no_range_and_slices_with_a_gap_is_a_miss_naming_the_ranges) {
  Recording rec(
      {recorded_slice("bytes=0-3", "bytes 0-3/10", "0123", 1), recorded_slice("bytes=8-", "bytes 8-9/10", "89", 2)});
  ReplayMatch m = rec.match(get("/video"));
  EXPECT_FALSE(m.found);
  EXPECT_EQ(m.response.status, 404);
  EXPECT_FALSE(header(m.response, "Content-Range"));
  EXPECT_TRUE(contains(m.response.body, "only as byte ranges")) << m.response.body;
  EXPECT_TRUE(contains(m.response.body, "do not cover the whole body")) << m.response.body;
  EXPECT_TRUE(contains(m.response.body, "bytes 0-3, 8-9 of 10")) << m.response.body;
  EXPECT_EQ(header(m.response, "Content-Length"), std::to_string(m.response.body.size()));
  EXPECT_TRUE(contains(m.log_line, "no recorded response for GET http://example.com/video")) << m.log_line;
  EXPECT_TRUE(contains(m.log_line, "bytes 0-3, 8-9 of 10")) << m.log_line;

  Recording unknown({recorded_slice("bytes=0-", "bytes 0-9/*", "0123456789", 1)});
  m = unknown.match(get("/video"));
  EXPECT_FALSE(m.found);
  EXPECT_EQ(m.response.status, 404);
  EXPECT_TRUE(contains(m.response.body, "bytes 0-9 of an unknown length")) << m.response.body;
}

// A full 200 recorded for the URL is what a request without a Range gets, even if it was recorded
// with a Range (a server that ignored it) and after the slices.
TEST(ReplayRange, no_range_prefers_a_recorded_200) {
  PairSpec ignored = full_video();
  ignored.request_headers.push_back({"Range", "bytes=0-"});
  ignored.start_us = 3;
  Recording rec({recorded_slice("bytes=0-3", "bytes 0-3/10", "0123", 1),
                 recorded_slice("bytes=4-", "bytes 4-9/10", "456789", 2), ignored});
  for (int round = 0; round < 3; round++) {
    const ReplayMatch m = rec.match(get("/video"));
    ASSERT_TRUE(m.found);
    EXPECT_EQ(m.response.status, 200);
    EXPECT_EQ(m.response.body, "0123456789");
    EXPECT_EQ(header(m.response, "ETag"), std::string("\"v1\""));  // the recorded 200's own headers
  }
  // Slices of another query are no answer to a request without a Range either.
  Recording other({recorded_slice("bytes=0-3", "bytes 0-3/10", "0123", 1)});
  const ReplayMatch m = other.match(get("/video?t=5"));
  EXPECT_FALSE(m.found);
  EXPECT_EQ(m.response.status, 404);
}
