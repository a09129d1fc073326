// SPDX-License-Identifier: GPL-3.0-or-later
// The replay matcher's loading: a recording's pairs validated into the index's entries, each
// response prepared for serving (its body kept in the body store), the origins and names the
// servers and DNS need. Looking a request up is replay_lookup.cc's.
#include "replay/replay_index.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <tuple>

#include "http/chunked.hh"
#include "http/deterministic_page.hh"
#include "http/start_line.hh"
#include "recording/record_file.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/host_name.hh"
#include "util/private_directory.hh"
#include "util/statistics.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

using Entry = ReplayIndex::Entry;

struct ReplayIndex::BodyStore {
  FileDescriptor fd;
  uint64_t size = 0;

  BodyStore() {
    const std::string dir = temporary_directory().string();
    fd = FileDescriptor(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (!fd.valid()) {
      // A file system without O_TMPFILE: a named file, unlinked at once.
      std::string pattern = dir + "/mm-replay-bodies.XXXXXX";
      fd = FileDescriptor(::mkostemp(pattern.data(), O_CLOEXEC));
      if (fd.valid()) ::unlink(pattern.c_str());
    }
    if (!fd.valid())
      throw UserError("cannot create a temporary file in " + dir +
                      " for the recording's bodies: " + std::strerror(errno) + "; set TMPDIR to a writable directory");
  }

  uint64_t append(const std::string& body) {
    const uint64_t offset = size;
    try {
      write_all(fd.get(), body);
    } catch (const SystemError& e) {
      throw UserError(std::string("cannot keep the recording's bodies in a temporary file: ") + e.what() +
                      "; free space where TMPDIR points (or set TMPDIR elsewhere)");
    }
    size += body.size();
    return offset;
  }

  std::string read(uint64_t offset, uint64_t length) const {
    std::string body(length, '\0');
    size_t done = 0;
    while (done < length) {
      const ssize_t n = ::pread(fd.get(), body.data() + done, length - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw SystemError("reading a recorded body back");
      done += static_cast<size_t>(n);
    }
    return body;
  }
};

namespace {
// The name part of a normalised host (port stripped).
std::string_view host_without_port(std::string_view normalized) { return split_host_port(normalized).first; }

// Sorting key for dotted IPv4 addresses (invalid ones last, by text).
uint64_t ip_order(const std::string& ip) {
  in_addr address;
  if (::inet_pton(AF_INET, ip.c_str(), &address) != 1) return uint64_t{1} << 32;
  return ntohl(address.s_addr);
}

// "HTTP/1.1 200 OK" -> 200, "OK". nullopt if it is not a status line.
std::optional<std::pair<int, std::string>> parse_status_line(std::string_view line) {
  if (!starts_with_ignoring_case(line, "HTTP/")) return std::nullopt;
  const StatusLine parts = split_status_line(line, StartLineSpaces::Runs);
  const std::optional<int> status = three_digit_status(parts.code);
  if (!status || *status < 100 || *status > 599) return std::nullopt;
  std::string reason(trim_blanks(parts.reason));
  for (char& c : reason) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';  // would break the CGI status line
  }
  return std::make_pair(*status, reason);
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
    const auto recorded_length = decimal_value(trim_blanks(h.value));
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
  const RequestLine parts = split_request_line(line, StartLineSpaces::Runs);
  if (parts.method.empty() || parts.method.size() == line.size()) {  // no method, or no space after it
    *why = "the request line \"" + printable(line, 100) + "\" does not parse";
    return std::nullopt;
  }
  const std::string_view target = parts.target;
  if (target.empty()) {
    *why = "the request line \"" + printable(line, 100) + "\" has no target";
    return std::nullopt;
  }
  e.method = std::string(parts.method);
  e.target = origin_form(target);
  split_target(e.target, &e.path, &e.query);
  if (const auto ua = pair.request.header("User-Agent")) {
    e.has_user_agent = true;
    e.user_agent = std::string(*ua);
  }
  if (const auto range = pair.request.header("Range")) e.range = std::string(*range);
  if (!pair.request.body.empty()) {
    const std::string body = decoded_body(pair.request);
    if (!body.empty()) e.request_body = std::make_pair(request_body_hash(body), body.size());
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

// Origins (ip:port: TLS or clear, host names, HTTP/2) and DNS names of the valid pairs, collected
// as they are loaded. Pairs carry what the entries do not keep: SNI and protocol.
class OriginCollector {
 public:
  explicit OriginCollector(std::vector<std::string>& warnings) : warn_(warnings) {}

  void add(const RecordedPair& pair, const Entry& entry, const std::string& file) {
    Origin& o = origins_[{pair.ip, pair.port}];
    (pair.https ? o.tls : o.clear)++;
    if (pair.protocol == "h2") o.h2 = true;
    if (pair.server_rtt_us) o.rtt_us = std::min(o.rtt_us.value_or(UINT64_MAX), *pair.server_rtt_us);
    if (pair.https) (pair.server_tls_version == "TLSv1.2" ? o.tls12 : o.not_tls12)++;
    add_name(std::string(host_without_port(entry.host)), pair.ip, file, o);
    std::string sni = ascii_lowercase(pair.server_name);
    while (!sni.empty() && sni.back() == '.') sni.pop_back();
    add_name(sni, pair.ip, file, o);
    if (pair.https && !sni.empty() && !pair.server_certificate_names.empty() && !o.certificate_of.count(sni)) {
      std::vector<std::string> names;
      for (const std::string& n : pair.server_certificate_names) names.push_back(ascii_lowercase(n));
      o.certificate_of[sni] = std::move(names);
    }
  }

  // By address, then port; warns about an origin recorded both over TLS and in clear.
  std::vector<ReplayOrigin> origins() {
    std::vector<ReplayOrigin> list;
    for (auto& [where, o] : origins_) {
      ReplayOrigin origin;
      origin.ip = where.first;
      origin.port = where.second;
      origin.https = o.tls > 0;
      origin.names.assign(o.names.begin(), o.names.end());
      origin.h2 = o.h2;
      origin.rtt_us = o.rtt_us;
      if (origin.https) origin.certificates = certificates_of(o);
      if (o.tls12 > 0 && o.not_tls12 == 0) origin.tls_max = "TLSv1.2";
      if (o.tls && o.clear) {
        warn_.push_back(where.first + ":" + std::to_string(where.second) + " was recorded both over TLS (" +
                        count_of(o.tls, "pair") + ") and in clear (" + count_of(o.clear, "pair") +
                        "); it is served over TLS, so the pairs recorded in clear cannot be replayed");
      }
      list.push_back(std::move(origin));
    }
    std::sort(list.begin(), list.end(), [](const ReplayOrigin& a, const ReplayOrigin& b) {
      return std::make_tuple(ip_order(a.ip), a.ip, a.port) < std::make_tuple(ip_order(b.ip), b.ip, b.port);
    });
    return list;
  }

  // Host name -> its addresses, sorted.
  std::map<std::string, std::vector<std::string>> names() const {
    std::map<std::string, std::vector<std::string>> sorted_names;
    for (const auto& [name, ips] : names_) {
      std::vector<std::string> sorted(ips.begin(), ips.end());
      std::sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
        return std::make_pair(ip_order(a), a) < std::make_pair(ip_order(b), b);
      });
      sorted_names[name] = std::move(sorted);
    }
    return sorted_names;
  }

 private:
  struct Origin {
    size_t tls = 0, clear = 0;
    std::set<std::string> names;
    bool h2 = false;
    std::optional<uint64_t> rtt_us;
    std::map<std::string, std::vector<std::string>> certificate_of;  // SNI -> its certificate's names
    size_t tls12 = 0, not_tls12 = 0;                                 // pairs whose server chose TLS 1.2, and the others
  };

  // Whether a certificate name covers a host: the same name, or a wildcard for one label.
  static bool covers(const std::string& pattern, const std::string& host) {
    if (pattern == host) return true;
    if (pattern.size() > 2 && pattern.compare(0, 2, "*.") == 0) {
      const size_t dot = host.find('.');
      return dot != std::string::npos && dot > 0 && host.compare(dot + 1, std::string::npos, pattern, 2) == 0;
    }
    return false;
  }

  // The origin's certificates: per recorded SNI name, the hosts of this origin its certificate
  // covered; names whose certificates cover the same hosts share one. Names with no recorded
  // certificate share one naming just them. None at all: empty (one certificate for all).
  static std::vector<ReplayCertificate> certificates_of(const Origin& o) {
    if (o.certificate_of.empty()) return {};
    std::map<std::vector<std::string>, std::vector<std::string>> by_cover;  // covered hosts -> SNI names
    std::vector<std::string> unknown;
    for (const std::string& name : o.names) {
      auto it = o.certificate_of.find(name);
      if (it == o.certificate_of.end()) {
        unknown.push_back(name);
        continue;
      }
      std::vector<std::string> covered;
      for (const std::string& host : o.names) {
        if (host == name ||
            std::any_of(it->second.begin(), it->second.end(), [&](const std::string& p) { return covers(p, host); }))
          covered.push_back(host);
      }
      by_cover[covered].push_back(name);
    }
    std::vector<ReplayCertificate> certificates;
    for (auto& [covered, server_names] : by_cover) certificates.push_back({server_names, covered});
    if (!unknown.empty()) certificates.push_back({unknown, unknown});
    return certificates;
  }

  void add_name(const std::string& name, const std::string& ip, const std::string& file, Origin& o) {
    if (name.empty() || is_ip_literal(name)) return;
    if (!is_host_name(name)) {
      if (bad_names_.insert(name).second)
        warn_.push_back(file + ": \"" + printable(name, 100) +
                        "\" is not a valid host name; it is not resolved by DNS");
      return;
    }
    o.names.insert(name);
    names_[name].insert(ip);
  }

  std::vector<std::string>& warn_;
  std::map<std::pair<std::string, uint16_t>, Origin> origins_;
  std::map<std::string, std::set<std::string>> names_;
  std::set<std::string> bad_names_;
};

// The error for a directory without a single replayable pair.
UserError no_valid_pair(const fs::path& dir, size_t corrupt, size_t unreplayable) {
  const size_t files = corrupt + unreplayable;
  std::string detail = files == 0
                           ? "the directory has no files"
                           : count_of(files, "file") + ": " + std::to_string(corrupt) + " not a recorded pair, " +
                                 std::to_string(unreplayable) + " not replayable; see the warnings";
  return UserError(dir.string() + " holds no valid recorded pair (" + detail + ")");
}
}  // namespace

ReplayIndex::ReplayIndex() : counters_(std::make_unique<Counters>()), bodies_(std::make_unique<BodyStore>()) {}

std::string ReplayIndex::think_time_summary() const {
  std::vector<double> thinks;
  for (const Entry& e : entries_)
    if (e.response.think_us > 0) thinks.push_back(static_cast<double>(e.response.think_us) / 1000.0);
  if (thinks.empty()) return "none recorded: mm-record measures them; older recordings have none";
  char text[96];
  std::snprintf(text, sizeof text, ", median %.1f ms, p90 %.1f ms", *percentile(thinks, 50), *percentile(thinks, 90));
  return std::to_string(thinks.size()) + " of " + count_of(entries_.size(), "response") + " wait" + text;
}

ReplayResponse ReplayIndex::response_of(const Entry& entry) const {
  ReplayResponse response = entry.response;
  response.body = bodies_->read(entry.body_offset, entry.body_size);
  return response;
}
ReplayIndex::ReplayIndex(ReplayIndex&&) noexcept = default;
ReplayIndex& ReplayIndex::operator=(ReplayIndex&&) noexcept = default;
ReplayIndex::~ReplayIndex() = default;

ReplayIndex ReplayIndex::load(const fs::path& dir, std::vector<std::string>* warnings, bool deterministic) {
  std::vector<std::string> local_warnings;
  std::vector<std::string>& warn = warnings ? *warnings : local_warnings;

  // One file at a time: each pair is turned into its entry (the response ready to serve, its
  // body moved, not copied) before the next file is read.
  ReplayIndex index;
  OriginCollector origins(warn);
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
        origins.add(pair, *entry, path.string());
        entry->response =
            prepare_response(std::move(pair.response), status->first, std::move(status->second), entry->method);
        entry->response.think_us = std::min(pair.server_think_us.value_or(0), kMaxThinkUs);
        // A partial page (206) is a piece of one: the script would go into the wrong bytes.
        if (deterministic && entry->method != "HEAD" && entry->response.status != 206) {
          const uint64_t start_ms = pair.request_start_us ? pair.request_start_us / 1000 : kUnrecordedPageTimeMs;
          if (!add_deterministic_script(entry->response.headers, entry->response.body, start_ms, &why) && !why.empty())
            warn.push_back(path.string() + ": served as recorded, without the deterministic script: " + why);
        }
        entry->body_size = entry->response.body.size();
        entry->body_offset = index.bodies_->append(entry->response.body);
        std::string().swap(entry->response.body);  // its memory freed (assigning an empty string keeps it)
        index.entries_.push_back(std::move(*entry));
      },
      [&](std::string warning) {
        warn.push_back(std::move(warning));
        corrupt++;
      });
  if (index.entries_.empty()) throw no_valid_pair(dir, corrupt, unreplayable);
  std::stable_sort(index.entries_.begin(), index.entries_.end(), recorded_before);
  index.origins_ = origins.origins();
  index.names_ = origins.names();
  index.build_lookup_tables();
  return index;
}

const std::vector<ReplayOrigin>& ReplayIndex::origins() const { return origins_; }

const std::map<std::string, std::vector<std::string>>& ReplayIndex::names() const { return names_; }

size_t ReplayIndex::pairs() const { return entries_.size(); }
