// The replay matcher: loading and validating a recording into an index, preparing responses for
// serving, choosing among candidates (identical request in recorded order, else the closest
// query), and explaining misses.
#include "replay/replay_index.hh"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "recording/record_file.hh"
#include "util/exception.hh"
#include "util/host_name.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

using Entry = ReplayIndex::Entry;

struct ReplayIndex::Counters {
  std::mutex mutex;
  std::unordered_map<std::string, size_t> served;
};

namespace {
std::optional<uint64_t> parse_decimal(std::string_view s) {
  uint64_t value = 0;
  if (s.empty()) return std::nullopt;
  const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (err != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// Host and port of a Host value: "[v6]:port", "name:port", "name". Port empty if absent.
std::pair<std::string_view, std::string_view> split_host_port(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close != std::string_view::npos) {
      std::string_view rest = host.substr(close + 1);
      if (!rest.empty() && rest.front() == ':') return {host.substr(0, close + 1), rest.substr(1)};
      return {host.substr(0, close + 1), {}};
    }
    return {host, {}};
  }
  const size_t colon = host.rfind(':');
  if (colon == std::string_view::npos || host.find(':') != colon) return {host, {}};  // none, or a bare IPv6
  return {host.substr(0, colon), host.substr(colon + 1)};
}

// The name part of a normalised host (port stripped).
std::string_view host_without_port(std::string_view normalized) { return split_host_port(normalized).first; }

// Sorting key for dotted IPv4 addresses (invalid ones last, by text).
uint64_t ip_order(const std::string& ip) {
  in_addr address;
  if (::inet_pton(AF_INET, ip.c_str(), &address) != 1) return uint64_t{1} << 32;
  return ntohl(address.s_addr);
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

// "HTTP/1.1 200 OK" -> 200, "OK". nullopt if it is not a status line.
std::optional<std::pair<int, std::string>> parse_status_line(std::string_view line) {
  if (!starts_with_ignoring_case(line, "HTTP/")) return std::nullopt;
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(space + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.size() < 3) return std::nullopt;
  for (int i = 0; i < 3; i++) {
    if (rest[static_cast<size_t>(i)] < '0' || rest[static_cast<size_t>(i)] > '9') return std::nullopt;
  }
  if (rest.size() > 3 && rest[3] != ' ') return std::nullopt;
  const int status = (rest[0] - '0') * 100 + (rest[1] - '0') * 10 + (rest[2] - '0');
  if (status < 100 || status > 599) return std::nullopt;
  std::string reason(trim_blanks(rest.substr(3)));
  for (char& c : reason) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';  // would break the CGI status line
  }
  return std::make_pair(status, reason);
}

// A field name as RFC 9110 allows (token characters).
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f) return false;
    if (std::string_view("\"(),/:;<=>?@[\\]{}").find(static_cast<char>(c)) != std::string_view::npos) return false;
  }
  return true;
}

