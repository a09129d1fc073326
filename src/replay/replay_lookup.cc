// SPDX-License-Identifier: GPL-3.0-or-later
// The index's lookup: a request's candidates (same scheme, host, method and path), the one
// chosen (identical request in recorded order, else the closest query), the part a Range asks
// for, and the explained miss. The loading is replay_index.cc's.
#include <algorithm>
#include <iterator>
#include <mutex>

#include "replay/replay_index.hh"
#include "replay/replay_miss.hh"
#include "replay/replay_range.hh"

namespace {
using Entry = ReplayIndex::Entry;

std::string index_key(bool https, std::string_view host, std::string_view method, std::string_view path) {
  std::string key;
  key.reserve(host.size() + method.size() + path.size() + 4);
  key += https ? 's' : 'p';
  key += '\0';
  key += host;
  key += '\0';
  key += method;
  key += '\0';
  key += path;
  return key;
}

IncomingRequest normalize_request(const ReplayRequest& r) {
  IncomingRequest in;
  in.https = r.https;
  in.has_host = r.has_host && !r.host.empty();
  if (in.has_host) in.host = normalize_host(r.host, r.https);
  in.has_host = !in.host.empty();
  in.method = r.method;
  in.target = origin_form(r.target);
  split_target(in.target, &in.path, &in.query);
  in.has_user_agent = r.has_user_agent;
  in.user_agent = r.user_agent;
  in.range = r.range;
  if (r.body && !r.body->empty()) in.body = std::make_pair(request_body_hash(*r.body), r.body->size());
  return in;
}

// A target as the matcher compares it: without the ignored query parameters.
std::string compared_target(const std::string& path, const std::string& query, const ReplayOptions& options) {
  const std::string q = without_query_parameters(query, options.ignored_query_parameters);
  return q.empty() ? path : path + "?" + q;  // "/a?_=1" is "/a" once "_" is ignored
}

std::string counter_key(const IncomingRequest& in, const ReplayOptions& options) {
  const std::string target =
      options.ignored_query_parameters.empty() ? in.target : compared_target(in.path, in.query, options);
  std::string key = index_key(in.https, in.host, in.method, target);
  if (!options.ignore_user_agent) {
    key += '\0';
    key += in.has_user_agent ? '+' : '-';
    key += in.user_agent;
  }
  key += '\0';
  key += in.range ? "+" + *in.range : "-";
  if (in.body) key += '\0' + std::to_string(in.body->first);  // repeats are counted per body
  return key;
}

bool is_partial(const Entry* e) { return e->response.status == 206; }

// Among candidates (same scheme, host, method, path; recorded order), the ones that pass the
// User-Agent rule. Recorded requests identical to this one (same target, so same query, and the
// same Range or none; failing that, the same target whatever the Range): the n-th of them,
// n = pick_identical() = how often it was served before (the last once exhausted). Otherwise the
// longest common substring of the queries wins, the earliest on ties.
// A request without a Range is answered by a recorded 206 only if nothing else was recorded for
// its target (match() then assembles the slices, or misses), never from another query's.
template <typename PickIdentical>
const Entry* choose(const std::vector<const Entry*>& candidates, const IncomingRequest& in,
                    const ReplayOptions& options, PickIdentical pick_identical) {
  std::vector<const Entry*> eligible, identical, same_target;
  // With ignored query parameters, targets and queries are compared without them.
  const bool ignoring = !options.ignored_query_parameters.empty();
  const std::string in_target = ignoring ? compared_target(in.path, in.query, options) : in.target;
  const std::string in_query =
      ignoring ? without_query_parameters(in.query, options.ignored_query_parameters) : in.query;
  auto target_of = [&](const Entry* e) { return ignoring ? compared_target(e->path, e->query, options) : e->target; };
  auto query_of = [&](const Entry* e) {
    return ignoring ? without_query_parameters(e->query, options.ignored_query_parameters) : e->query;
  };
  for (const Entry* e : candidates) {
    if (!user_agent_matches(*e, in, options)) continue;
    const std::string e_target = target_of(e);
    if (!in.range && is_partial(e) && e_target != in_target) continue;
    eligible.push_back(e);
    if (e_target != in_target) continue;
    same_target.push_back(e);
    if (e->range == in.range) identical.push_back(e);
  }
  if (!in.range) {
    auto whole = [](const std::vector<const Entry*>& list) {
      std::vector<const Entry*> out;
      std::copy_if(list.begin(), list.end(), std::back_inserter(out), [](const Entry* e) { return !is_partial(e); });
      return out;
    };
    if (auto whole_identical = whole(identical); !whole_identical.empty()) {
      identical = std::move(whole_identical);
    } else if (auto whole_same = whole(same_target); !whole_same.empty()) {
      identical = std::move(whole_same);
    }
  }
  if (identical.empty()) identical = std::move(same_target);
  // A request with a body: recorded ones with the same body first (a POST API answers by body).
  auto same_body = [&](std::vector<const Entry*>& list) {
    if (!in.body) return;
    std::vector<const Entry*> out;
    std::copy_if(list.begin(), list.end(), std::back_inserter(out),
                 [&](const Entry* e) { return e->request_body == in.body; });
    if (!out.empty()) list = std::move(out);
  };
  same_body(identical);
  if (!identical.empty()) return identical[std::min(pick_identical(), identical.size() - 1)];
  same_body(eligible);
  const Entry* best = nullptr;
  size_t best_length = 0;
  for (const Entry* e : eligible) {
    // No candidate can do better than its shorter query: skip the work when it cannot win.
    const std::string e_query = query_of(e);
    if (best && std::min(e_query.size(), in_query.size()) <= best_length) continue;
    const size_t length = longest_common_substring(e_query, in_query);
    if (!best || length > best_length) {
      best = e;
      best_length = length;
    }
  }
  return best;
}
}  // namespace

