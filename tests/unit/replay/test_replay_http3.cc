// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include "replay/replay_http3.hh"

namespace {
std::vector<std::string> alt_svc_of(const ReplayResponse& r) {
  std::vector<std::string> values;
  for (const HttpHeader& h : r.headers) {
    if (h.key == "Alt-Svc" || h.key == "alt-svc") values.push_back(h.value);
  }
  return values;
}

ReplayResponse with_alt_svc(const std::string& value) {
  ReplayResponse r;
  r.status = 200;
  r.headers = {{"Content-Type", "text/html"}, {"alt-svc", value}};
  return r;
}
}  // namespace

TEST(AltSvc, WithoutHttp3EveryAltSvcIsRemoved) {
  ReplayResponse r = with_alt_svc("h3=\":443\"; ma=86400");
  apply_alt_svc_policy(r, AltSvcPolicy::kNone, true, "a.test");
  EXPECT_TRUE(alt_svc_of(r).empty());
  EXPECT_EQ(r.headers.size(), 1u);
}

TEST(AltSvc, RecordedH3AdvertisementNamesThePortServed) {
  ReplayResponse r = with_alt_svc("h3=\":9999\"; ma=5, h3-29=\":9999\"");
  apply_alt_svc_policy(r, AltSvcPolicy::kRecorded, true, "a.test:8443");
  EXPECT_EQ(alt_svc_of(r), std::vector<std::string>{"h3=\":8443\"; ma=86400"});
  ReplayResponse plain = with_alt_svc("h3=\":443\"");
  apply_alt_svc_policy(plain, AltSvcPolicy::kRecorded, true, "a.test");
  EXPECT_EQ(alt_svc_of(plain), std::vector<std::string>{"h3=\":443\"; ma=86400"});
}

TEST(AltSvc, RecordedPolicyAddsNothingWhereNothingWasAdvertised) {
  ReplayResponse r = with_alt_svc("h2=\":443\"");
  apply_alt_svc_policy(r, AltSvcPolicy::kRecorded, true, "a.test");
  EXPECT_TRUE(alt_svc_of(r).empty());
}

TEST(AltSvc, AdvertiseAllAddsToEveryHttpsResponseButNotPlainHttp) {
  ReplayResponse r;
  r.status = 200;
  apply_alt_svc_policy(r, AltSvcPolicy::kAll, true, "A.test:443");
  EXPECT_EQ(alt_svc_of(r), std::vector<std::string>{"h3=\":443\"; ma=86400"});
  ReplayResponse http = with_alt_svc("h3=\":443\"");
  apply_alt_svc_policy(http, AltSvcPolicy::kAll, false, "a.test");
  EXPECT_TRUE(alt_svc_of(http).empty());
}

TEST(ReplayHttp3, RequestTakesAuthorityPathAndTheMatchingHeaders) {
  Http3Request h3;
  h3.method = "GET";
  h3.scheme = "https";
  h3.authority = "www.a.test";
  h3.path = "/x?y=1";
  h3.headers = {{"user-agent", "UA"}, {"range", "bytes=0-9"}, {"if-range", "\"e\""}, {"host", "other.test"}};
  const ReplayRequest r = replay_request_of(h3);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/x?y=1");
  EXPECT_EQ(r.host, "www.a.test");
  EXPECT_TRUE(r.has_host);
  EXPECT_TRUE(r.https);
  EXPECT_EQ(r.user_agent, "UA");
  EXPECT_TRUE(r.has_user_agent);
  EXPECT_EQ(r.range, "bytes=0-9");
  EXPECT_EQ(r.if_range, "\"e\"");

  Http3Request no_authority;
  no_authority.method = "GET";
  no_authority.path = "/";
  no_authority.headers = {{"host", "h.test"}};
  EXPECT_EQ(replay_request_of(no_authority).host, "h.test");
  EXPECT_FALSE(replay_request_of(no_authority).has_user_agent);
}

TEST(ReplayHttp3, HeadResponseKeepsHeadersAndOmitsTheBody) {
  ReplayMatch m;
  m.found = true;
  m.response.status = 206;
  m.response.headers = {{"Content-Length", "3"}};
  m.response.body = "abc";
  const Http3Response get = http3_response_of(m, "GET");
  EXPECT_EQ(get.status, 206);
  EXPECT_EQ(get.body, "abc");
  EXPECT_FALSE(get.omit_body);
  EXPECT_TRUE(http3_response_of(m, "HEAD").omit_body);
}

TEST(ReplayHttp3, AMissToCloseResetsTheStreamAnyOtherIsAnswered) {
  ReplayMatch m;
  m.response.status = 404;
  EXPECT_FALSE(http3_response_of(m, "GET").reset);  // the explained 404
  m.close = true;                                   // mm-replay --unmatched=close
  EXPECT_TRUE(http3_response_of(m, "GET").reset);
}

TEST(ReplayHttp3, EndpointsAreTheHttpsServersWithTheirApacheCertificates) {
  std::vector<ReplayServerSpec> servers = {{"10.0.0.1", 80, false, {"a.test"}, false},
                                           {"10.0.0.1", 443, true, {"a.test"}, true}};
  const auto endpoints = http3_endpoints(servers, "/w");
  ASSERT_EQ(endpoints.size(), 1u);
  EXPECT_EQ(endpoints[0].ip, "10.0.0.1");
  EXPECT_EQ(endpoints[0].port, 443);
  EXPECT_EQ(endpoints[0].certificate, "/w/apache-10.0.0.1-443.pem");
  EXPECT_EQ(endpoints[0].key, "/w/apache-10.0.0.1-443.key");
}