bool value_is_safe(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool body_forbidden(int status) { return status < 200 || status == 204 || status == 304; }

// The recorded response as it must be served (see the header comment of ReplayResponse).
ReplayResponse prepare_response(HttpMessage&& recorded, int status, std::string reason,
                                std::string_view request_method) {
  ReplayResponse out;
  out.status = status;
  out.reason = std::move(reason);

  // Hop-by-hop: the fixed list, plus whatever Connection names.
  std::set<std::string> hop = {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                               "te",         "trailer",    "upgrade"};
  for (const HttpHeader& h : recorded.headers) {
    if (!equals_ignoring_case(h.key, "Connection")) continue;
    std::string_view value = h.value;
    while (!value.empty()) {
      const size_t comma = value.find(',');
      const std::string_view token = trim_blanks(value.substr(0, comma));
      if (!token.empty()) hop.insert(ascii_lowercase(token));
      if (comma == std::string_view::npos) break;
      value.remove_prefix(comma + 1);
    }
  }
  bool had_length = false;
  for (const HttpHeader& h : recorded.headers) {
    if (!is_token(h.key) || !value_is_safe(h.value)) continue;  // cannot be expressed on the CGI interface
    if (hop.count(ascii_lowercase(h.key))) continue;
    if (equals_ignoring_case(h.key, "Content-Length")) {
      if (had_length) continue;  // duplicates: the first one (corrected) is enough
      had_length = true;
    }
    out.headers.push_back(h);
  }

  if (request_method == "HEAD" || body_forbidden(status)) return out;  // no body; recorded Content-Length kept

  out.body = is_chunked(recorded) ? decoded_body(recorded) : std::move(recorded.body);
  const std::string length = std::to_string(out.body.size());
  bool found = false;
  for (HttpHeader& h : out.headers) {
    if (!equals_ignoring_case(h.key, "Content-Length")) continue;
    found = true;
    const auto recorded_length = parse_decimal(trim_blanks(h.value));
    if (!recorded_length || *recorded_length != out.body.size()) h.value = length;
  }
  if (!found) out.headers.push_back({"Content-Length", length});
  return out;
}

// The request side of a recorded pair, checked. nullopt with *why when it cannot be replayed.
std::optional<Entry> request_entry(const fs::path& file, const RecordedPair& pair, std::string* why) {
  Entry e;
  const auto host = pair.request.header("Host");
  if (!host) {
    *why = "the request has no Host header";
    return std::nullopt;
  }
  e.https = pair.https;
  e.host = normalize_host(*host, e.https);
  if (e.host.empty()) {
    *why = "the request has an empty Host header";
    return std::nullopt;
  }
  in_addr address;
  if (pair.ip.empty() || ::inet_pton(AF_INET, pair.ip.c_str(), &address) != 1) {
    *why = "invalid server address \"" + printable(pair.ip, 64) + "\"";
    return std::nullopt;
  }
  if (pair.port == 0) {
    *why = "invalid server port 0";
    return std::nullopt;
  }
  // METHOD SP request-target [SP HTTP-version]
  const std::string_view line = pair.request.first_line;
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0) {
    *why = "the request line \"" + printable(line, 100) + "\" does not parse";
    return std::nullopt;
  }
  std::string_view target = line.substr(space + 1);
  while (!target.empty() && target.front() == ' ') target.remove_prefix(1);
  target = target.substr(0, target.find(' '));
  if (target.empty()) {
    *why = "the request line \"" + printable(line, 100) + "\" has no target";
    return std::nullopt;
  }
  e.method = std::string(line.substr(0, space));
  e.target = origin_form(target);
  split_target(e.target, &e.path, &e.query);
  if (const auto ua = pair.request.header("User-Agent")) {
    e.has_user_agent = true;
    e.user_agent = std::string(*ua);
  }
  e.ip = pair.ip;
  e.port = pair.port;
  e.request_start_us = pair.request_start_us;
  e.file = file.filename().string();
  return e;
}

bool recorded_before(const Entry& a, const Entry& b) {
  return std::tie(a.request_start_us, a.file) < std::tie(b.request_start_us, b.file);
}

// The incoming request, normalised like the recorded ones.
struct Incoming {
  bool https = false;
  bool has_host = false;
  std::string host;
  std::string method, target, path, query;
  bool has_user_agent = false;
  std::string user_agent;
};

Incoming normalize_request(const ReplayRequest& r) {
  Incoming in;
  in.https = r.https;
  in.has_host = r.has_host && !r.host.empty();
  if (in.has_host) in.host = normalize_host(r.host, r.https);
  in.has_host = !in.host.empty();
  in.method = r.method;
  in.target = origin_form(r.target);
  split_target(in.target, &in.path, &in.query);
  in.has_user_agent = r.has_user_agent;
  in.user_agent = r.user_agent;
  return in;
}

bool user_agent_matches(const Entry& e, const Incoming& in, const ReplayOptions& options) {
  if (options.ignore_user_agent) return true;
  if (e.has_user_agent != in.has_user_agent) return false;
  return !e.has_user_agent || e.user_agent == in.user_agent;
}

std::string counter_key(const Incoming& in, const ReplayOptions& options) {
  std::string key = index_key(in.https, in.host, in.method, in.target);
  if (!options.ignore_user_agent) {
    key += '\0';
    key += in.has_user_agent ? '+' : '-';
    key += in.user_agent;
  }
  return key;
}

