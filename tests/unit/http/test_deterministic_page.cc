// SPDX-License-Identifier: GPL-3.0-or-later
// The deterministic script: where it goes in a page, the policies that would block it, and the
// response fields changed with it (codings applied again, Content-Length, CSP hash).
#include <openssl/sha.h>

#include "compressed.hh"
#include "expect.hh"
#include "http/content_coding.hh"
#include "http/deterministic_page.hh"
#include "util/base64.hh"

namespace {
constexpr uint64_t kStart = 1'790'000'000'123;

std::string inserted_at(std::string html) {
  const size_t at = script_position(html);
  if (at == std::string::npos) return "(none)";
  return html.insert(at, "|");
}

std::string sha256_source(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return "'sha256-" + base64_encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest)) + "'";
}

std::string header_value(const std::vector<HttpHeader>& headers, std::string_view key) {
  for (const HttpHeader& h : headers) {
    if (equals_ignoring_case(h.key, key)) return h.value;
  }
  return "(absent)";
}
}  // namespace

TEST(DeterministicPage, script_starts_the_clock_at_the_recorded_time_with_the_fixed_seed) {
  const std::string script = deterministic_script(kStart);
  EXPECT_NE(script.find("clock=1790000000123"), std::string::npos);
  EXPECT_NE(script.find("seed=" + std::to_string(kDeterministicSeed)), std::string::npos);
  EXPECT_NE(script.find("Math.random=random"), std::string::npos);
  EXPECT_NE(script.find("getRandomValues"), std::string::npos);
  EXPECT_EQ(script.find("</script"), std::string::npos);
  EXPECT_EQ(deterministic_script(kStart), script);  // the same page gets the same script
  EXPECT_NE(deterministic_script(kStart + 1), script);
}

TEST(DeterministicPage, script_goes_after_head_and_its_charset_before_any_other_script) {
  EXPECT_EQ(inserted_at("<!DOCTYPE html><html lang=en><head><title>t</title></head>"),
            "<!DOCTYPE html><html lang=en><head>|<title>t</title></head>");
  EXPECT_EQ(inserted_at("<!doctype html>\n<HEAD data-x=\"a>b\">\n<meta charset=\"utf-8\"><script>x</script>"),
            "<!doctype html>\n<HEAD data-x=\"a>b\">\n<meta charset=\"utf-8\">|<script>x</script>");
  EXPECT_EQ(inserted_at("<html><head><meta name=viewport content=x><meta http-equiv=Content-Type "
                        "content=\"text/html; charset=utf-8\"><title>"),
            "<html><head><meta name=viewport content=x><meta http-equiv=Content-Type "
            "content=\"text/html; charset=utf-8\">|<title>");
  // A policy in a <meta> covers what follows it: the script stays before it.
  EXPECT_EQ(inserted_at("<head><meta http-equiv=Content-Security-Policy content=\"script-src 'self'\">"
                        "<meta charset=utf-8>"),
            "<head>|<meta http-equiv=Content-Security-Policy content=\"script-src 'self'\"><meta charset=utf-8>");
  // <header> is not <head>; without a head, after <html>, else the doctype, else the start.
  EXPECT_EQ(inserted_at("<!doctype html><html><body><header>h</header>"),
            "<!doctype html><html>|<body><header>h</header>");
  EXPECT_EQ(inserted_at("<!doctype html><p>text"), "<!doctype html>|<p>text");
  EXPECT_EQ(inserted_at("\xEF\xBB\xBF  <p>text"), "\xEF\xBB\xBF|  <p>text");
  // A <head> that only a script's text names is not the page's.
  EXPECT_EQ(inserted_at("<html><script>var s = '<head>';</script>"), "<html>|<script>var s = '<head>';</script>");
  EXPECT_EQ(inserted_at("{\"json\": \"<head>\"}"), "(none)");
  EXPECT_EQ(inserted_at("\xFF\xFE<\0h\0"), "(none)");
  EXPECT_EQ(inserted_at(""), "(none)");
}

