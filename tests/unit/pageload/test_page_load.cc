// SPDX-License-Identifier: GPL-3.0-or-later
// The pure parts of a load: origins and protocols of responses, the network tally from DevTools
// events, the reasons of failed navigations, and frames put on the navigation's time axis; and
// the command line's checks (window, URLs) and Chromium's arguments.
#include <gtest/gtest.h>

#include "expect.hh"
#include "pageload/chromium.hh"
#include "pageload/page_load.hh"
#include "pageload/pageload_tool.hh"
#include "util/exception.hh"

using nlohmann::json;

TEST(PageLoad, UrlOriginHasSchemeHostAndPort) {
  EXPECT_EQ(url_origin("http://a.test/x.js?y"), "http://a.test:80");
  EXPECT_EQ(url_origin("https://WWW.B.test"), "https://www.b.test:443");
  EXPECT_EQ(url_origin("https://user:pw@c.test:8443/#f"), "https://c.test:8443");
  EXPECT_EQ(url_origin("http://[::1]/"), "http://[::1]:80");
  EXPECT_EQ(url_origin("http://[::1]:8080/"), "http://[::1]:8080");
  EXPECT_EQ(url_origin("wss://a.test/socket"), "wss://a.test:443");
  EXPECT_FALSE(url_origin("data:text/html,hi"));
  EXPECT_FALSE(url_origin("blob:https://a.test/1234"));
  EXPECT_FALSE(url_origin("http:///nohost"));
}

TEST(PageLoad, ProtocolShortNames) {
  EXPECT_EQ(protocol_short_name("http/1.1"), "h1");
  EXPECT_EQ(protocol_short_name("http/1.0"), "h1");
  EXPECT_EQ(protocol_short_name("h2"), "h2");
  EXPECT_EQ(protocol_short_name("h3"), "h3");
  EXPECT_EQ(protocol_short_name("h3-29"), "h3");
  EXPECT_EQ(protocol_short_name("quic"), "h3");
  EXPECT_FALSE(protocol_short_name("data"));
  EXPECT_FALSE(protocol_short_name(""));
}

TEST(PageLoad, NavigationErrorReasonsNameTheCause) {
  EXPECT_EQ(navigation_error_reason("net::ERR_NAME_NOT_RESOLVED"), "DNS failure (net::ERR_NAME_NOT_RESOLVED)");
  EXPECT_EQ(navigation_error_reason("net::ERR_CONNECTION_REFUSED"), "connection refused (net::ERR_CONNECTION_REFUSED)");
  EXPECT_EQ(navigation_error_reason("net::ERR_CERT_AUTHORITY_INVALID"),
            "certificate error (net::ERR_CERT_AUTHORITY_INVALID)");
  EXPECT_EQ(navigation_error_reason("net::ERR_FOO"), "navigation failed (net::ERR_FOO)");
}

namespace {
json event(const char* method, json params) { return {{"method", method}, {"params", std::move(params)}}; }
}  // namespace

