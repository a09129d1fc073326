// SPDX-License-Identifier: GPL-3.0-or-later
// Start-line splitting, with the tolerance of each caller: single spaces (the parser, the
// recording proxy, HAR export, mm-recording ls) and runs of spaces (the replay index).
#include "expect.hh"
#include "http/start_line.hh"

namespace {
void expect_request(std::string_view line, StartLineSpaces spaces, std::string_view method, std::string_view target,
                    std::string_view version) {
  const RequestLine r = split_request_line(line, spaces);
  EXPECT_EQ(r.method, method) << line;
  EXPECT_EQ(r.target, target) << line;
  EXPECT_EQ(r.version, version) << line;
}

void expect_status(std::string_view line, StartLineSpaces spaces, std::string_view version, std::string_view code,
                   std::string_view reason) {
  const StatusLine s = split_status_line(line, spaces);
  EXPECT_EQ(s.version, version) << line;
  EXPECT_EQ(s.code, code) << line;
  EXPECT_EQ(s.reason, reason) << line;
}
}  // namespace

TEST(StartLine, request_line_with_single_spaces) {
  const auto single = StartLineSpaces::Single;
  expect_request("GET /x?a=1 HTTP/1.1", single, "GET", "/x?a=1", "HTTP/1.1");
  expect_request("get /x http/1.1", single, "get", "/x", "http/1.1");      // case as it is
  expect_request("GET /a b HTTP/1.1", single, "GET", "/a b", "HTTP/1.1");  // target up to the last space
  expect_request("GET  /x HTTP/1.1", single, "GET", " /x", "HTTP/1.1");    // extra spaces stay in the target
  expect_request("GET / HTTP/1.1 ", single, "GET", "/ HTTP/1.1", "");      // trailing space: empty version
  expect_request("GET /only", single, "GET", "/only", "");                 // HTTP/0.9: no version
  expect_request("GET", single, "GET", "", "");                            // no space: all method
  expect_request(" / HTTP/1.1", single, "", "/", "HTTP/1.1");              // no method
  expect_request("", single, "", "", "");
}

TEST(StartLine, request_line_with_runs_of_spaces) {
  const auto runs = StartLineSpaces::Runs;
  expect_request("GET /x HTTP/1.1", runs, "GET", "/x", "HTTP/1.1");
  expect_request("GET   /x   HTTP/1.1", runs, "GET", "/x", "HTTP/1.1");
  expect_request("GET /a b HTTP/1.1", runs, "GET", "/a", "b HTTP/1.1");  // the target ends at the next space
  expect_request("GET /only", runs, "GET", "/only", "");
  expect_request("GET ", runs, "GET", "", "");
  expect_request("GET", runs, "GET", "", "");
}

TEST(StartLine, status_line_with_single_spaces) {
  const auto single = StartLineSpaces::Single;
  expect_status("HTTP/1.1 200 OK", single, "HTTP/1.1", "200", "OK");
  expect_status("HTTP/1.1 404 Not Found", single, "HTTP/1.1", "404", "Not Found");
  expect_status("HTTP/1.1 204", single, "HTTP/1.1", "204", "");   // no reason phrase
  expect_status("HTTP/1.1 204 ", single, "HTTP/1.1", "204", "");  // an empty one
  expect_status("HTTP/1.1  200 OK", single, "HTTP/1.1", "", "200 OK");
  expect_status("http/1.0 200 fine", single, "http/1.0", "200", "fine");
  expect_status("HTTP/1.1", single, "HTTP/1.1", "", "");
}

TEST(StartLine, status_line_with_runs_of_spaces) {
  const auto runs = StartLineSpaces::Runs;
  expect_status("HTTP/1.1   200 OK", runs, "HTTP/1.1", "200", "OK");
  expect_status("HTTP/1.1 200  OK ", runs, "HTTP/1.1", "200", " OK ");  // the reason as it is
  expect_status("HTTP/1.1 200", runs, "HTTP/1.1", "200", "");
  expect_status("HTTP/1.1", runs, "HTTP/1.1", "", "");
}

TEST(StartLine, three_digit_status_codes_only) {
  EXPECT_EQ(three_digit_status("200"), 200);
  EXPECT_EQ(three_digit_status("099"), 99);
  EXPECT_EQ(three_digit_status("999"), 999);
  EXPECT_FALSE(three_digit_status("20"));
  EXPECT_FALSE(three_digit_status("2000"));
  EXPECT_FALSE(three_digit_status("2x0"));
  EXPECT_FALSE(three_digit_status("+20"));
  EXPECT_FALSE(three_digit_status(""));
}

TEST(StartLine, standard_reason_phrases_for_responses_that_have_none) {
  EXPECT_STREQ(standard_reason_phrase(200), "OK");
  EXPECT_STREQ(standard_reason_phrase(304), "Not Modified");
  EXPECT_STREQ(standard_reason_phrase(404), "Not Found");
  EXPECT_STREQ(standard_reason_phrase(599), "");
}
