// SPDX-License-Identifier: GPL-3.0-or-later
// HAR import: our own HARs come back byte for byte; browsers' HARs become replayable HTTP/1.1
// exchanges; what is not a HAR is a user error, and a damaged entry is skipped with a warning.
#include "compressed.hh"
#include "expect.hh"
#include "http/chunked.hh"
#include "http/content_coding.hh"
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
  std::vector<std::string> warnings, notes;
  const auto pairs = from_har(har, &warnings, "browser.har", &notes);
  ASSERT_EQ(pairs.size(), size_t{3});
  ASSERT_EQ(warnings.size(), size_t{2});
  ASSERT_TRUE(warnings[0].find("browser.har: entry 4 (https://www.example.com/blocked)") != std::string::npos);
  ASSERT_TRUE(warnings[0].find("status 0") != std::string::npos);
  ASSERT_TRUE(warnings[1].find("no response content") != std::string::npos);
  // An IPv6-only host is replayed at a stand-in IPv4 address, and the user is told.
  ASSERT_EQ(pairs[2].ip, std::string("198.18.0.1"));
  ASSERT_EQ(notes.size(), size_t{1});
  ASSERT_NE(notes[0].find("v6.example.com"), std::string::npos);

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
  // The handshake (connect 2 ms, no ssl given) is the round trip; the wait beyond it, the think time.
  ASSERT_EQ(page.server_connect_us, std::optional<uint64_t>(2000));
  ASSERT_EQ(page.server_rtt_us, std::optional<uint64_t>(2000));
  ASSERT_EQ(page.server_think_us, std::optional<uint64_t>(18000));

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
  // A number beyond a double is JSON nlohmann cannot hold: a UserError too (fuzz-har-import
  // found that it escaped as nlohmann's out_of_range).
  EXPECT_THROW_WITH(UserError, parse_har_text("{\"log\": 1e999999}", "huge.har"), "huge.har is not valid JSON");
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

namespace {
json without_private_fields(json har) {
  for (json& e : har["log"]["entries"]) e.erase("_mahimahi");
  return har;
}

RecordedPair coded_pair(int n, const std::string& coding, const std::string& body, const std::string& content) {
  RecordedPair p = sample_pair(n);
  p.response.headers = {{"Content-Type", "text/css"}, {"Content-Encoding", coding}, {"Transfer-Encoding", "chunked"}};
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  p.response.body = std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n";
  if (is_known_coding(coding)) {
    EXPECT_EQ(message_content(p.response, nullptr), content);
  }
  return p;
}

// The response a replay would serve for entry `i`, with its headers checked for consistency:
// no coding claimed unless the body has it, no chunking, a right Content-Length.
std::string served_content(const RecordedPair& p) {
  EXPECT_FALSE(p.response.header("Transfer-Encoding"));
  EXPECT_EQ(std::string(p.response.header("Content-Length").value_or("none")), std::to_string(p.response.body.size()));
  std::string why;
  auto content = message_content(p.response, &why);
  EXPECT_TRUE(content) << why;
  return content.value_or("");
}
}  // namespace

TEST(HarImport, without_the_private_field_the_decoded_content_is_served_plain) {
  const std::string css = "body { color: red }\n" + std::string(2000, ' ') + "/* é */\n";
  const std::string png = bytes_of({0x89, 'P', 'N', 'G', 0, 0xff, 1, 2});
  std::vector<RecordingEntry> entries = {{"save.gz", coded_pair(1, "gzip", gzipped(css), css)},
                                         {"save.br", coded_pair(3, "br", brotli_compressed(css), css)},
                                         {"save.png", coded_pair(5, "gzip", gzipped(png), png)},
                                         {"save.zstd", coded_pair(7, "zstd", "opaque", "")}};
  const json stripped = without_private_fields(to_har(entries));
  std::vector<std::string> warnings;
  const auto pairs = from_har(parse_har_text(stripped.dump(), "edited.har"), &warnings, "edited.har");
  ASSERT_TRUE(warnings.empty());
  ASSERT_EQ(pairs.size(), size_t{4});
  for (size_t i = 0; i < 3; i++) {
    EXPECT_FALSE(pairs[i].response.header("Content-Encoding")) << i;
    EXPECT_EQ(served_content(pairs[i]), i == 2 ? png : css) << i;
    EXPECT_EQ(pairs[i].ip, entries[i].pair.ip);
    EXPECT_EQ(pairs[i].port, entries[i].pair.port);
    EXPECT_EQ(pairs[i].https, entries[i].pair.https);
  }
  // What could not be decoded keeps its coding, so a client still gets the bytes it can decode.
  EXPECT_EQ(std::string(pairs[3].response.header("Content-Encoding").value_or("")), "zstd");
  EXPECT_EQ(pairs[3].response.body, "opaque");
  // With the private field, the same HAR gives the bytes back exactly.
  const auto exact = from_har(to_har(entries), &warnings, "ours.har");
  for (size_t i = 0; i < entries.size(); i++) EXPECT_TRUE(exact[i] == entries[i].pair) << i;
}