void ReplayIndex::build_lookup_tables() {
  for (uint32_t i = 0; i < entries_.size(); i++) {
    const Entry& e = entries_[i];
    by_key_[index_key(e.https, e.host, e.method, e.path)].push_back(i);
    by_host_[e.host].push_back(i);
    by_path_[e.path].push_back(i);
  }
}

ReplayMatch ReplayIndex::match(const ReplayRequest& request, const ReplayOptions& options) {
  ReplayMatch m = match_recorded(request, options);
  if (!m.found && options.close_unmatched) {
    m.close = true;
    m.log_line += " [no response: --unmatched=close]";
  }
  return m;
}

ReplayMatch ReplayIndex::match_recorded(const ReplayRequest& request, const ReplayOptions& options) {
  const IncomingRequest in = normalize_request(request);
  std::vector<const Entry*> candidates;
  if (in.has_host) {
    const auto it = by_key_.find(index_key(in.https, in.host, in.method, in.path));
    if (it != by_key_.end()) {
      candidates.reserve(it->second.size());
      for (uint32_t i : it->second) candidates.push_back(&entries_[i]);
    }
  }
  const Entry* chosen = choose(candidates, in, options, [&]() -> size_t {
    if (!options.repeats_in_order) return 0;
    std::lock_guard lock(counters_->mutex);
    return counters_->served[counter_key(in, options)]++;
  });
  // A Range, or a request without one that only recorded ranges can answer (choose() prefers
  // anything else): the responses recorded for the same request, with their bodies (a rare path:
  // one read each).
  if (chosen && (request.range || is_partial(chosen))) {
    std::vector<const Entry*> same;
    for (const Entry* e : candidates) {
      if (e->target == chosen->target && user_agent_matches(*e, in, options)) same.push_back(e);
    }
    std::vector<ReplayResponse> responses;
    responses.reserve(same.size() + 1);  // pointers into it stay valid
    std::vector<RangeCandidate> recorded;
    const ReplayResponse* full = nullptr;
    for (const Entry* e : same) {
      responses.push_back(response_of(*e));
      recorded.push_back({&responses.back(), e->range});
      if (e == chosen) full = &responses.back();
    }
    if (!full) full = &responses.emplace_back(response_of(*chosen));
    const std::string description = describe_request(in.https, in.host, in.method, in.target);
    if (!request.range) return answer_without_range(in.method, description, recorded);
    const RangeRequest range{in.method, *request.range, request.if_range, description};
    if (auto answer = answer_range(range, *full, recorded)) return std::move(*answer);
  }
  if (chosen) return ReplayMatch{true, response_of(*chosen), {}};

  auto entries_of = [&](const auto& map, const std::string& key) {
    std::vector<const Entry*> list;
    const auto it = map.find(key);
    if (it != map.end()) {
      for (uint32_t i : it->second) list.push_back(&entries_[i]);
    }
    return list;
  };
  return explain_miss(in, options, in.has_host ? entries_of(by_host_, in.host) : std::vector<const Entry*>{},
                      entries_of(by_path_, in.path));
}