TEST(PageLoad, NetworkTallyCountsResponsesFailuresBytesOriginsAndProtocols) {
  NetworkTally tally;
  // The document, over HTTPS with HTTP/2, after a redirect from HTTP.
  tally.add(event("Network.requestWillBeSent", {{"requestId", "1"}, {"request", {{"url", "http://a.test/"}}}}));
  tally.add(
      event("Network.requestWillBeSent",
            {{"requestId", "1"},
             {"request", {{"url", "https://a.test/"}}},
             {"redirectResponse", {{"url", "http://a.test/"}, {"protocol", "http/1.1"}, {"encodedDataLength", 200}}}}));
  tally.add(event("Network.responseReceived",
                  {{"requestId", "1"},
                   {"response", {{"url", "https://a.test/"}, {"protocol", "h2"}, {"encodedDataLength", 100}}}}));
  tally.add(event("Network.dataReceived", {{"requestId", "1"}, {"encodedDataLength", 900}}));
  tally.add(event("Network.loadingFinished", {{"requestId", "1"}, {"encodedDataLength", 1000}}));
  // An image that fails before any response (connection refused).
  tally.add(
      event("Network.requestWillBeSent", {{"requestId", "2"}, {"request", {{"url", "https://c.test:8443/i.png"}}}}));
  tally.add(event("Network.loadingFailed", {{"requestId", "2"}, {"errorText", "net::ERR_CONNECTION_REFUSED"}}));
  // A script cut off after its headers and 300 bytes.
  tally.add(event("Network.requestWillBeSent", {{"requestId", "3"}, {"request", {{"url", "http://b.test/s.js"}}}}));
  tally.add(
      event("Network.responseReceived",
            {{"requestId", "3"},
             {"response", {{"url", "http://b.test/s.js"}, {"protocol", "http/1.1"}, {"encodedDataLength", 150}}}}));
  tally.add(event("Network.dataReceived", {{"requestId", "3"}, {"encodedDataLength", 300}}));
  tally.add(event("Network.loadingFailed", {{"requestId", "3"}, {"errorText", "net::ERR_CONNECTION_RESET"}}));
  // A data: image: no network.
  tally.add(
      event("Network.requestWillBeSent", {{"requestId", "4"}, {"request", {{"url", "data:image/png;base64,AA"}}}}));
  tally.add(
      event("Network.responseReceived", {{"requestId", "4"}, {"response", {{"url", "data:image/png;base64,AA"}}}}));
  tally.add(event("Network.loadingFinished", {{"requestId", "4"}, {"encodedDataLength", 0}}));

  EXPECT_EQ(tally.requests(), 4);  // the redirect, the document, the refused image, the cut script
  EXPECT_EQ(tally.bytes(), 200 + 1000 + 0 + 450);
  EXPECT_EQ(tally.origins(), 4);  // http://a.test:80, https://a.test:443, https://c.test:8443, http://b.test:80
  const std::map<std::string, std::string> protocols = {
      {"http://a.test:80", "h1"}, {"https://a.test:443", "h2"}, {"http://b.test:80", "h1"}};
  EXPECT_EQ(tally.protocols(), protocols);
  EXPECT_EQ(tally.failure_of("2"), "net::ERR_CONNECTION_REFUSED");
  EXPECT_EQ(tally.failure_of("1"), "");
}

TEST(PageLoad, FramesSinceNavigationKeepTheLastBlankFrameAtZero) {
  std::vector<ScreencastFrame> frames = {{1000.0, "late"}, {900.0, "older blank"}, {950.0, "blank"}, {1100.5, "final"}};
  const auto out = frames_since_navigation(frames, 960.0);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].ms, 0);
  EXPECT_EQ(out[0].png, "blank");
  EXPECT_DOUBLE_EQ(out[1].ms, 40);
  EXPECT_EQ(out[1].png, "late");
  EXPECT_DOUBLE_EQ(out[2].ms, 140.5);
  EXPECT_TRUE(frames_since_navigation({}, 5).empty());
}

TEST(PageLoad, ChromiumArgumentsFollowTheOptions) {
  BrowserOptions options;
  options.width = 800;
  options.height = 600;
  options.extra_flags = {"--lang=fr"};
  auto has = [](const std::vector<std::string>& words, const std::string& word) {
    return std::find(words.begin(), words.end(), word) != words.end();
  };
  auto arguments = chromium_arguments(options, "/tmp/p", false);
  EXPECT_TRUE(has(arguments, "--headless=new"));
  EXPECT_TRUE(has(arguments, "--remote-debugging-pipe"));
  EXPECT_TRUE(has(arguments, "--user-data-dir=/tmp/p"));
  EXPECT_TRUE(has(arguments, "--window-size=800,600"));
  EXPECT_TRUE(has(arguments, "--disable-quic"));
  EXPECT_FALSE(has(arguments, "--disable-http2"));
  EXPECT_FALSE(has(arguments, "--no-sandbox"));
  for (const std::string& argument : arguments) EXPECT_EQ(argument.find("ignore-certificate"), std::string::npos);
  EXPECT_EQ(arguments[arguments.size() - 2], "--lang=fr");  // after ours, so that it can override them
  EXPECT_EQ(arguments.back(), "about:blank");
  options.quic = true;
  options.http2 = false;
  arguments = chromium_arguments(options, "/tmp/p", true);
  EXPECT_FALSE(has(arguments, "--disable-quic"));
  EXPECT_TRUE(has(arguments, "--disable-http2"));
  EXPECT_TRUE(has(arguments, "--no-sandbox"));
}

