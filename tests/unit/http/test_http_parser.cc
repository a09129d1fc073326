// SPDX-License-Identifier: GPL-3.0-or-later
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "expect.hh"
#include "http/http_parser.hh"

using namespace std::string_literals;

namespace {
using Direction = HttpParser::Direction;
using State = HttpParser::State;

// Everything observable about parsing one stream.
struct Outcome {
  std::vector<HttpParser::Completed> messages;
  State state = State::Http;
  std::string error;
  size_t consumed = 0;
  bool finished_cleanly = false;
};

// Feeds `input` in pieces of `piece` bytes (stopping once the parser leaves Http), then finish().
Outcome run(Direction direction, const std::vector<std::string>& methods, std::string_view input,
            size_t piece = SIZE_MAX, bool call_finish = true) {
  HttpParser parser(direction);
  for (const std::string& method : methods) parser.expect_response_to(method);
  Outcome outcome;
  for (size_t pos = 0; pos < input.size() && parser.state() == State::Http; pos += piece) {
    const std::string_view chunk = input.substr(pos, piece);
    const size_t used = parser.feed(chunk);
    EXPECT_TRUE(used <= chunk.size());
    if (parser.state() == State::Http) {
      EXPECT_EQ(used, chunk.size());
    }
    outcome.consumed += used;
  }
  if (call_finish) outcome.finished_cleanly = parser.finish();
  while (parser.has_completed()) outcome.messages.push_back(parser.pop_completed());
  outcome.state = parser.state();
  outcome.error = parser.error();
  return outcome;
}

Outcome run_request(std::string_view input, size_t piece = SIZE_MAX) {
  return run(Direction::Request, {}, input, piece);
}

void check_same(const Outcome& a, const Outcome& b) {
  ASSERT_TRUE(a.state == b.state);
  ASSERT_EQ(a.error, b.error);
  ASSERT_EQ(a.finished_cleanly, b.finished_cleanly);
  // On Error, feed() does not count the unparsable message, which may have begun in an earlier call.
  if (a.state != State::Error) {
    ASSERT_EQ(a.consumed, b.consumed);
  }
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (size_t i = 0; i < a.messages.size(); i++) {
    const HttpMessage& x = a.messages[i].message;
    const HttpMessage& y = b.messages[i].message;
    ASSERT_EQ(a.messages[i].interim, b.messages[i].interim);
    ASSERT_EQ(x.first_line, y.first_line);
    ASSERT_EQ(x.body, y.body);
    ASSERT_EQ(x.headers.size(), y.headers.size());
    for (size_t h = 0; h < x.headers.size(); h++) {
      ASSERT_EQ(x.headers[h].key, y.headers[h].key);
      ASSERT_EQ(x.headers[h].value, y.headers[h].value);
    }
  }
}

std::string concatenated_serializations(const Outcome& outcome) {
  std::string out;
  for (const auto& completed : outcome.messages) out += completed.message.serialize();
  return out;
}

const std::string kChunkedBody =
    "4;name=value\r\nWiki\r\n"
    "A ; ext=\"quoted\"\r\n0123456789\r\n"
    "0\r\n"
    "Expires: Wed, 21 Oct 2015 07:28:00 GMT\r\n"
    "X-Checksum: abc\r\n"
    "\r\n";

struct Stream {
  Direction direction;
  std::vector<std::string> methods;
  std::string bytes;
};

// Streams covering every framing rule (and some errors), for the split-invariance tests.
std::vector<Stream> corpus() {
  return {
      {Direction::Request, {}, "GET /index.html HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"},
      {Direction::Request, {}, "HEAD / HTTP/1.0\r\n\r\nOPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"},
      {Direction::Request,
       {},
       "POST /form HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello=worldDELETE /x HTTP/1.1\r\n\r\n"},
      {Direction::Request,
       {},
       "PUT /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nPATCH /p HTTP/1.1\r\n"
       "content-length: 2\r\n\r\n{}"},
      {Direction::Request, {}, "\r\n\nGET / HTTP/1.1\nHost: bare-lf\n\nPROPFIND /dav HTTP/1.1\r\nDepth: 1\r\n\r\n"},
      {Direction::Request, {}, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"},
      {Direction::Request, {}, "GET / HTTP/1.1\r\n\r\n\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s},
      {Direction::Request, {}, "GET / HTTP/1.1\r\nHost example.com\r\n\r\n"},
      {Direction::Request, {}, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"},
      {Direction::Response, {"GET"}, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + kChunkedBody},
      {Direction::Response,
       {"GET", "HEAD", "GET", "GET"},
       "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
       "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
       "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"
       "HTTP/1.1 204 No Content\r\n\r\n"},
      {Direction::Response, {"GET"}, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the connection closes"},
      {Direction::Response,
       {"POST", "GET"},
       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
       "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
      {Direction::Response,
       {"GET"},
       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello"},
      {Direction::Response, {"CONNECT"}, "HTTP/1.1 200 Connection Established\r\n\r\n\x16\x03\x03\x00\x10"s},
      {Direction::Response, {"GET"}, "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nok\n0\n\n"},
      {Direction::Response, {"GET"}, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"},
      {Direction::Response, {"GET"}, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"},
  };
}
}  // namespace

TEST(HttpParser, http_parser_request_methods) {
  for (std::string method :
       {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "PROPFIND", "CONNECT", "VERSION-CONTROL"}) {
    const std::string target = method == "CONNECT" ? "example.com:443" : "/a/b?c=d";
    const std::string input = method + " " + target + " HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test\r\n\r\n";
    HttpParser parser(Direction::Request);
    ASSERT_EQ(parser.feed(input), input.size());
    ASSERT_TRUE(parser.state() == State::Http);
    ASSERT_TRUE(!parser.in_message());
    ASSERT_TRUE(parser.has_completed());
    const auto completed = parser.pop_completed();
    ASSERT_TRUE(!completed.interim);
    ASSERT_EQ(completed.message.first_line, method + " " + target + " HTTP/1.1");
    ASSERT_EQ(completed.message.headers.size(), size_t{2});
    ASSERT_EQ(completed.message.headers[0].key, std::string("Host"));
    ASSERT_EQ(completed.message.headers[0].value, std::string("example.com"));
    ASSERT_EQ(completed.message.headers[1].value, std::string("test"));
    ASSERT_TRUE(completed.message.body.empty());
    ASSERT_TRUE(!parser.has_completed());
    ASSERT_TRUE(parser.finish());
  }
}

TEST(HttpParser, http_parser_request_content_length_body) {
  const Outcome out = run_request(
      "POST /form HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\n"
      "hello=world"
      "PATCH /p HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
      "PUT /f HTTP/1.1\r\nContent-Length: 3, 3\r\ncontent-length: 3\r\n\r\nabc");
  ASSERT_TRUE(out.state == State::Http);
  ASSERT_TRUE(out.finished_cleanly);
  ASSERT_EQ(out.messages.size(), size_t{3});
  ASSERT_EQ(out.messages[0].message.body, std::string("hello=world"));
  ASSERT_EQ(*out.messages[0].message.header("content-length"), std::string_view("11"));
  ASSERT_EQ(out.messages[1].message.first_line, std::string("PATCH /p HTTP/1.1"));
  ASSERT_TRUE(out.messages[1].message.body.empty());
  ASSERT_EQ(out.messages[2].message.body, std::string("abc"));
}

TEST(HttpParser, http_parser_request_bad_content_length_is_error) {
  for (const std::string value : {"5, 6", "abc", "-1", "+5", "", "5 5", "99999999999999999999999"}) {
    const Outcome out = run_request("POST / HTTP/1.1\r\nContent-Length: " + value + "\r\n\r\nhello");
    ASSERT_TRUE(out.state == State::Error);
    ASSERT_EQ(out.error, std::string("invalid Content-Length"));
    ASSERT_TRUE(out.messages.empty());
    ASSERT_TRUE(!out.finished_cleanly);
  }
  const Outcome two_fields = run_request("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 4\r\n\r\nhello");
  ASSERT_TRUE(two_fields.state == State::Error);
}

TEST(HttpParser, http_parser_request_chunked_body) {
  const std::string body = "5\r\nhello\r\n6;ext\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n";
  const Outcome out = run_request(
      "PUT /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body +
      "POST /both HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 100\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  ASSERT_TRUE(out.state == State::Http);
  ASSERT_EQ(out.messages.size(), size_t{2});
  ASSERT_EQ(out.messages[0].message.body, body);
  // Transfer-Encoding overrides Content-Length.
  ASSERT_EQ(out.messages[1].message.body, std::string("3\r\nabc\r\n0\r\n\r\n"));
}

TEST(HttpParser, http_parser_request_transfer_encoding_not_chunked_is_error) {
  for (const std::string coding : {"gzip", "chunked, gzip", "identity"}) {
    const Outcome out = run_request("POST / HTTP/1.1\r\nTransfer-Encoding: " + coding + "\r\n\r\nhello");
    ASSERT_TRUE(out.state == State::Error);
    ASSERT_EQ(out.error, std::string("transfer-encoding does not end in chunked"));
  }
  // The final coding may come from a later field; names are case-insensitive.
  const Outcome split = run_request(
      "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTRANSFER-ENCODING: Chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
  ASSERT_TRUE(split.state == State::Http);
  ASSERT_EQ(split.messages.size(), size_t{1});
}

TEST(HttpParser, http_parser_response_chunked_with_extensions_and_trailers_stored_raw) {
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Expires\r\n\r\n";
  const std::string next = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext";
  const Outcome out = run(Direction::Response, {"GET", "GET"}, head + kChunkedBody + next);
  ASSERT_TRUE(out.state == State::Http);
  ASSERT_TRUE(out.finished_cleanly);
  ASSERT_EQ(out.messages.size(), size_t{2});
  ASSERT_EQ(out.messages[0].message.body, kChunkedBody);
  ASSERT_EQ(out.messages[0].message.headers.size(), size_t{2});  // trailers are in the body, not the headers
  ASSERT_EQ(out.messages[1].message.body, std::string("next"));
}

TEST(HttpParser, http_parser_response_close_delimited_completed_by_finish) {
  HttpParser parser(Direction::Response);
  parser.expect_response_to("GET");
  const std::string head = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n";
  ASSERT_EQ(parser.feed(head + "first part, "), head.size() + 12);
  ASSERT_EQ(parser.feed("second part"), size_t{11});
  ASSERT_TRUE(!parser.has_completed());
  ASSERT_TRUE(parser.in_message());
  ASSERT_TRUE(parser.finish());
  ASSERT_TRUE(parser.has_completed());
  const auto completed = parser.pop_completed();
  ASSERT_EQ(completed.message.body, std::string("first part, second part"));
  ASSERT_TRUE(!parser.in_message());

  // A transfer coding other than chunked on a response also means "until close".
  const Outcome gzip =
      run(Direction::Response, {"GET"}, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b\x08");
  ASSERT_TRUE(gzip.finished_cleanly);
  ASSERT_EQ(gzip.messages.size(), size_t{1});
  ASSERT_EQ(gzip.messages[0].message.body, std::string("\x1f\x8b\x08"));
}

TEST(HttpParser, http_parser_head_response_has_no_body) {
  const Outcome out = run(Direction::Response, {"HEAD", "GET"},
                          "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
                          "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
  ASSERT_TRUE(out.state == State::Http);
  ASSERT_TRUE(out.finished_cleanly);
  ASSERT_EQ(out.messages.size(), size_t{2});
  ASSERT_TRUE(out.messages[0].message.body.empty());
  ASSERT_EQ(out.messages[1].message.body, std::string("hi"));

  // Chunked framing is ignored too.
  const Outcome chunked = run(Direction::Response, {"HEAD"}, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT_TRUE(chunked.finished_cleanly);
  ASSERT_EQ(chunked.messages.size(), size_t{1});
}

TEST(HttpParser, http_parser_204_and_304_have_no_body) {
  const Outcome out = run(Direction::Response, {"DELETE", "GET", "GET"},
                          "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"
                          "HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\nContent-Length: 500\r\n\r\n"
                          "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
  ASSERT_TRUE(out.state == State::Http);
  ASSERT_TRUE(out.finished_cleanly);
  ASSERT_EQ(out.messages.size(), size_t{3});
  ASSERT_TRUE(out.messages[0].message.body.empty());
  ASSERT_TRUE(out.messages[1].message.body.empty());
  ASSERT_EQ(out.messages[2].message.body, std::string("abc"));
}

TEST(HttpParser, http_parser_100_continue_then_final_response_consumes_method_once) {
  // If the 100 had used up HEAD, the 200 would be read as a GET response with a 5-byte body.
  HttpParser parser(Direction::Response);
  parser.expect_response_to("HEAD");
  parser.expect_response_to("GET");
  const std::string input =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
  ASSERT_EQ(parser.feed(input), input.size());
  ASSERT_TRUE(!parser.in_message());
  auto first = parser.pop_completed();
  ASSERT_TRUE(first.interim);
  ASSERT_EQ(first.message.first_line, std::string("HTTP/1.1 100 Continue"));
  auto second = parser.pop_completed();
  ASSERT_TRUE(!second.interim);
  ASSERT_TRUE(second.message.body.empty());
  auto third = parser.pop_completed();
  ASSERT_TRUE(!third.interim);
  ASSERT_EQ(third.message.body, std::string("abc"));
  ASSERT_TRUE(!parser.has_completed());

  // An interim response with nothing queued is still interim.
  const Outcome lone = run(Direction::Response, {}, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_EQ(lone.messages.size(), size_t{1});
  ASSERT_TRUE(lone.messages[0].interim);
}

TEST(HttpParser, http_parser_103_early_hints) {
  const Outcome out = run(Direction::Response, {"GET"},
                          "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"
                          "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  ASSERT_TRUE(out.finished_cleanly);
  ASSERT_EQ(out.messages.size(), size_t{2});
  ASSERT_TRUE(out.messages[0].interim);
  ASSERT_EQ(*out.messages[0].message.header("link"), std::string_view("</style.css>; rel=preload; as=style"));
  ASSERT_TRUE(!out.messages[1].interim);
  ASSERT_EQ(out.messages[1].message.body, std::string("ok"));
}

TEST(HttpParser, http_parser_101_switches_to_tunnel_without_consuming_tunnel_bytes) {
  HttpParser parser(Direction::Response);
  parser.expect_response_to("GET");
  const std::string head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
  ASSERT_EQ(parser.feed(head + "\x81\x05hello"), head.size());
  ASSERT_TRUE(parser.state() == State::Tunnel);
  ASSERT_TRUE(parser.upgraded());
  ASSERT_TRUE(!parser.in_message());
  ASSERT_TRUE(parser.has_completed());
  const auto completed = parser.pop_completed();
  ASSERT_TRUE(!completed.interim);
  ASSERT_EQ(completed.message.first_line, std::string("HTTP/1.1 101 Switching Protocols"));
  ASSERT_EQ(parser.feed("HTTP/1.1 200 OK\r\n\r\n"), size_t{0});
  ASSERT_TRUE(!parser.has_completed());
  ASSERT_TRUE(parser.finish());

  // The 101 ends exactly at the end of a feed: the next feed is all tunnel.
  HttpParser exact(Direction::Response);
  ASSERT_EQ(exact.feed(head), head.size());
  ASSERT_TRUE(exact.upgraded());
  ASSERT_EQ(exact.feed("\x81"), size_t{0});
}

TEST(HttpParser, http_parser_connect_2xx_becomes_tunnel) {
  HttpParser parser(Direction::Response);
  parser.expect_response_to("CONNECT");
  const std::string head = "HTTP/1.1 200 Connection Established\r\n\r\n";
  const std::string client_hello = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s;
  ASSERT_EQ(parser.feed(head + client_hello), head.size());
  ASSERT_TRUE(parser.state() == State::Tunnel);
  ASSERT_TRUE(parser.upgraded());
  ASSERT_EQ(parser.pop_completed().message.first_line, std::string("HTTP/1.1 200 Connection Established"));

  // A refused CONNECT is an ordinary response (with a body) and the connection stays HTTP:
  // the next CONNECT on it succeeds (204) and only then does the tunnel start.
  const Outcome refused = run(Direction::Response, {"CONNECT", "CONNECT"},
                              "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 6\r\n\r\ndenied"
                              "HTTP/1.1 204 No Content\r\n\r\nrest");
  ASSERT_TRUE(refused.state == State::Tunnel);
  ASSERT_EQ(refused.consumed, refused.messages[0].message.serialize().size() + 27);
  ASSERT_EQ(refused.messages.size(), size_t{2});
  ASSERT_EQ(refused.messages[0].message.body, std::string("denied"));
}

TEST(HttpParser, http_parser_pipelined_requests_in_one_feed) {
  const std::string input =
      "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
      "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody"
      "PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"
      "DELETE /d HTTP/1.1\r\nHost: h\r\n\r\n";
  HttpParser parser(Direction::Request);
  ASSERT_EQ(parser.feed(input), input.size());
  std::vector<std::string> lines;
  while (parser.has_completed()) lines.push_back(parser.pop_completed().message.first_line);
  ASSERT_EQ(lines.size(), size_t{4});
  ASSERT_EQ(lines[0], std::string("GET /a HTTP/1.1"));
  ASSERT_EQ(lines[1], std::string("POST /b HTTP/1.1"));
  ASSERT_EQ(lines[2], std::string("PUT /c HTTP/1.1"));
  ASSERT_EQ(lines[3], std::string("DELETE /d HTTP/1.1"));
}

TEST(HttpParser, http_parser_pipelined_responses_follow_the_method_queue) {
  HttpParser parser(Direction::Response);
  parser.expect_response_to("GET");
  const std::string first = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none";
  const std::string second = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
  const std::string third = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n";
  ASSERT_EQ(parser.feed(first), first.size());
  // The HEAD request is announced while its response is already arriving.
  ASSERT_EQ(parser.feed(second.substr(0, 10)), size_t{10});
  parser.expect_response_to("HEAD");
  ASSERT_EQ(parser.feed(second.substr(10) + third), second.size() - 10 + third.size());
  std::vector<std::string> bodies;
  while (parser.has_completed()) bodies.push_back(parser.pop_completed().message.body);
  ASSERT_EQ(bodies.size(), size_t{3});
  ASSERT_EQ(bodies[0], std::string("one"));
  ASSERT_TRUE(bodies[1].empty());
  ASSERT_EQ(bodies[2], std::string("3\r\ntwo\r\n0\r\n\r\n"));  // no method queued: read as a GET response
}

TEST(HttpParser, http_parser_byte_at_a_time_matches_one_feed) {
  for (const Stream& stream : corpus()) {
    const Outcome whole = run(stream.direction, stream.methods, stream.bytes);
    const Outcome bytewise = run(stream.direction, stream.methods, stream.bytes, 1);
    check_same(whole, bytewise);
  }
}

TEST(HttpParser, http_parser_any_split_matches_one_feed) {
  std::mt19937 random(42);
  for (const Stream& stream : corpus()) {
    const Outcome whole = run(stream.direction, stream.methods, stream.bytes);
    // Every split into two pieces.
    for (size_t cut = 1; cut < stream.bytes.size(); cut++) {
      HttpParser parser(stream.direction);
      for (const auto& method : stream.methods) parser.expect_response_to(method);
      Outcome split;
      split.consumed = parser.feed(std::string_view(stream.bytes).substr(0, cut));
      split.consumed += parser.feed(std::string_view(stream.bytes).substr(cut));
      split.finished_cleanly = parser.finish();
      while (parser.has_completed()) split.messages.push_back(parser.pop_completed());
      split.state = parser.state();
      split.error = parser.error();
      check_same(whole, split);
    }
    // Random piece sizes.
    for (int trial = 0; trial < 20; trial++) {
      const size_t piece = 1 + random() % 17;
      check_same(whole, run(stream.direction, stream.methods, stream.bytes, piece));
    }
  }
}

TEST(HttpParser, http_parser_expected_outcomes_of_corpus) {
  // Pin down what the split tests compare against.
  const auto streams = corpus();
  std::vector<std::pair<State, size_t>> expected = {
      {State::Http, 1},  {State::Http, 2},   {State::Http, 2},   {State::Http, 2}, {State::Http, 2},  {State::Http, 1},
      {State::Error, 1}, {State::Error, 0},  {State::Http, 0},   {State::Http, 1}, {State::Http, 4},  {State::Http, 1},
      {State::Http, 4},  {State::Tunnel, 1}, {State::Tunnel, 1}, {State::Http, 1}, {State::Error, 0}, {State::Http, 0},
  };
  ASSERT_EQ(streams.size(), expected.size());
  for (size_t i = 0; i < streams.size(); i++) {
    const Outcome out = run(streams[i].direction, streams[i].methods, streams[i].bytes);
    ASSERT_TRUE(out.state == expected[i].first);
    ASSERT_EQ(out.messages.size(), expected[i].second);
  }
}

TEST(HttpParser, http_parser_serialize_round_trip_reproduces_input) {
  const std::vector<Stream> streams = {
      {Direction::Request,
       {},
       "GET /index.html HTTP/1.1\r\nHost: example.com\r\nX-Trailing: kept  \r\nX-Empty: \r\n\r\n"
       "POST /form HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello=world"
       "PUT /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
      {Direction::Response,
       {"GET", "HEAD", "GET"},
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Expires\r\n\r\n" + kChunkedBody +
           "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
           "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"},
      {Direction::Response, {"GET"}, "HTTP/1.0 200\r\nServer: old\r\n\r\nclose-delimited body"},
  };
  for (const Stream& stream : streams) {
    const Outcome out = run(stream.direction, stream.methods, stream.bytes);
    ASSERT_TRUE(out.state == State::Http);
    ASSERT_TRUE(out.finished_cleanly);
    ASSERT_EQ(concatenated_serializations(out), stream.bytes);
  }
}

TEST(HttpParser, http_parser_header_values_strip_only_leading_whitespace) {
  const Outcome out = run_request("GET / HTTP/1.1\r\nX-Spaced: \t  value  \r\nX-Empty:\r\nX-Tight:v\r\n\r\n");
  ASSERT_EQ(out.messages.size(), size_t{1});
  const auto& headers = out.messages[0].message.headers;
  ASSERT_EQ(headers.size(), size_t{3});
  ASSERT_EQ(headers[0].key, std::string("X-Spaced"));
  ASSERT_EQ(headers[0].value, std::string("value  "));
  ASSERT_EQ(headers[1].value, std::string(""));
  ASSERT_EQ(headers[2].value, std::string("v"));
}

TEST(HttpParser, http_parser_bare_lf_and_leading_empty_lines) {
  HttpParser parser(Direction::Request);
  const std::string input = "\r\n\r\n\nGET / HTTP/1.1\nHost: a\n\n\r\nPOST / HTTP/1.1\nContent-Length: 2\n\nok";
  ASSERT_EQ(parser.feed(input), input.size());
  const auto get = parser.pop_completed();
  ASSERT_EQ(get.message.first_line, std::string("GET / HTTP/1.1"));
  ASSERT_EQ(get.message.headers[0].value, std::string("a"));
  ASSERT_EQ(parser.pop_completed().message.body, std::string("ok"));
  // Empty lines alone are not a message.
  ASSERT_EQ(parser.feed("\r\n"), size_t{2});
  ASSERT_TRUE(!parser.in_message());
  ASSERT_TRUE(parser.finish());
}

TEST(HttpParser, http_parser_status_line_forms) {
  for (const std::string line : {"HTTP/1.1 200 OK", "HTTP/1.1 200", "HTTP/1.1 200 ", "HTTP/1.0 404 Not Found",
                                 "HTTP/1.1 599 Anything at all!"}) {
    const Outcome out = run(Direction::Response, {"GET"}, line + "\r\nContent-Length: 0\r\n\r\n");
    ASSERT_TRUE(out.state == State::Http);
    ASSERT_EQ(out.messages.size(), size_t{1});
    ASSERT_EQ(out.messages[0].message.first_line, line);
  }
  for (const std::string line : {"HTTP/1.1 20", "HTTP/1.1 2000 OK", "HTTP/2 200", "HTTP/2.0 200 OK", "HTTP/1.1  200 OK",
                                 "ICY 200 OK", "http/1.1 200 OK", "HTTP/1.1 099 Low", "HTTP/1.1 OK"}) {
    const Outcome out = run(Direction::Response, {"GET"}, line + "\r\nContent-Length: 0\r\n\r\n");
    ASSERT_TRUE(out.state == State::Error);
    ASSERT_TRUE(out.messages.empty());
  }
}

TEST(HttpParser, http_parser_invalid_request_lines) {
  for (const std::string line :
       {"get / HTTP/1.1", "GET /", "GET  / HTTP/1.1", "GET / HTTP/2.0", "GET / HTTP/1.1 x", "GET /a b HTTP/1.1",
        "GET / http/1.1", "GET\t/ HTTP/1.1", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJ / HTTP/1.1"}) {
    const Outcome out = run_request(line + "\r\n\r\n");
    ASSERT_TRUE(out.state == State::Error);
    ASSERT_TRUE(out.messages.empty());
  }
  // The HTTP/2 connection preface is not HTTP/1.x.
  ASSERT_TRUE(run_request("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").state == State::Error);
}

TEST(HttpParser, http_parser_response_without_queued_method_is_read_as_get) {
  const Outcome out = run(Direction::Response, {}, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody");
  ASSERT_TRUE(out.state == State::Http);
  ASSERT_EQ(out.messages.size(), size_t{1});
  ASSERT_EQ(out.messages[0].message.body, std::string("body"));
}

TEST(HttpParser, http_parser_tls_client_hello_is_error_at_once) {
  const std::string client_hello = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s;
  HttpParser request_side(Direction::Request);
  ASSERT_EQ(request_side.feed(client_hello.substr(0, 1)), size_t{0});
  ASSERT_TRUE(request_side.state() == State::Error);
  ASSERT_EQ(request_side.error(), std::string("request line does not start with a method"));
  ASSERT_EQ(request_side.feed(client_hello), size_t{0});
  ASSERT_TRUE(!request_side.finish());

  HttpParser whole(Direction::Request);
  ASSERT_EQ(whole.feed(client_hello), size_t{0});
  ASSERT_TRUE(whole.state() == State::Error);

  // A TLS server reply (ServerHello) on the response side.
  HttpParser response_side(Direction::Response);
  ASSERT_EQ(response_side.feed("\x16\x03\x03"), size_t{0});
  ASSERT_TRUE(response_side.state() == State::Error);

  // After a good message, feed() counts only that message.
  HttpParser after(Direction::Request);
  const std::string get = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  ASSERT_EQ(after.feed(get + client_hello), get.size());
  ASSERT_TRUE(after.state() == State::Error);
  ASSERT_TRUE(after.has_completed());
  ASSERT_EQ(after.pop_completed().message.first_line, std::string("GET / HTTP/1.1"));
}

TEST(HttpParser, http_parser_header_line_errors) {
  const Outcome no_colon = run_request("GET / HTTP/1.1\r\nHost example.com\r\n\r\n");
  ASSERT_TRUE(no_colon.state == State::Error);
  ASSERT_EQ(no_colon.error, std::string("header line without a colon"));
  ASSERT_TRUE(no_colon.messages.empty());

  const Outcome space_before_colon = run_request("GET / HTTP/1.1\r\nHost : example.com\r\n\r\n");
  ASSERT_EQ(space_before_colon.error, std::string("invalid header name"));
  const Outcome empty_name = run_request("GET / HTTP/1.1\r\n: value\r\n\r\n");
  ASSERT_EQ(empty_name.error, std::string("invalid header name"));
  const Outcome folded = run_request("GET / HTTP/1.1\r\nX-Long: a\r\n  continued\r\n\r\n");
  ASSERT_EQ(folded.error, std::string("obsolete line folding"));
  const Outcome response = run(Direction::Response, {"GET"}, "HTTP/1.1 200 OK\r\nbroken\r\n\r\n");
  ASSERT_EQ(response.error, std::string("header line without a colon"));
}

TEST(HttpParser, http_parser_two_mib_header_is_error) {
  const std::string big = "GET / HTTP/1.1\r\nX-Big: " + std::string(2 << 20, 'a') + "\r\n\r\n";
  HttpParser parser(Direction::Request);
  size_t fed = 0;
  while (fed < big.size() && parser.state() == State::Http) {
    parser.feed(std::string_view(big).substr(fed, 65536));
    fed += 65536;
  }
  ASSERT_TRUE(parser.state() == State::Error);
  ASSERT_EQ(parser.error(), std::string("header section larger than 1 MiB"));
  ASSERT_TRUE(fed <= (size_t{1} << 20) + 65536);  // noticed at the cap, not at the end

  // Many small fields add up the same way.
  std::string many = "GET / HTTP/1.1\r\n";
  while (many.size() < (size_t{2} << 20)) many += "X-Field: " + std::string(100, 'b') + "\r\n";
  ASSERT_EQ(run_request(many + "\r\n", 65536).error, std::string("header section larger than 1 MiB"));

  // Just under the cap is fine.
  const std::string large = "GET / HTTP/1.1\r\nX-Large: " + std::string(1000000, 'c') + "\r\n\r\n";
  const Outcome ok = run_request(large, 65536);
  ASSERT_TRUE(ok.state == State::Http);
  ASSERT_EQ(ok.messages.size(), size_t{1});
}

TEST(HttpParser, http_parser_bad_chunk_size_is_error) {
  for (const std::string size_line : {"zz", "", "-1", "0x10", " 5", "5 x", "1ffffffffffffffff", "10000000000000000"}) {
    const Outcome out =
        run(Direction::Response, {"GET"},
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + size_line + "\r\nhello\r\n0\r\n\r\n");
    ASSERT_TRUE(out.state == State::Error);
    ASSERT_EQ(out.error, std::string("invalid chunk size"));
    ASSERT_TRUE(out.messages.empty());
  }
  // The largest size that fits in 64 bits is accepted (then cut short).
  const Outcome huge =
      run(Direction::Response, {"GET"}, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\nabc");
  ASSERT_TRUE(huge.state == State::Http);
  ASSERT_TRUE(!huge.finished_cleanly);

  const Outcome no_crlf = run_request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n");
  ASSERT_EQ(no_crlf.error, std::string("chunk data not followed by a line end"));
  const Outcome bad_trailer =
      run_request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nnot a field\r\n\r\n");
  ASSERT_EQ(bad_trailer.error, std::string("header line without a colon"));
  const Outcome long_ext = run_request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;" +
                                       std::string(HttpParser::kMaxChunkSizeLine, 'e') + "\r\nhello\r\n0\r\n\r\n");
  ASSERT_EQ(long_ext.error, std::string("chunk size line too long"));
}

TEST(HttpParser, http_parser_finish_reports_cut_short_messages) {
  // Mid-body (Content-Length).
  const Outcome mid_body = run(Direction::Response, {"GET"}, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
  ASSERT_TRUE(!mid_body.finished_cleanly);
  ASSERT_TRUE(mid_body.messages.empty());
  // Mid-body (chunked request), mid-header, mid-start-line.
  ASSERT_TRUE(!run_request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel").finished_cleanly);
  ASSERT_TRUE(
      !run_request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n").finished_cleanly);
  ASSERT_TRUE(!run_request("GET / HTTP/1.1\r\nHost: a\r\n").finished_cleanly);
  ASSERT_TRUE(!run_request("GE").finished_cleanly);
  // Between messages, and on an empty stream.
  const Outcome between = run_request("GET / HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(between.finished_cleanly);
  ASSERT_EQ(between.messages.size(), size_t{1});
  ASSERT_TRUE(run_request("").finished_cleanly);

  HttpParser parser(Direction::Request);
  parser.feed("GET / HTTP/1.1\r\nHost");
  ASSERT_TRUE(parser.in_message());
  ASSERT_TRUE(!parser.finish());
  ASSERT_TRUE(!parser.has_completed());
  ASSERT_TRUE(!parser.in_message());
}

TEST(HttpParser, http_parser_lying_content_length_does_not_allocate_it) {
  // A terabyte-sized Content-Length must neither throw nor reserve a terabyte.
  const Outcome out =
      run(Direction::Response, {"GET"}, "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\nsmall");
  ASSERT_TRUE(out.state == State::Http);
  ASSERT_TRUE(!out.finished_cleanly);
}

TEST(HttpParser, http_parser_large_body_in_64k_pieces) {
  const size_t body_size = 64 << 20;
  std::string piece(65536, 'z');
  HttpParser parser(Direction::Response);
  parser.expect_response_to("GET");
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body_size) + "\r\n\r\n";
  ASSERT_EQ(parser.feed(head), head.size());
  for (size_t sent = 0; sent < body_size; sent += piece.size()) {
    piece[0] = static_cast<char>('a' + (sent / piece.size()) % 26);
    ASSERT_EQ(parser.feed(piece), piece.size());
  }
  ASSERT_TRUE(parser.has_completed());
  const auto completed = parser.pop_completed();
  ASSERT_EQ(completed.message.body.size(), body_size);
  ASSERT_EQ(completed.message.body[65536], 'b');
  ASSERT_EQ(completed.message.body[body_size - 1], 'z');
}

TEST(HttpParser, http_parser_pop_completed_on_empty_throws) {
  HttpParser parser(Direction::Request);
  EXPECT_THROW_WITH(std::logic_error, parser.pop_completed(), "no completed message");
}

TEST(HttpParser, http_parser_start_line_errors_name_the_rule) {
  for (const std::string line : {"GET /", "GET  / HTTP/1.1", "GET / HTTP/2.0", "GET / HTTP/1.1 x", "GET /a b HTTP/1.1",
                                 "GET / http/1.1", "GET / HTTP/1.1 ", "GET /\x7f HTTP/1.1"}) {
    EXPECT_EQ(run_request(line + "\r\n\r\n").error, "request line is not METHOD SP target SP HTTP/1.x") << line;
  }
  for (const std::string line : {"HTTP/1.1 20", "HTTP/1.1", "HTTP/1.1 200OK"}) {
    EXPECT_EQ(run(Direction::Response, {"GET"}, line + "\r\n\r\n").error, "not an HTTP/1.x status line") << line;
  }
  EXPECT_EQ(run(Direction::Response, {"GET"}, "HTTP/1.1 099 Low\r\n\r\n").error, "invalid status code");
}

TEST(HttpParser, http_parser_feed_step_stops_at_each_head_and_each_message) {
  HttpParser parser(Direction::Response);
  parser.expect_response_to("GET");
  parser.expect_response_to("GET");
  parser.expect_response_to("HEAD");
  const std::string first = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string first_body = "3\r\nabc\r\n0\r\n\r\n";
  const std::string second = "HTTP/1.1 304 Not Modified\r\n\r\n";
  const std::string third = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
  std::string_view data;
  const std::string all = first + first_body + second + third;
  data = all;
  EXPECT_EQ(parser.head(), nullptr);
  size_t n = parser.feed_step(data);
  EXPECT_EQ(n, first.size());  // the head of the first: its body is next
  ASSERT_NE(parser.head(), nullptr);
  EXPECT_EQ(parser.head()->header("Content-Type"), "text/html");
  EXPECT_FALSE(parser.has_completed());
  data.remove_prefix(n);
  n = parser.feed_step(data);
  EXPECT_EQ(n, first_body.size());
  ASSERT_TRUE(parser.has_completed());
  EXPECT_EQ(parser.front_completed().message.body, first_body);
  EXPECT_EQ(parser.head(), nullptr);
  data.remove_prefix(n);
  n = parser.feed_step(data);
  EXPECT_EQ(n, second.size());  // a message with no body ends with its head
  EXPECT_EQ(parser.pop_completed().message.first_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(parser.pop_completed().message.first_line, "HTTP/1.1 304 Not Modified");
  data.remove_prefix(n);
  EXPECT_EQ(parser.feed_step(data), third.size());  // a response to HEAD: no body whatever its length says
  EXPECT_EQ(parser.pop_completed().message.first_line, "HTTP/1.1 200 OK");
  EXPECT_FALSE(parser.in_message());
}

// With a body limit, a body beyond it is counted, not kept, whatever its framing and however it
// arrives; what is held stays near the limit; the messages around it are kept whole.
TEST(HttpParser, bodies_beyond_the_limit_are_counted_not_kept) {
  const std::string big(100000, 'x');
  std::string chunked;
  for (size_t at = 0; at < big.size(); at += 7000) {
    const std::string piece = big.substr(at, 7000);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", piece.size());
    chunked += std::string(size) + ";ext=1\r\n" + piece + "\r\n";
  }
  chunked += "0\r\nX-Trailer: t\r\n\r\n";
  const std::string stream =
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
      "HTTP/1.1 200 OK\r\nContent-Length: " +
      std::to_string(big.size()) + "\r\n\r\n" + big + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
      chunked +
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
      "HTTP/1.1 200 OK\r\n\r\n" +
      big;
  for (const size_t piece : {size_t{1}, size_t{997}, stream.size()}) {
    HttpParser parser(Direction::Response);
    parser.set_body_limit(1000);
    for (int i = 0; i < 5; i++) parser.expect_response_to("GET");
    size_t most_held = 0;
    for (size_t pos = 0; pos < stream.size(); pos += piece) {
      ASSERT_EQ(parser.feed(std::string_view(stream).substr(pos, piece)), std::min(piece, stream.size() - pos));
      if (const HttpMessage* head = parser.head()) most_held = std::max(most_held, head->body.capacity());
    }
    ASSERT_TRUE(parser.finish());
    std::vector<HttpParser::Completed> done;
    while (parser.has_completed()) done.push_back(parser.pop_completed());
    ASSERT_EQ(done.size(), 5u) << piece;
    EXPECT_EQ(done[0].message.body, "abc");
    EXPECT_EQ(done[0].dropped_body_bytes, 0u);
    EXPECT_TRUE(done[1].message.body.empty());
    EXPECT_EQ(done[1].dropped_body_bytes, big.size());
    EXPECT_TRUE(done[2].message.body.empty());
    EXPECT_EQ(done[2].dropped_body_bytes, chunked.size());  // as it crossed the wire, framing included
    EXPECT_EQ(done[3].message.body, "ok");
    EXPECT_EQ(done[4].dropped_body_bytes, big.size());
    // Held (allocated) at most about twice the limit and what one piece brings past it: a string
    // grows by doubling, and past the limit only a line being parsed is kept.
    EXPECT_LE(most_held, 2 * (1000 + std::min(piece, stream.size())) + 64) << piece;
  }
}
