// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The replay matcher's misses: the 404 that explains itself. For a request nothing recorded
// matches, the nearest recorded requests (same host first, then the same path on other hosts) and
// the fields in which each differs, in the body and in one log line. Also the request as the
// matcher compares it and the User-Agent rule, which matching and explaining share.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/replay_request.hh"

// An incoming request normalised like the recorded ones (ReplayEntry).
struct IncomingRequest {
  bool https = false;
  bool has_host = false;
  std::string host;  // normalize_host()
  std::string method, target, path, query;
  bool has_user_agent = false;
  std::string user_agent;
  std::optional<std::string> range;                      // the Range header: part of what makes requests identical
  std::optional<std::pair<uint64_t, size_t>> body = {};  // its body's hash and size (ReplayRequest::body)
};

// "GET http://host/target", printable, for messages.
std::string describe_request(bool https, std::string_view host, std::string_view method, std::string_view target);

// Does the recorded request's User-Agent allow it to answer this one (the same, or both absent,
// unless ignored)?
bool user_agent_matches(const ReplayEntry& e, const IncomingRequest& in, const ReplayOptions& options);

// The fields ("scheme", "host", "method", "path", "query", "user-agent") in which a recorded
// request differs from the incoming one.
std::vector<std::string> differences(const ReplayEntry& e, const IncomingRequest& in, const ReplayOptions& options);

// The 404 for a request nothing matched, from the recorded requests to the same host and to the
// same path (each list in recorded order): up to three nearest ones and what differs.
ReplayMatch explain_miss(const IncomingRequest& in, const ReplayOptions& options,
                         const std::vector<const ReplayEntry*>& same_host,
                         const std::vector<const ReplayEntry*>& same_path);
