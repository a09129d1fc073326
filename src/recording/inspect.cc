// SPDX-License-Identifier: GPL-3.0-or-later
// mm-recording's views of a recording: the ls table and the show description.
#include "recording/inspect.hh"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>

#include "http/alt_svc.hh"
#include "http/chunked.hh"
#include "http/content_coding.hh"
#include "http/start_line.hh"
#include "util/statistics.hh"
#include "util/text.hh"
#include "util/time_text.hh"
#include "util/utf8.hh"

namespace {
constexpr size_t kShortPath = 60;

// Width on the terminal, counting UTF-8 sequences as one column each.
size_t columns(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string shortened(const std::string& text, size_t width) {
  if (columns(text) <= width) return text;
  std::string out;
  size_t used = 0;
  for (char c : text) {
    const bool starts_character = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_character && ++used > width - 3) break;
    out += c;
  }
  return out + "...";
}

std::string aligned(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); i++) width[i] = std::max(width[i], columns(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); i++) {
      out += row[i];
      if (i + 1 < row.size()) out.append(width[i] - columns(row[i]) + 2, ' ');
    }
    out += "\n";
  }
  return out;
}

std::string offset_ms(uint64_t from, uint64_t to) {
  if (to == 0) return "unknown";
  if (from == 0 || to < from) return utc_text_us(to);
  char text[64];
  std::snprintf(text, sizeof text, "+%.3f ms", static_cast<double>(to - from) / 1000.0);
  return text;
}

bool looks_like_text(std::string_view body) {
  if (!is_valid_utf8(body)) return false;
  return std::none_of(body.begin(), body.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f') || u == 0x7f;
  });
}

// The body as text, or a one-line summary of what it is.
std::string shown_content(const std::string& content, const std::string& what) {
  if (content.empty()) return "<no content" + what + ">\n";
  if (!looks_like_text(content)) return "<" + count_of(content.size(), "byte") + ", binary" + what + ">\n";
  return content.back() == '\n' ? content : content + "\n";
}

std::string describe_message(const char* title, const HttpMessage& m, BodyView view) {
  const std::string dechunked = decoded_body(m);
  const std::vector<std::string> codings = content_codings(m);
  std::string why;
  std::optional<std::string> decoded;
  if (view == BodyView::decoded && !codings.empty()) decoded = decode_content(dechunked, codings, &why);
  std::string out = "---- " + std::string(title);
  if (is_chunked(m)) {
    out += " (body chunked: " + count_of(m.body.size(), "byte") + " stored, " + count_of(dechunked.size(), "byte") +
           " of content";
  } else {
    out += " (body: " + count_of(m.body.size(), "byte");
  }
  if (decoded) out += "; " + std::to_string(decoded->size()) + " decoded from " + coding_list_text(codings);
  out += ") ----\n" + printable(m.first_line) + "\n";
  for (const HttpHeader& h : m.headers) out += printable(h.key) + ": " + printable(h.value) + "\n";
  if (dechunked.empty()) return out;
  out += "\n";
  if (codings.empty()) return out + shown_content(dechunked, "");
  const std::string coding_text = printable(coding_list_text(codings));
  if (decoded) return out + shown_content(*decoded, ", decoded from " + coding_text);
  if (view == BodyView::decoded)
    return out + "<" + count_of(dechunked.size(), "byte") + ", " + coding_text + ", not decoded: " + why + ">\n";
  return out + "<" + count_of(dechunked.size(), "byte") + ", " + coding_text +
         "-compressed; --decode shows it decoded>\n";
}

std::string describe_timestamps(const RecordedPair& p) {
  if (!p.request_start_us && !p.request_end_us && !p.response_first_byte_us && !p.response_last_byte_us)
    return "timestamps    unknown (a recording by the original Mahimahi, or converted without times)\n";
  std::string out;
  out += "request start " + (p.request_start_us ? utc_text_us(p.request_start_us) : std::string("unknown")) + "\n";
  out += "request end   " + offset_ms(p.request_start_us, p.request_end_us) + "\n";
  out += "first byte    " + offset_ms(p.request_start_us, p.response_first_byte_us) + " (of the response)\n";
  out += "last byte     " + offset_ms(p.request_start_us, p.response_last_byte_us) + "\n";
  auto ms = [](const std::optional<uint64_t>& us) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(*us) / 1000.0);
    return std::string(text);
  };
  if (p.server_rtt_us) out += "server RTT    " + ms(p.server_rtt_us) + " (smallest on its connection)\n";
  if (p.server_connect_us) out += "TCP connect   " + ms(p.server_connect_us) + "\n";
  if (p.server_think_us) out += "server think  " + ms(p.server_think_us) + " (first byte - request end - RTT)\n";
  return out;
}
}  // namespace

std::string recording_table(std::vector<RecordingEntry> entries, bool wide) {
  std::stable_sort(entries.begin(), entries.end(), [](const RecordingEntry& a, const RecordingEntry& b) {
    return a.pair.request_start_us < b.pair.request_start_us;
  });
  std::vector<std::vector<std::string>> rows = {{"METHOD", "SCHEME", "HOST", "PATH", "STATUS", "BYTES", "H3", "FILE"}};
  for (const RecordingEntry& e : entries) {
    const RecordedPair& p = e.pair;
    const RequestLine request = split_request_line(p.request.first_line);
    const std::string path = printable(request.target);
    rows.push_back({printable(request.method), p.https ? "https" : "http", printable(recorded_host(p)),
                    wide ? path : shortened(path, kShortPath), printable(split_status_line(p.response.first_line).code),
                    std::to_string(p.response.body.size()), advertises_h3(p.response.headers) ? "h3" : "-",
                    printable(e.file.filename().string())});
  }
  return aligned(rows);
}

