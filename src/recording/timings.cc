// SPDX-License-Identifier: GPL-3.0-or-later
// The servers' timing in a recording, per origin (timings.hh).
#include "recording/timings.hh"

#include <algorithm>
#include <cstdio>
#include <map>

#include "util/statistics.hh"
#include "util/text.hh"

std::string recorded_host(const RecordedPair& p) {
  auto host = p.request.header("Host");
  return host ? std::string(*host) : p.ip + ":" + std::to_string(p.port);
}

std::vector<OriginTiming> origin_timings(const std::vector<RecordingEntry>& entries) {
  std::vector<const RecordingEntry*> order;
  for (const RecordingEntry& e : entries) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const RecordingEntry* a, const RecordingEntry* b) {
    return a->pair.request_start_us < b->pair.request_start_us;
  });
  std::vector<OriginTiming> origins;
  std::map<std::pair<std::string, uint16_t>, size_t> index;
  std::vector<std::vector<double>> thinks;
  for (const RecordingEntry* e : order) {
    const RecordedPair& p = e->pair;
    auto [it, added] = index.try_emplace({p.ip, p.port}, origins.size());
    if (added) {
      origins.push_back({p.ip, p.port, p.https, {}, 0, 0, std::nullopt, 0, std::nullopt, std::nullopt});
      thinks.emplace_back();
    }
    OriginTiming& o = origins[it->second];
    const std::string host = printable(recorded_host(p), 200);
    if (std::find(o.names.begin(), o.names.end(), host) == o.names.end()) o.names.push_back(host);
    o.responses++;
    o.bytes += p.response.body.size();
    if (p.server_rtt_us) {
      const double rtt = static_cast<double>(*p.server_rtt_us) / 1000.0;
      o.rtt_ms = o.rtt_ms ? std::min(*o.rtt_ms, rtt) : rtt;
    }
    if (p.server_think_us) thinks[it->second].push_back(static_cast<double>(*p.server_think_us) / 1000.0);
  }
  for (size_t i = 0; i < origins.size(); i++) {
    origins[i].timed = thinks[i].size();
    origins[i].think_median_ms = percentile(thinks[i], 50);
    origins[i].think_p90_ms = percentile(thinks[i], 90);
  }
  return origins;
}

std::string destinations_map(const std::vector<OriginTiming>& origins) {
  std::map<std::string, std::pair<double, std::vector<std::string>>> by_ip;  // smallest RTT, names
  std::vector<std::string> order, missing;
  for (const OriginTiming& o : origins) {
    if (!o.rtt_ms) {
      missing.push_back(o.ip + ":" + std::to_string(o.port));
      continue;
    }
    auto [it, added] = by_ip.try_emplace(o.ip, *o.rtt_ms, std::vector<std::string>{});
    if (added) order.push_back(o.ip);
    it->second.first = std::min(it->second.first, *o.rtt_ms);
    for (const std::string& n : o.names)
      if (std::find(it->second.second.begin(), it->second.second.end(), n) == it->second.second.end())
        it->second.second.push_back(n);
  }
  std::string out =
      "# mm-delay --destinations: each recorded address at half its smallest measured round trip each way\n";
  for (const std::string& ip : order) {
    const auto& [rtt, names] = by_ip[ip];
    char delay[32];
    std::snprintf(delay, sizeof delay, "%.3f", rtt / 2);
    std::string comment;
    for (const std::string& n : names) comment += " " + n;
    char rtt_text[32];
    std::snprintf(rtt_text, sizeof rtt_text, "%.1f", rtt);
    out += ip + " " + delay + "  # RTT " + rtt_text + " ms:" + comment + "\n";
  }
  for (const std::string& m : missing) out += "# " + m + ": no round trip measured (left at the default)\n";
  return out;
}
