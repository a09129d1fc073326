// SPDX-License-Identifier: GPL-3.0-or-later
// The replay matcher's misses, directly: the fields that differ, the User-Agent rule, the nearest
// recorded requests and the 404's body and log line. (Misses through ReplayIndex::match are in
// test_replay_index.cc.)
#include <string>
#include <vector>

#include "expect.hh"
#include "replay/replay_miss.hh"

namespace {

ReplayEntry recorded(std::string host, std::string method, std::string target, bool https = false) {
  ReplayEntry e;
  e.https = https;
  e.host = std::move(host);
  e.method = std::move(method);
  e.target = std::move(target);
  const size_t mark = e.target.find('?');
  e.path = e.target.substr(0, mark);
  e.query = mark == std::string::npos ? "" : e.target.substr(mark + 1);
  e.has_user_agent = true;
  e.user_agent = "UA";
  return e;
}

IncomingRequest incoming(std::string host, std::string method, std::string target, bool https = false) {
  const ReplayEntry e = recorded(host, method, target, https);
  return IncomingRequest{https, !e.host.empty(), e.host, e.method, e.target, e.path, e.query, true, "UA", {}};
}

}  // namespace

TEST(ReplayMiss, differences_and_user_agent) {
  const ReplayEntry e = recorded("a.test", "GET", "/p?x=1");
  EXPECT_TRUE(differences(e, incoming("a.test", "GET", "/p?x=1"), {}).empty());
  EXPECT_EQ(differences(e, incoming("b.test", "POST", "/q?x=2", true), {}),
            (std::vector<std::string>{"scheme", "host", "method", "path", "query"}));
  IncomingRequest other_agent = incoming("a.test", "GET", "/p?x=1");
  other_agent.user_agent = "Other";
  EXPECT_FALSE(user_agent_matches(e, other_agent, {}));
  EXPECT_EQ(differences(e, other_agent, {}), std::vector<std::string>{"user-agent"});
  ReplayOptions ignore;
  ignore.ignore_user_agent = true;
  EXPECT_TRUE(user_agent_matches(e, other_agent, ignore));
}

TEST(ReplayMiss, explained_404) {
  const ReplayEntry near = recorded("a.test", "GET", "/img/1.png"), far = recorded("a.test", "GET", "/x");
  const ReplayEntry elsewhere = recorded("b.test", "GET", "/img/2.png");
  const ReplayMatch m = explain_miss(incoming("a.test", "GET", "/img/2.png"), {}, {&far, &near}, {&elsewhere});
  EXPECT_FALSE(m.found);
  EXPECT_EQ(m.response.status, 404);
  EXPECT_EQ(m.response.body,
            "mm-replay: nothing recorded matches this request:\n  GET http://a.test/img/2.png\n  User-Agent: UA\n"
            "Nearest recorded requests:\n"
            "  GET http://a.test/img/1.png (differs in: path)\n"
            "  GET http://a.test/x (differs in: path)\n"
            "  GET http://b.test/img/2.png (differs in: host)\n");
  EXPECT_EQ(m.log_line,
            "no recorded response for GET http://a.test/img/2.png; nearest: GET http://a.test/img/1.png (differs in: "
            "path); GET http://a.test/x (differs in: path); GET http://b.test/img/2.png (differs in: host)");

  const ReplayMatch none = explain_miss(incoming("c.test", "HEAD", "/none"), {}, {}, {});
  EXPECT_TRUE(none.response.body.empty());  // HEAD
  EXPECT_EQ(none.log_line, "no recorded response for HEAD http://c.test/none; nothing recorded for this host or path");
}

TEST(ReplayMiss, user_agent_miss_names_ignore_user_agent) {
  const ReplayEntry e = recorded("a.test", "GET", "/page");
  IncomingRequest chromium = incoming("a.test", "GET", "/page");
  chromium.user_agent = "Chromium/120";
  const ReplayMatch m = explain_miss(chromium, {}, {&e}, {&e});
  EXPECT_EQ(m.response.status, 404);
  EXPECT_NE(m.response.body.find("GET http://a.test/page (differs in: user-agent)"), std::string::npos);
  EXPECT_NE(m.response.body.find("run mm-replay with --ignore-user-agent"), std::string::npos) << m.response.body;
  EXPECT_NE(m.log_line.find("--ignore-user-agent"), std::string::npos) << m.log_line;
  // A miss for another reason does not suggest it.
  const ReplayMatch path = explain_miss(incoming("a.test", "GET", "/other"), {}, {&e}, {});
  EXPECT_EQ(path.response.body.find("--ignore-user-agent"), std::string::npos) << path.response.body;
  EXPECT_EQ(path.log_line.find("--ignore-user-agent"), std::string::npos);
}