std::string describe_pair(const std::filesystem::path& path, const RecordedPair& p, BodyView view) {
  std::string out;
  out += "file          " + printable(path.string()) + "\n";
  out +=
      "server        " + printable(p.ip) + ":" + std::to_string(p.port) + " (" + (p.https ? "https" : "http") + ")\n";
  out += "server name   " + (p.server_name.empty() ? std::string("unknown") : printable(p.server_name)) + "\n";
  out += "protocol      " + (p.protocol.empty() ? std::string("unknown") : printable(p.protocol)) + "\n";
  out += describe_timestamps(p);
  out += "\n";
  if (view == BodyView::raw) {
    out += "---- request, as stored ----\n" + p.request.serialize();
    out += "\n---- response, as stored ----\n" + p.response.serialize();
  } else {
    out += describe_message("request", p.request, view) + "\n" + describe_message("response", p.response, view);
  }
  return out;
}

namespace {
std::string ms_text(const std::optional<double>& ms) {
  if (!ms) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", *ms);
  return text;
}
bool can_lead_to_requests(const RecordedPair& p) {
  const auto type = p.response.header("Content-Type");
  if (!type) return true;  // unknown: it may
  const std::string t = ascii_lowercase(std::string(*type));
  if (t.find("image/") != std::string::npos) return false;  // image/svg+xml too
  for (const char* kind : {"html", "css", "javascript", "ecmascript", "json", "xml", "text/plain"})
    if (t.find(kind) != std::string::npos) return true;
  return false;
}

std::string us_as_ms(const std::optional<uint64_t>& us) {
  return us ? ms_text(static_cast<double>(*us) / 1000.0) : std::string("-");
}
}  // namespace

std::string timings_report(const std::vector<RecordingEntry>& entries) {
  const std::vector<OriginTiming> origins = origin_timings(entries);
  std::vector<std::vector<std::string>> rows = {
      {"ORIGIN", "NAMES", "RESPONSES", "BYTES", "RTT(ms)", "THINK p50", "p90", "TIMED"}};
  size_t untimed = 0;
  for (const OriginTiming& o : origins) {
    std::string names;
    for (const std::string& n : o.names) names += (names.empty() ? "" : ",") + n;
    rows.push_back({o.ip + ":" + std::to_string(o.port) + (o.https ? " https" : " http"), shortened(names, 40),
                    std::to_string(o.responses), std::to_string(o.bytes), ms_text(o.rtt_ms), ms_text(o.think_median_ms),
                    ms_text(o.think_p90_ms), std::to_string(o.timed) + "/" + std::to_string(o.responses)});
    if (o.timed == 0) untimed++;
  }
  std::string out = aligned(rows);
  if (untimed == origins.size()) {
    out +=
        "\nNo server timing in this recording (made by the original Mahimahi, by an older mm-record,\n"
        "or converted from HAR): mm-replay --timing=recorded has nothing to replay.\n";
  }

  // The longest chain: from the response that ended last, back through the response that ended
  // last before each request started, among those that can lead a browser to more requests
  // (documents, style sheets, scripts, data: an image or a font never does).
  std::vector<const RecordedPair*> timed;
  for (const RecordingEntry& e : entries)
    if (e.pair.request_start_us && e.pair.response_last_byte_us) timed.push_back(&e.pair);
  if (timed.empty()) return out;
  uint64_t first = UINT64_MAX;
  for (const RecordedPair* p : timed) first = std::min(first, p->request_start_us);
  const RecordedPair* link = *std::max_element(
      timed.begin(), timed.end(),
      [](const RecordedPair* a, const RecordedPair* b) { return a->response_last_byte_us < b->response_last_byte_us; });
  const uint64_t last = link->response_last_byte_us;
  std::vector<const RecordedPair*> chain;
  while (link && chain.size() < timed.size()) {
    chain.push_back(link);
    const RecordedPair* before = nullptr;
    for (const RecordedPair* p : timed) {
      if (p->response_last_byte_us <= link->request_start_us && can_lead_to_requests(*p) &&
          (!before || p->response_last_byte_us > before->response_last_byte_us))
        before = p;
    }
    link = before;
  }
  std::reverse(chain.begin(), chain.end());
  std::vector<std::vector<std::string>> links = {{"START(ms)", "HOST", "PATH", "WAIT(ms)", "RTT", "THINK", "END(ms)"}};
  double rtt_sum = 0, think_sum = 0;
  for (const RecordedPair* p : chain) {
    const RequestLine request = split_request_line(p->request.first_line);
    const std::optional<uint64_t> wait = p->response_first_byte_us >= p->request_end_us && p->request_end_us
                                             ? std::optional<uint64_t>(p->response_first_byte_us - p->request_end_us)
                                             : std::nullopt;
    links.push_back({ms_text(static_cast<double>(p->request_start_us - first) / 1000.0),
                     printable(recorded_host(*p), 60), shortened(printable(request.target), 40), us_as_ms(wait),
                     us_as_ms(p->server_rtt_us), us_as_ms(p->server_think_us),
                     ms_text(static_cast<double>(p->response_last_byte_us - first) / 1000.0)});
    if (p->server_rtt_us) rtt_sum += static_cast<double>(*p->server_rtt_us) / 1000.0;
    if (p->server_think_us) think_sum += static_cast<double>(*p->server_think_us) / 1000.0;
  }
  out +=
      "\nLongest chain (each request starts after the response before it ended): " + count_of(chain.size(), "level") +
      " in " + ms_text(static_cast<double>(last - first) / 1000.0) + " ms of recorded load; round trips " +
      ms_text(rtt_sum) + " ms, think times " + ms_text(think_sum) + " ms along it\n";
  out += aligned(links);
  return out;
}
