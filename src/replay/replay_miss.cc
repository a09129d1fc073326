// SPDX-License-Identifier: GPL-3.0-or-later
// The replay matcher's misses: ranking the nearest recorded requests and writing the 404 that
// names them. See replay_miss.hh.
#include "replay/replay_miss.hh"

#include <algorithm>
#include <string_view>

#include "util/text.hh"

using Entry = ReplayEntry;

namespace {

// Up to three nearest recorded requests, each as "REQUEST (differs in: a, b)", once each: the
// same host first, then the same path on other hosts; fewest differences that prevent a match,
// then the longest shared path prefix, then recorded order.
// *user_agent_differs: one of them differs in its User-Agent.
std::vector<std::string> nearest_requests(const IncomingRequest& in, const ReplayOptions& options,
                                          const std::vector<const Entry*>& same_host,
                                          const std::vector<const Entry*>& same_path, bool* user_agent_differs) {
  struct Near {
    const Entry* entry;
    std::vector<std::string> fields;
    size_t blocking;       // differing fields that prevent a match (all but query)
    size_t shared_prefix;  // of the paths
    size_t group;          // 0: same host, 1: same path elsewhere
    size_t order;
  };
  std::vector<Near> near;
  auto consider = [&](const std::vector<const Entry*>& list, size_t group) {
    for (size_t i = 0; i < list.size(); i++) {
      const Entry* e = list[i];
      if (group == 1 && in.has_host && e->host == in.host) continue;  // already among the same-host ones
      Near n{e, differences(*e, in, options), 0, 0, group, i};
      n.blocking = n.fields.size() - static_cast<size_t>(std::count(n.fields.begin(), n.fields.end(), "query"));
      const auto mismatch = std::mismatch(e->path.begin(), e->path.end(), in.path.begin(), in.path.end());
      n.shared_prefix = static_cast<size_t>(mismatch.first - e->path.begin());
      near.push_back(std::move(n));
    }
  };
  consider(same_host, 0);
  consider(same_path, 1);
  std::stable_sort(near.begin(), near.end(), [](const Near& a, const Near& b) {
    if (a.group != b.group) return a.group < b.group;
    if (a.blocking != b.blocking) return a.blocking < b.blocking;
    if (a.shared_prefix != b.shared_prefix) return a.shared_prefix > b.shared_prefix;
    return a.order < b.order;
  });

  std::vector<std::string> lines;  // "REQUEST (differs in: a, b)", unique
  for (const Near& n : near) {
    if (lines.size() == 3) break;
    std::string fields;
    for (const std::string& f : n.fields) {
      fields += (fields.empty() ? "" : ", ") + f;
      if (f == "user-agent") *user_agent_differs = true;
    }
    const std::string line = describe_request(n.entry->https, n.entry->host, n.entry->method, n.entry->target) +
                             " (differs in: " + fields + ")";
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }

  return lines;
}

// The 404 naming the request and the nearest recorded ones (HEAD: no body), with its log line.
ReplayMatch miss_response(const IncomingRequest& in, const std::vector<std::string>& lines, bool user_agent_differs) {
  const std::string request = describe_request(in.https, in.has_host ? in.host : "(no Host)", in.method, in.target);
  ReplayMatch match;
  match.found = false;
  std::string body = "mm-replay: nothing recorded matches this request:\n  " + request + "\n";
  if (in.has_user_agent) body += "  User-Agent: " + printable(in.user_agent, 400) + "\n";
  if (!in.has_host) body += "The request has no Host header; every recorded request has one.\n";
  std::string log = "no recorded response for " + request;
  if (lines.empty()) {
    const std::string what = "Nothing was recorded for host " + (in.has_host ? printable(in.host, 200) : "(none)") +
                             " or path " + printable(in.path, 400) + ".";
    body += what + "\n";
    log += "; nothing recorded for this host or path";
  } else {
    body += "Nearest recorded requests:\n";
    log += "; nearest:";
    for (size_t i = 0; i < lines.size(); i++) {
      body += "  " + lines[i] + "\n";
      log += (i ? "; " : " ") + lines[i];
    }
  }
  if (user_agent_differs) {
    // Recorded with one client, replayed with another (curl and a browser): the usual cause.
    body +=
        "The User-Agent differs from the recorded one: run mm-replay with --ignore-user-agent to answer "
        "whatever the User-Agent.\n";
    log += " (--ignore-user-agent matches whatever the User-Agent)";
  }
  match.log_line = log;
  match.response.status = 404;
  match.response.reason = "Not Found";
  match.response.headers = {{"Content-Type", "text/plain; charset=utf-8"},
                            {"Content-Length", std::to_string(body.size())},
                            {"Cache-Control", "no-store"}};
  if (in.method == "HEAD") {
    match.response.body.clear();
  } else {
    match.response.body = std::move(body);
  }
  return match;
}

}  // namespace

std::string describe_request(bool https, std::string_view host, std::string_view method, std::string_view target) {
  return printable(method, 40) + " " + (https ? "https://" : "http://") + printable(host, 200) + printable(target, 400);
}

bool user_agent_matches(const Entry& e, const IncomingRequest& in, const ReplayOptions& options) {
  if (options.ignore_user_agent) return true;
  if (e.has_user_agent != in.has_user_agent) return false;
  return !e.has_user_agent || e.user_agent == in.user_agent;
}

std::vector<std::string> differences(const Entry& e, const IncomingRequest& in, const ReplayOptions& options) {
  std::vector<std::string> fields;
  if (e.https != in.https) fields.push_back("scheme");
  if (!in.has_host || e.host != in.host) fields.push_back("host");
  if (e.method != in.method) fields.push_back("method");
  if (e.path != in.path) fields.push_back("path");
  if (std::string_view(e.target).substr(e.path.size()) != std::string_view(in.target).substr(in.path.size()))
    fields.push_back("query");
  if (!user_agent_matches(e, in, options)) fields.push_back("user-agent");
  return fields;
}

ReplayMatch explain_miss(const IncomingRequest& in, const ReplayOptions& options,
                         const std::vector<const Entry*>& same_host, const std::vector<const Entry*>& same_path) {
  bool user_agent_differs = false;
  const std::vector<std::string> lines = nearest_requests(in, options, same_host, same_path, &user_agent_differs);
  return miss_response(in, lines, user_agent_differs);
}