TEST(DeterministicPage, policies_that_would_block_the_script_get_its_hash) {
  const std::string hash = "'sha256-abc='";
  EXPECT_EQ(csp_allowing("default-src 'self'", hash), "default-src 'self' 'sha256-abc='");
  EXPECT_EQ(csp_allowing("default-src 'self'; script-src https://cdn.test", hash),
            "default-src 'self'; script-src https://cdn.test 'sha256-abc='");
  EXPECT_EQ(csp_allowing("script-src 'self'; script-src-elem 'none'", hash),
            "script-src 'self'; script-src-elem 'sha256-abc='");
  EXPECT_EQ(csp_allowing("script-src 'nonce-r4nd' 'unsafe-inline' 'strict-dynamic'", hash),
            "script-src 'nonce-r4nd' 'unsafe-inline' 'strict-dynamic' 'sha256-abc='");
  // Already allowed: no hash (one would switch 'unsafe-inline' off for the page's own scripts).
  EXPECT_EQ(csp_allowing("script-src 'self' 'unsafe-inline'", hash), "script-src 'self' 'unsafe-inline'");
  EXPECT_EQ(csp_allowing("img-src *; frame-ancestors 'none'", hash), "img-src *; frame-ancestors 'none'");
  // Each policy of a list on its own.
  EXPECT_EQ(csp_allowing("img-src *, script-src 'self'", hash), "img-src *, script-src 'self' 'sha256-abc='");
}

TEST(DeterministicPage, compressed_pages_get_the_script_and_their_fields_follow) {
  const std::string page =
      "<!doctype html><html><head><title>p</title></head><body>" + std::string(3000, 'x') + "</body></html>";
  for (const std::string coding : {"", "gzip", "br", "deflate"}) {
    SCOPED_TRACE(coding);
    std::vector<HttpHeader> headers = {{"Content-Type", "text/html; charset=utf-8"},
                                       {"Content-Length", "1"},
                                       {"Content-Security-Policy", "script-src 'self'"},
                                       {"Content-Security-Policy-Report-Only", "script-src 'none'"}};
    std::string body = page;
    if (!coding.empty()) {
      headers.push_back({"Content-Encoding", coding});
      body = coding == "gzip" ? gzipped(page) : coding == "br" ? brotli_compressed(page) : zlib_compressed(page, 15);
    }
    std::string why = "stale";
    ASSERT_TRUE(add_deterministic_script(headers, body, kStart, &why));
    EXPECT_EQ(why, "");
    EXPECT_EQ(header_value(headers, "Content-Length"), std::to_string(body.size()));
    const std::vector<std::string> codings =
        coding.empty() ? std::vector<std::string>{} : std::vector<std::string>{coding};
    const auto content = decode_content(body, codings, &why);
    ASSERT_TRUE(content) << why;
    const std::string script = deterministic_script(kStart);
    EXPECT_EQ(*content, "<!doctype html><html><head><script>" + script + "</script><title>p</title></head><body>" +
                            std::string(3000, 'x') + "</body></html>");
    EXPECT_EQ(header_value(headers, "Content-Security-Policy"), "script-src 'self' " + sha256_source(script));
    EXPECT_EQ(header_value(headers, "Content-Security-Policy-Report-Only"), "script-src 'none'");  // blocks nothing
  }
}

TEST(DeterministicPage, other_responses_are_left_as_they_are) {
  const auto unchanged = [](std::vector<HttpHeader> headers, std::string body, const std::string& expected_why) {
    const std::vector<HttpHeader> headers_before = headers;
    const std::string body_before = body;
    std::string why;
    EXPECT_FALSE(add_deterministic_script(headers, body, kStart, &why));
    EXPECT_EQ(why, expected_why);
    EXPECT_EQ(body, body_before);
    EXPECT_EQ(headers.size(), headers_before.size());
  };
  unchanged({{"Content-Type", "application/javascript"}}, "<html>", "");
  unchanged({}, "<html>", "");
  unchanged({{"Content-Type", "text/html"}}, "", "");
  unchanged({{"Content-Type", "text/html"}}, "{\"a\": 1}", "");
  unchanged({{"Content-Type", "text/html; charset=UTF-16"}}, "<html>", "");
  unchanged({{"Content-Type", "text/html"}, {"Content-Encoding", "zstd"}}, "<html>",
            "the content coding \"zstd\" is not one mahimahi decodes (gzip, deflate, br)");
  unchanged({{"Content-Type", "text/html"}, {"Content-Encoding", "gzip"}}, "<html>", "the gzip data is corrupt");
  EXPECT_TRUE(is_html_response({{"content-type", " Application/XHTML+XML ; q=1"}}));
}