// Among candidates (same scheme, host, method, path; recorded order), the ones that pass the
// User-Agent rule. Recorded requests identical to this one (same target, so same query): the
// n-th of them, n = pick_identical() = how often it was served before (the last once exhausted).
// Otherwise the longest common substring of the queries wins, the earliest on ties.
template <typename PickIdentical>
const Entry* choose(const std::vector<const Entry*>& candidates, const Incoming& in, const ReplayOptions& options,
                    PickIdentical pick_identical) {
  std::vector<const Entry*> eligible, identical;
  for (const Entry* e : candidates) {
    if (!user_agent_matches(*e, in, options)) continue;
    eligible.push_back(e);
    if (e->target == in.target) identical.push_back(e);
  }
  if (!identical.empty()) return identical[std::min(pick_identical(), identical.size() - 1)];
  const Entry* best = nullptr;
  size_t best_length = 0;
  for (const Entry* e : eligible) {
    // No candidate can do better than its shorter query: skip the work when it cannot win.
    if (best && std::min(e->query.size(), in.query.size()) <= best_length) continue;
    const size_t length = longest_common_substring(e->query, in.query);
    if (!best || length > best_length) {
      best = e;
      best_length = length;
    }
  }
  return best;
}

std::string describe(bool https, std::string_view host, std::string_view method, std::string_view target) {
  return printable(method, 40) + " " + (https ? "https://" : "http://") + printable(host, 200) + printable(target, 400);
}

