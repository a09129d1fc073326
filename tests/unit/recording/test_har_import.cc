// HAR import: our own HARs come back byte for byte; browsers' HARs become replayable HTTP/1.1
// exchanges; what is not a HAR is a user error, and a damaged entry is skipped with a warning.
#include "expect.hh"
#include "http/chunked.hh"
#include "recording/har.hh"
#include "samples.hh"
#include "util/base64.hh"
#include "util/exception.hh"

using nlohmann::json;

TEST(HarImport, round_trip_is_byte_exact) {
  const auto entries = varied_entries();
  const json har = to_har(entries);
  const std::string text = har.dump(2);  // must not throw: every string is valid UTF-8
  std::vector<std::string> warnings;
  const auto pairs = from_har(parse_har_text(text, "test.har"), &warnings, "test.har");
  ASSERT_TRUE(warnings.empty());
  ASSERT_EQ(pairs.size(), entries.size());
  // to_har orders by request time; match by first line and body instead of position.
  for (const RecordingEntry& e : entries) {
    size_t matches = 0;
    for (const RecordedPair& p : pairs) matches += p == e.pair;
    ASSERT_EQ(matches, size_t{1});
  }
}

TEST(HarImport, from_browser_becomes_valid_http1) {
  const std::string png = bytes_of({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d});
  const json har = {
      {"log",
       {{"version", "1.2"},
        {"creator", {{"name", "WebInspector"}, {"version", "537.36"}}},
        {"entries",
         {{{"startedDateTime", "2024-03-01T10:00:00.500+01:00"},
           {"time", 30.5},
           {"serverIPAddress", "93.184.216.34"},
           {"request",
            {{"method", "GET"},
             {"url", "https://www.example.com/page?q=1#frag"},
             {"httpVersion", "h2"},
             {"headers",
              {{{"name", ":method"}, {"value", "GET"}},
               {{"name", ":authority"}, {"value", "www.example.com"}},
               {{"name", ":scheme"}, {"value", "https"}},
               {{"name", ":path"}, {"value", "/page?q=1"}},
               {{"name", "accept-encoding"}, {"value", "gzip, br"}}}}}},
           {"response",
            {{"status", 200},
             {"statusText", ""},
             {"httpVersion", "h2"},
             {"headers",
              {{{"name", "content-type"}, {"value", "text/html"}},
               {{"name", "content-encoding"}, {"value", "gzip"}},
               {{"name", "content-length"}, {"value", "31"}}}},
             {"content", {{"size", 12}, {"mimeType", "text/html"}, {"text", "<p>hello</p>"}}}}},
           {"timings",
            {{"blocked", 1.0}, {"dns", -1}, {"connect", 2.0}, {"send", 0.5}, {"wait", 20.0}, {"receive", 7.0}}}},
          {{"serverIPAddress", "[93.184.216.35]"},
           {"request",
            {{"method", "GET"},
             {"url", "http://img.example.com:8080/logo.png"},
             {"httpVersion", "HTTP/1.1"},
             {"headers", json::array()}}},
           {"response",
            {{"status", 200},
             {"statusText", "OK"},
             {"httpVersion", "HTTP/1.1"},
             {"headers", {{{"name", "Transfer-Encoding"}, {"value", "chunked"}}}},
             {"content",
              {{"size", png.size()},
               {"mimeType", "image/png"},
               {"text", base64_encode(png)},
               {"encoding", "base64"}}}}}},
          {{"serverIPAddress", "[2606:2800:220:1::]"},
           {"request", {{"method", "GET"}, {"url", "https://v6.example.com/"}, {"httpVersion", "h3"}}},
           {"response", {{"status", 200}, {"content", {{"size", 1}, {"text", "x"}}}}}},
          {{"serverIPAddress", "93.184.216.34"},
           {"request", {{"method", "GET"}, {"url", "https://www.example.com/blocked"}, {"httpVersion", "h2"}}},
           {"response", {{"status", 0}, {"content", {{"size", 0}}}}}},
          {{"serverIPAddress", "93.184.216.34"},
           {"request", {{"method", "GET"}, {"url", "https://www.example.com/nobody"}}},
           {"response", {{"status", 200}}}}}}}}};
  std::vector<std::string> warnings;
  const auto pairs = from_har(har, &warnings, "browser.har");
  ASSERT_EQ(pairs.size(), size_t{2});
  ASSERT_EQ(warnings.size(), size_t{3});
  ASSERT_TRUE(warnings[0].find("browser.har: entry 3 (https://v6.example.com/)") != std::string::npos);
  ASSERT_TRUE(warnings[0].find("IPv4") != std::string::npos);
  ASSERT_TRUE(warnings[1].find("status 0") != std::string::npos);
  ASSERT_TRUE(warnings[2].find("no response content") != std::string::npos);

  const RecordedPair& page = pairs[0];
  ASSERT_EQ(page.request.first_line, std::string("GET /page?q=1 HTTP/1.1"));
  ASSERT_EQ(page.request.headers.at(0).key, std::string("Host"));
  ASSERT_EQ(page.request.headers.at(0).value, std::string("www.example.com"));
  for (const auto& h : page.request.headers) ASSERT_TRUE(h.key[0] != ':');
  ASSERT_EQ(page.response.first_line, std::string("HTTP/1.1 200 OK"));
  ASSERT_TRUE(!page.response.header("Content-Encoding"));
  ASSERT_EQ(std::string(*page.response.header("Content-Length")), std::string("12"));
  ASSERT_EQ(page.response.body, std::string("<p>hello</p>"));
  ASSERT_EQ(page.ip, std::string("93.184.216.34"));
  ASSERT_EQ(page.port, uint16_t{443});
  ASSERT_TRUE(page.https);
  ASSERT_EQ(page.server_name, std::string("www.example.com"));
  // 10:00:00.5 at +01:00 is 09:00:00.5 UTC; the request starts after blocked (1) and connect (2).
  const uint64_t started = 1709283600500000ULL;
  ASSERT_EQ(page.request_start_us, started + 3000);
  ASSERT_EQ(page.request_end_us, started + 3500);
  ASSERT_EQ(page.response_first_byte_us, started + 23500);
  ASSERT_EQ(page.response_last_byte_us, started + 30500);

  const RecordedPair& logo = pairs[1];
  ASSERT_EQ(logo.ip, std::string("93.184.216.35"));
  ASSERT_EQ(logo.port, uint16_t{8080});
  ASSERT_TRUE(!logo.https);
  ASSERT_EQ(logo.request.first_line, std::string("GET /logo.png HTTP/1.1"));
  ASSERT_EQ(std::string(*logo.request.header("Host")), std::string("img.example.com:8080"));
  ASSERT_EQ(logo.response.body, png);
  ASSERT_TRUE(!logo.response.header("Transfer-Encoding"));
  ASSERT_EQ(std::string(*logo.response.header("Content-Length")), std::to_string(png.size()));
  ASSERT_EQ(decoded_body(logo.response), png);
  // The converted pairs survive our own round trip too.
  const auto again = from_har(to_har({{"a", page}, {"b", logo}}), &warnings, "x");
  ASSERT_EQ(again.size(), size_t{2});
  ASSERT_TRUE((again[0] == page && again[1] == logo) || (again[0] == logo && again[1] == page));
}

TEST(HarImport, malformed_input_is_a_user_error) {
  EXPECT_THROW_WITH(UserError, parse_har_text("{\"log\": [1, 2", "broken.har"), "broken.har is not valid JSON");
  EXPECT_THROW_WITH(UserError, from_har(json::parse("{\"foo\": 1}"), nullptr, "other.json"),
                    "other.json is not a HAR file");
  EXPECT_THROW_WITH(UserError, from_har(json::parse("{\"log\": {}}"), nullptr, "x.har"), "no \"entries\" array");
  EXPECT_THROW_WITH(UserError, from_har(json::parse("[1]"), nullptr, "arr.har"), "arr.har is not a HAR file");
  std::vector<std::string> warnings;
  // A damaged _mahimahi entry is skipped, not half-converted.
  json har = to_har(varied_entries());
  har["log"]["entries"][0]["_mahimahi"]["response_body_raw_base64"] = "not base64!";
  har["log"]["entries"][1] = 42;
  const auto pairs = from_har(har, &warnings, "x.har");
  ASSERT_EQ(pairs.size(), size_t{4});
  ASSERT_EQ(warnings.size(), size_t{2});
  ASSERT_TRUE(warnings[0].find("not valid base64") != std::string::npos);
}