TEST(PageloadTool, WindowIsWidthByHeightWithinBounds) {
  EXPECT_EQ(parse_window("1366x768"), std::make_pair(1366, 768));
  EXPECT_EQ(parse_window("1x8192"), std::make_pair(1, 8192));
  for (const char* bad : {"1366", "1366x", "x768", "0x768", "8193x10", "13.5x7", "-1x5", "axb"}) {
    EXPECT_THROW(parse_window(bad), UsageError) << bad;
  }
}

TEST(PageloadTool, UrlsAreHttpOrHttpsWithAHost) {
  EXPECT_NO_THROW(check_url("http://a.test/"));
  EXPECT_NO_THROW(check_url("HTTPS://b.test:8443/x?y#z"));
  for (const char* bad : {"a.test", "ftp://a.test/", "http://", "https:///x", "http://a b/", "file:///etc/passwd"}) {
    EXPECT_THROW(check_url(bad), UsageError) << bad;
  }
  EXPECT_THROW(check_url("http://a.test/" + std::string(kMaxUrlBytes, 'x')), UsageError);
}

TEST(ChromiumArguments, Http3ForcedListsEveryOriginAndKeepsQuicOn) {
  BrowserOptions options;
  options.program = "chromium";
  options.http3_forced = true;
  const auto arguments = chromium_arguments(options, "/tmp/p", false);
  EXPECT_NE(std::find(arguments.begin(), arguments.end(), "--origin-to-force-quic-on=*"), arguments.end());
  EXPECT_EQ(std::find(arguments.begin(), arguments.end(), "--disable-quic"), arguments.end());
}

TEST(NetworkTally, HttpsResponsesNotOverH3AreCountedPerOriginAndProtocol) {
  NetworkTally tally;
  auto response = [&](const std::string& id, const std::string& url, const std::string& protocol) {
    tally.add(nlohmann::json{{"method", "Network.requestWillBeSent"},
                             {"params", {{"requestId", id}, {"request", {{"url", url}}}}}});
    tally.add(nlohmann::json{{"method", "Network.responseReceived"},
                             {"params", {{"requestId", id}, {"response", {{"url", url}, {"protocol", protocol}}}}}});
  };
  response("1", "https://a.test/", "h3");
  response("2", "https://b.test/x.js", "h2");
  response("3", "https://b.test/y.js", "h2");
  response("4", "http://c.test/", "http/1.1");  // plain HTTP: QUIC cannot apply
  response("5", "https://d.test:8443/", "http/1.1");
  const auto& missed = tally.https_not_h3();
  ASSERT_EQ(missed.size(), 2u);
  EXPECT_EQ(missed.at("https://b.test:443").at("h2"), 2u);
  EXPECT_EQ(missed.at("https://d.test:8443").at("h1"), 1u);
  EXPECT_EQ(http3_shortfall(missed),
            "asked for HTTP/3, but https://b.test:443 answered 2 requests over h2; https://d.test:8443 answered 1 "
            "request over h1 (is the replay running with --http3?)");
  EXPECT_EQ(http3_shortfall({}), "");
}

TEST(PageLoad, waited_url_line_gives_url_user_agent_and_language) {
  const WaitedUrl plain = parse_waited_url("https://a.test/x?y");
  EXPECT_EQ(plain.url, "https://a.test/x?y");
  EXPECT_TRUE(plain.user_agent.empty());
  const WaitedUrl full = parse_waited_url("http://a.test/\tMozilla/5.0 (X11)\tfr, en;q=0.5\r");
  EXPECT_EQ(full.url, "http://a.test/");
  EXPECT_EQ(full.user_agent, "Mozilla/5.0 (X11)");
  EXPECT_EQ(full.accept_language, "fr, en;q=0.5");
  EXPECT_THROW_WITH(UsageError, parse_waited_url(""), "no URL on standard input");
  EXPECT_THROW_WITH(UsageError, parse_waited_url("\tagent"), "no URL on standard input");
  EXPECT_THROW_WITH(UsageError, parse_waited_url("file:///etc/passwd"), "is not an http:// or https:// URL");
  EXPECT_THROW_WITH(UsageError, parse_waited_url("http://a.test/\ta\tb\tc"), "more than three");
  EXPECT_THROW_WITH(UsageError, parse_waited_url("http://a.test/\x01"), "control bytes");
  EXPECT_THROW_WITH(UsageError, parse_waited_url("http://a.test/" + std::string(kMaxWaitedLine, 'a')), "longer than");
}