// The fields in which a recorded request differs from the incoming one.
std::vector<std::string> differences(const Entry& e, const Incoming& in, const ReplayOptions& options) {
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

// The 404 for a request nothing matched: up to three nearest recorded requests (same host
// first, then the same path on other hosts) and what differs. Lists are in recorded order.
ReplayMatch explain_miss(const Incoming& in, const ReplayOptions& options, const std::vector<const Entry*>& same_host,
                         const std::vector<const Entry*>& same_path) {
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

  const std::string request = describe(in.https, in.has_host ? in.host : "(no Host)", in.method, in.target);
  std::vector<std::string> lines;  // "REQUEST (differs in: a, b)", unique
  for (const Near& n : near) {
    if (lines.size() == 3) break;
    std::string fields;
    for (const std::string& f : n.fields) fields += (fields.empty() ? "" : ", ") + f;
    const std::string line =
        describe(n.entry->https, n.entry->host, n.entry->method, n.entry->target) + " (differs in: " + fields + ")";
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }

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

std::string normalize_host(std::string_view host, bool https) {
  auto [name, port] = split_host_port(trim_blanks(host));
  std::string out = ascii_lowercase(name);
  while (!out.empty() && out.back() == '.') out.pop_back();
  if (out.empty()) return out;
  // Leading zeros and the scheme's default port do not make a different host.
  std::string_view digits = port;
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  const auto number = parse_decimal(digits);
  if (port.empty() || (number && *number == (https ? 443u : 80u))) return out;
  return out + ":" + (number ? std::to_string(*number) : ascii_lowercase(port));
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

ReplayIndex::ReplayIndex() : counters_(std::make_unique<Counters>()) {}
ReplayIndex::ReplayIndex(ReplayIndex&&) noexcept = default;
ReplayIndex& ReplayIndex::operator=(ReplayIndex&&) noexcept = default;
ReplayIndex::~ReplayIndex() = default;

ReplayIndex ReplayIndex::load(const fs::path& dir, std::vector<std::string>* warnings) {
  std::vector<std::string> local_warnings;
  std::vector<std::string>& warn = warnings ? *warnings : local_warnings;

  // Origins and names (SNI and protocol are not kept in the entries).
  struct OriginAccumulator {
    size_t tls = 0, clear = 0;
    std::set<std::string> names;
    bool h2 = false;
  };
  std::map<std::pair<std::string, uint16_t>, OriginAccumulator> origins;
  std::map<std::string, std::set<std::string>> names;
  std::set<std::string> bad_names;
  auto add_name = [&](const std::string& name, const std::string& ip, const std::string& file, OriginAccumulator& o) {
    if (name.empty() || is_ip_literal(name)) return;
    if (!is_host_name(name)) {
      if (bad_names.insert(name).second)
        warn.push_back(file + ": \"" + printable(name, 100) + "\" is not a valid host name; it is not resolved by DNS");
      return;
    }
    o.names.insert(name);
    names[name].insert(ip);
  };

  // One file at a time: each pair is turned into its entry (the response ready to serve, its
  // body moved, not copied) before the next file is read.
  ReplayIndex index;
  size_t corrupt = 0, unreplayable = 0;
  scan_recording(  // UserError if DIR is missing or unreadable
      dir,
      [&](const fs::path& path, RecordedPair&& pair) {
        std::string why;
        auto entry = request_entry(path, pair, &why);
        std::optional<std::pair<int, std::string>> status;
        if (entry) {
          status = parse_status_line(pair.response.first_line);
          if (!status)
            why = "the response's status line \"" + printable(pair.response.first_line, 100) + "\" does not parse";
        }
        if (!entry || !status) {
          warn.push_back(path.string() + ": " + why + "; skipped");
          unreplayable++;
          return;
        }
        const std::string file = path.string();
        OriginAccumulator& o = origins[{pair.ip, pair.port}];
        (pair.https ? o.tls : o.clear)++;
        if (pair.protocol == "h2") o.h2 = true;
        add_name(std::string(host_without_port(entry->host)), pair.ip, file, o);
        std::string sni = ascii_lowercase(pair.server_name);
        while (!sni.empty() && sni.back() == '.') sni.pop_back();
        add_name(sni, pair.ip, file, o);
        entry->response =
            prepare_response(std::move(pair.response), status->first, std::move(status->second), entry->method);
        index.entries_.push_back(std::move(*entry));
      },
      [&](std::string warning) {
        warn.push_back(std::move(warning));
        corrupt++;
      });
  if (index.entries_.empty()) {
    const size_t files = corrupt + unreplayable;
    std::string detail = files == 0 ? "the directory has no files"
                                    : std::to_string(files) + (files == 1 ? " file" : " files") + ": " +
                                          std::to_string(corrupt) + " not a recorded pair, " +
                                          std::to_string(unreplayable) + " not replayable; see the warnings";
    throw UserError(dir.string() + " holds no valid recorded pair (" + detail + ")");
  }
  std::stable_sort(index.entries_.begin(), index.entries_.end(), recorded_before);

  for (auto& [where, o] : origins) {
    ReplayOrigin origin;
    origin.ip = where.first;
    origin.port = where.second;
    origin.https = o.tls > 0;
    origin.names.assign(o.names.begin(), o.names.end());
    origin.h2 = o.h2;
    if (o.tls && o.clear) {
      warn.push_back(where.first + ":" + std::to_string(where.second) + " was recorded both over TLS (" +
                     std::to_string(o.tls) + " pairs) and in clear (" + std::to_string(o.clear) +
                     " pairs); it is served over TLS, so the pairs recorded in clear cannot be replayed");
    }
    index.origins_.push_back(std::move(origin));
  }
  std::sort(index.origins_.begin(), index.origins_.end(), [](const ReplayOrigin& a, const ReplayOrigin& b) {
    return std::make_tuple(ip_order(a.ip), a.ip, a.port) < std::make_tuple(ip_order(b.ip), b.ip, b.port);
  });
  for (auto& [name, ips] : names) {
    std::vector<std::string> sorted(ips.begin(), ips.end());
    std::sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
      return std::make_pair(ip_order(a), a) < std::make_pair(ip_order(b), b);
    });
    index.names_[name] = std::move(sorted);
  }

  for (uint32_t i = 0; i < index.entries_.size(); i++) {
    const Entry& e = index.entries_[i];
    index.by_key_[index_key(e.https, e.host, e.method, e.path)].push_back(i);
    index.by_host_[e.host].push_back(i);
    index.by_path_[e.path].push_back(i);
  }
  return index;
}

const std::vector<ReplayOrigin>& ReplayIndex::origins() const { return origins_; }

const std::map<std::string, std::vector<std::string>>& ReplayIndex::names() const { return names_; }

size_t ReplayIndex::pairs() const { return entries_.size(); }

ReplayMatch ReplayIndex::match(const ReplayRequest& request, const ReplayOptions& options) {
  const Incoming in = normalize_request(request);
  std::vector<const Entry*> candidates;
  if (in.has_host) {
    const auto it = by_key_.find(index_key(in.https, in.host, in.method, in.path));
    if (it != by_key_.end()) {
      candidates.reserve(it->second.size());
      for (uint32_t i : it->second) candidates.push_back(&entries_[i]);
    }
  }
  const Entry* chosen = choose(candidates, in, options, [&] {
    std::lock_guard lock(counters_->mutex);
    return counters_->served[counter_key(in, options)]++;
  });
  if (chosen) return ReplayMatch{true, chosen->response, {}};

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