namespace {
json browser_entry(const std::string& url, int status, const json& content, const json& response_headers,
                   const std::string& ip = "93.184.216.34") {
  json response = {{"status", status},
                   {"statusText", ""},
                   {"httpVersion", "http/2.0"},
                   {"headers", response_headers},
                   {"cookies", json::array()},
                   {"content", content},
                   {"redirectURL", ""},
                   {"headersSize", -1},
                   {"bodySize", -1}};
  json entry = {{"startedDateTime", "2024-03-01T10:00:00.000Z"},
                {"time", 10},
                {"request",
                 {{"method", "GET"},
                  {"url", url},
                  {"httpVersion", "http/2.0"},
                  {"headers", {{{"name", ":authority"}, {"value", url.substr(8, url.find('/', 8) - 8)}}}},
                  {"cookies", json::array()},
                  {"queryString", json::array()}}},
                {"response", response},
                {"cache", json::object()},
                {"timings", {{"wait", 5}}}};
  if (!ip.empty()) entry["serverIPAddress"] = ip;
  return entry;
}

json har_of(const json& entries) { return {{"log", {{"version", "1.2"}, {"entries", entries}}}}; }
}  // namespace

TEST(HarImport, browser_specifics_replay_as_the_browser_saw_them) {
  const json text = {{"size", 5}, {"mimeType", "text/plain"}, {"text", "hello"}};
  json redirect =
      browser_entry("https://www.example.com/old", 301, {{"size", 0}, {"mimeType", "x-unknown"}}, json::array());
  redirect["response"]["redirectURL"] = "https://www.example.com/new";
  json cookie = browser_entry("https://www.example.com/login", 200, text, json::array());
  cookie["response"]["cookies"] = {
      {{"name", "sid"}, {"value", "42"}, {"path", "/"}, {"httpOnly", true}, {"secure", true}}};
  cookie["request"]["cookies"] = {{{"name", "seen"}, {"value", "1"}}, {{"name", "t"}, {"value", "x"}}};
  json canceled = browser_entry("https://www.example.com/gone", 0, {{"size", 0}}, json::array(), "");
  canceled["response"]["_error"] = "net::ERR_ABORTED";
  json websocket = browser_entry("https://www.example.com/socket", 101, {{"size", 0}}, json::array());
  json cached =
      browser_entry("https://www.example.com/app.js", 200, text, json::array(), "");  // _fromCache: no address
  cached["_fromCache"] = "memory";
  const json entries = {
      browser_entry("https://www.example.com/", 200, text, {{{"name", "content-encoding"}, {"value", "br"}}}),
      redirect,
      cookie,
      canceled,
      websocket,
      browser_entry("https://www.example.com/revalidated", 304, text, {{{"name", "etag"}, {"value", "\"1\""}}}),
      browser_entry("https://www.example.com/not-modified", 304, {{"size", 0}}, json::array()),
      browser_entry("https://www.example.com/lost", 200, {{"size", 12}, {"mimeType", "text/plain"}}, json::array()),
      cached,
      browser_entry("https://cdn.example.net/lib.js", 200, text, json::array(), "[2606:2800:220:1::1]")};
  std::vector<std::string> warnings, notes;
  const auto pairs = from_har(har_of(entries), &warnings, "chromium.har", &notes);
  ASSERT_EQ(warnings.size(), size_t{4});
  EXPECT_NE(warnings[0].find("entry 4 (https://www.example.com/gone): status 0 (the request failed, was blocked or "
                             "canceled: net::ERR_ABORTED)"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("status 101"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[2].find("entry 7 (https://www.example.com/not-modified): 304 Not Modified without the content"),
            std::string::npos)
      << warnings[2];
  EXPECT_NE(warnings[3].find("entry 8 (https://www.example.com/lost): the response body is not in the HAR"),
            std::string::npos)
      << warnings[3];
  ASSERT_EQ(pairs.size(), size_t{6});
  EXPECT_EQ(pairs[0].response.first_line, "HTTP/1.1 200 OK");
  EXPECT_FALSE(pairs[0].response.header("content-encoding"));                       // the text is decoded
  EXPECT_EQ(std::string(*pairs[0].response.header("Content-Type")), "text/plain");  // from mimeType
  EXPECT_EQ(served_content(pairs[0]), "hello");
  EXPECT_EQ(pairs[1].response.first_line, "HTTP/1.1 301 Moved Permanently");
  EXPECT_EQ(std::string(*pairs[1].response.header("Location")), "https://www.example.com/new");
  EXPECT_EQ(served_content(pairs[1]), "");
  EXPECT_EQ(std::string(*pairs[2].response.header("Set-Cookie")), "sid=42; Path=/; Secure; HttpOnly");
  EXPECT_EQ(std::string(*pairs[2].request.header("Cookie")), "seen=1; t=x");
  EXPECT_EQ(pairs[3].response.first_line, "HTTP/1.1 200 OK");  // the 304 with the cached content
  EXPECT_EQ(served_content(pairs[3]), "hello");
  ASSERT_EQ(notes.size(), size_t{2});
  EXPECT_EQ(notes[1], "1 304 Not Modified response came with the browser's cached content: recorded as 200 OK with it");
  EXPECT_EQ(pairs[4].ip, "93.184.216.34");  // the cached entry: its host's address from the other entries
  EXPECT_EQ(pairs[5].ip, "198.18.0.1");     // IPv6 only: a stand-in
  EXPECT_NE(notes[0].find("cdn.example.net"), std::string::npos);
}

TEST(HarImport, firefox_specifics) {
  const std::string gif = bytes_of({'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, 0xff});
  json image = browser_entry(
      "https://img.example.org/a.gif", 200,
      {{"size", gif.size()}, {"mimeType", "image/gif"}, {"encoding", "base64"}, {"text", base64_encode(gif)}},
      {{{"name", "content-type"}, {"value", "image/gif"}}, {{"name", "content-length"}, {"value", "99"}}}, "192.0.2.7");
  image["request"]["httpVersion"] = "HTTP/2";
  image["request"]["headers"] = {{{"name", "Host"}, {"value", "img.example.org"}},
                                 {{"name", "accept"}, {"value", "*/*"}}};
  image["response"]["httpVersion"] = "HTTP/2";
  json form = browser_entry("http://forms.example.org:8080/send", 200,
                            {{"size", 2}, {"mimeType", "text/plain"}, {"text", "ok"}}, json::array(), "192.0.2.8");
  form["request"]["method"] = "POST";
  form["request"]["headers"] = {{{"name", "content-type"}, {"value", "application/x-www-form-urlencoded"}},
                                {{"name", "content-length"}, {"value", "3"}}};
  form["request"]["postData"] = {
      {"mimeType", "application/x-www-form-urlencoded"}, {"params", json::array()}, {"text", "a=b"}};
  std::vector<std::string> warnings;
  const auto pairs = from_har(har_of({image, form}), &warnings, "firefox.har");
  ASSERT_TRUE(warnings.empty()) << warnings[0];
  ASSERT_EQ(pairs.size(), size_t{2});
  EXPECT_EQ(pairs[0].request.first_line, "GET /a.gif HTTP/1.1");
  EXPECT_EQ(served_content(pairs[0]), gif);
  EXPECT_EQ(pairs[0].ip, "192.0.2.7");
  EXPECT_TRUE(pairs[0].https);
  EXPECT_EQ(pairs[1].request.first_line, "POST /send HTTP/1.1");
  EXPECT_EQ(std::string(*pairs[1].request.header("Host")), "forms.example.org:8080");
  EXPECT_EQ(pairs[1].request.body, "a=b");
  EXPECT_EQ(std::string(*pairs[1].request.header("Content-Length")), "3");
  EXPECT_EQ(pairs[1].port, 8080);
  EXPECT_FALSE(pairs[1].https);
}

// Timings beyond any real request (fuzz-har-import: "wait": 3e26 overflowed the conversion to
// microseconds) count as a day; negative ones ("does not apply") as nothing.
TEST(HarImport, absurd_timings_are_bounded) {
  json entry = browser_entry("https://www.example.com/", 200, {{"size", 2}, {"mimeType", "text/plain"}, {"text", "ok"}},
                             json::array());
  entry["timings"] = {{"blocked", -1}, {"send", 1e300}, {"wait", 3.33333e+29}, {"receive", 2}};
  std::vector<std::string> warnings, notes;
  const auto pairs = from_har(har_of(json::array({entry})), &warnings, "absurd.har", &notes);
  ASSERT_EQ(pairs.size(), 1u);
  const uint64_t started = 1709287200000000ULL;  // 2024-03-01T10:00:00Z
  const uint64_t day = 86'400'000'000ULL;
  EXPECT_EQ(pairs[0].request_start_us, started);
  EXPECT_EQ(pairs[0].request_end_us, started + day);
  EXPECT_EQ(pairs[0].response_first_byte_us, started + 2 * day);
  EXPECT_EQ(pairs[0].response_last_byte_us, started + 2 * day + 2000);
}

// A browser's HAR times the handshake on a connection's first request only: the origin's other
// requests take its smallest round trip, less the ssl part of connect; no handshake, no timing.
TEST(HarImport, server_timing_from_a_browsers_timings) {
  auto entry = [](const std::string& url, double connect, double ssl, double wait, const std::string& ip) {
    return json{{"startedDateTime", "2026-03-01T10:00:00.000Z"},
                {"request", {{"method", "GET"}, {"url", url}, {"httpVersion", "h2"}, {"headers", json::array()}}},
                {"response",
                 {{"status", 200},
                  {"statusText", ""},
                  {"httpVersion", "h2"},
                  {"headers", json::array()},
                  {"content", {{"size", 2}, {"mimeType", "text/plain"}, {"text", "ok"}}}}},
                {"serverIPAddress", ip},
                {"timings", {{"connect", connect}, {"ssl", ssl}, {"send", 0.1}, {"wait", wait}, {"receive", 1}}}};
  };
  const json har = {
      {"log",
       {{"version", "1.2"},
        {"entries",
         {entry("https://a.test/1", 50, 20, 100, "10.1.0.1"), entry("https://a.test/2", -1, -1, 45, "10.1.0.1"),
          entry("https://a.test/3", 40, 10, 31, "10.1.0.1"), entry("https://b.test/", -1, -1, 80, "10.1.0.2")}}}}};
  std::vector<std::string> warnings;
  const auto pairs = from_har(har, &warnings, "x");
  ASSERT_EQ(pairs.size(), size_t{4});
  EXPECT_EQ(pairs[0].server_connect_us, std::optional<uint64_t>(30000));
  EXPECT_EQ(pairs[2].server_connect_us, std::optional<uint64_t>(30000));
  EXPECT_EQ(pairs[1].server_connect_us, std::nullopt);
  for (int i : {0, 1, 2}) EXPECT_EQ(pairs[i].server_rtt_us, std::optional<uint64_t>(30000)) << i;
  EXPECT_EQ(pairs[0].server_think_us, std::optional<uint64_t>(70000));
  EXPECT_EQ(pairs[1].server_think_us, std::optional<uint64_t>(15000));
  EXPECT_EQ(pairs[2].server_think_us, std::optional<uint64_t>(1000));
  EXPECT_EQ(pairs[3].server_rtt_us, std::nullopt);  // b.test: no handshake timed
  EXPECT_EQ(pairs[3].server_think_us, std::nullopt);
}
