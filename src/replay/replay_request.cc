// SPDX-License-Identifier: GPL-3.0-or-later
#include "replay/replay_request.hh"

#include <algorithm>

#include "util/text.hh"

uint64_t request_body_hash(std::string_view body) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : body) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

std::string without_query_parameters(std::string_view query, const std::vector<std::string>& names) {
  if (names.empty()) return std::string(query);
  std::string out;
  while (true) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    const std::string_view name = item.substr(0, item.find('='));
    if (!item.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
      if (!out.empty()) out += '&';
      out += item;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

size_t longest_common_substring(std::string_view a, std::string_view b) {
  if (a.size() < b.size()) std::swap(a, b);  // the row follows the shorter one
  if (b.empty()) return 0;
  thread_local std::vector<uint32_t> row;
  row.assign(b.size() + 1, 0);
  size_t best = 0;
  for (size_t i = 0; i < a.size(); i++) {
    uint32_t diagonal = 0;  // row[j] of the previous i
    for (size_t j = 0; j < b.size(); j++) {
      const uint32_t above = row[j + 1];
      row[j + 1] = a[i] == b[j] ? diagonal + 1 : 0;
      if (row[j + 1] > best) best = row[j + 1];
      diagonal = above;
    }
  }
  return best;
}

// "http://host/p?q" -> "/p?q"; origin-form and anything else unchanged.
std::string origin_form(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (!starts_with_ignoring_case(target, scheme)) continue;
    const std::string_view rest = target.substr(scheme.size());
    const size_t pos = rest.find_first_of("/?");
    if (pos == std::string_view::npos) return "/";
    if (rest[pos] == '?') return "/" + std::string(rest.substr(pos));
    return std::string(rest.substr(pos));
  }
  return std::string(target);
}

void split_target(const std::string& target, std::string* path, std::string* query) {
  const size_t mark = target.find('?');
  *path = target.substr(0, mark);
  *query = mark == std::string::npos ? std::string() : target.substr(mark + 1);
}
