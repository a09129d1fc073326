// SPDX-License-Identifier: GPL-3.0-or-later
// HAR import: the pairs of a HAR document. Entries written by to_har come back exactly from
// their "_mahimahi" object; entries from browsers (Chromium's DevTools, Firefox) and other
// tools become plain HTTP/1.1 exchanges that replay as the browser saw them: HAR content is
// decoded, so the headers lose their codings and framing. An entry that cannot be replayed is
// skipped with a warning naming it and why.
#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "http/start_line.hh"
#include "recording/har.hh"
#include "recording/har_authority.hh"
#include "util/base64.hh"
#include "util/exception.hh"
#include "util/text.hh"
#include "util/time_text.hh"

using nlohmann::json;

namespace {
// A reason to skip one HAR entry; becomes a warning naming the entry.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string string_member(const json& obj, const char* key, const std::string& where, bool required) {
  const json* value = member(obj, key);
  if (!value) {
    if (required) throw Skip(where + " has no \"" + key + "\"");
    return "";
  }
  if (!value->is_string()) throw Skip(where + "." + key + " is not a string");
  return value->get<std::string>();
}

double number_member(const json& obj, const char* key, double fallback) {
  const json* value = member(obj, key);
  return value && value->is_number() ? value->get<double>() : fallback;
}

uint64_t unsigned_member(const json& obj, const char* key, const std::string& where) {
  const json* value = member(obj, key);
  if (!value) return 0;
  if (!value->is_number_unsigned() && !(value->is_number_integer() && value->get<int64_t>() >= 0))
    throw Skip(where + "." + key + " is not a non-negative integer");
  return value->get<uint64_t>();
}

// Bytes written by put_bytes: "key" or "key_base64".
std::string bytes_member(const json& obj, const std::string& key, const std::string& where, bool required) {
  if (const json* b64 = member(obj, (key + "_base64").c_str())) {
    if (!b64->is_string()) throw Skip(where + "." + key + "_base64 is not a string");
    auto bytes = base64_decode(b64->get<std::string>());
    if (!bytes) throw Skip(where + "." + key + "_base64 is not valid base64");
    return *bytes;
  }
  return string_member(obj, key.c_str(), where, required);
}

std::vector<HttpHeader> har_headers(const json& message, const std::string& where) {
  std::vector<HttpHeader> headers;
  const json* list = member(message, "headers");
  if (!list) return headers;
  if (!list->is_array()) throw Skip(where + ".headers is not an array");
  for (const json& h : *list) {
    headers.push_back(
        {string_member(h, "name", where + ".headers[]", true), string_member(h, "value", where + ".headers[]", false)});
  }
  return headers;
}

std::vector<HttpHeader> raw_headers(const json& list, const std::string& where) {
  if (!list.is_array()) throw Skip(where + " is not an array");
  std::vector<HttpHeader> headers;
  for (const json& h : list) {
    headers.push_back({bytes_member(h, "name", where + "[]", true), bytes_member(h, "value", where + "[]", true)});
  }
  return headers;
}

std::string required_base64(const json& obj, const char* key, const std::string& where) {
  auto bytes = base64_decode(string_member(obj, key, where, true));
  if (!bytes) throw Skip(where + "." + key + " is not valid base64");
  return *bytes;
}

// An entry written by to_har: everything comes back exactly.
RecordedPair exact_pair(const json& entry, const json& m) {
  const std::string where = "_mahimahi";
  if (!m.is_object()) throw Skip("_mahimahi is not an object");
  RecordedPair p;
  p.ip = bytes_member(m, "ip", where, true);
  const uint64_t port = unsigned_member(m, "port", where);
  if (port > 65535) throw Skip("_mahimahi.port " + std::to_string(port) + " is out of range");
  p.port = static_cast<uint16_t>(port);
  const std::string scheme = string_member(m, "scheme", where, true);
  if (scheme != "http" && scheme != "https") throw Skip("_mahimahi.scheme is neither http nor https");
  p.https = scheme == "https";
  p.server_name = bytes_member(m, "server_name", where, false);
  p.protocol = bytes_member(m, "protocol", where, false);
  p.request.first_line = bytes_member(m, "request_first_line", where, true);
  p.response.first_line = bytes_member(m, "response_first_line", where, true);
  const json* request = member(entry, "request");
  const json* response = member(entry, "response");
  if (const json* raw = member(m, "request_headers_raw"))
    p.request.headers = raw_headers(*raw, where + ".request_headers_raw");
  else if (request)
    p.request.headers = har_headers(*request, "request");
  if (const json* raw = member(m, "response_headers_raw"))
    p.response.headers = raw_headers(*raw, where + ".response_headers_raw");
  else if (response)
    p.response.headers = har_headers(*response, "response");
  p.request.body = required_base64(m, "request_body_raw_base64", where);
  p.response.body = required_base64(m, "response_body_raw_base64", where);
  if (const json* t = member(m, "timestamps")) {
    const std::string tw = where + ".timestamps";
    p.request_start_us = unsigned_member(*t, "request_start_us", tw);
    p.request_end_us = unsigned_member(*t, "request_end_us", tw);
    p.response_first_byte_us = unsigned_member(*t, "response_first_byte_us", tw);
    p.response_last_byte_us = unsigned_member(*t, "response_last_byte_us", tw);
  }
  if (const json* t = member(m, "server_timing")) {
    const std::string tw = where + ".server_timing";
    if (member(*t, "rtt_us")) p.server_rtt_us = unsigned_member(*t, "rtt_us", tw);
    if (member(*t, "connect_us")) p.server_connect_us = unsigned_member(*t, "connect_us", tw);
    if (member(*t, "think_us")) p.server_think_us = unsigned_member(*t, "think_us", tw);
    p.server_tls_version = bytes_member(*t, "tls_version", tw, false);
    if (const json* names = member(*t, "certificate_names")) {
      if (!names->is_array()) throw Skip(tw + ".certificate_names is not an array");
      for (const json& n : *names) {
        if (!n.is_string() || !is_certificate_name(n.get<std::string>()))
          throw Skip(tw + ".certificate_names holds something that is not a host name");
        if (p.server_certificate_names.size() < kMaxCertificateNames)
          p.server_certificate_names.push_back(n.get<std::string>());
      }
    }
  }
  return p;
}

// HTTP/2 and HTTP/3 exchanges are recorded as HTTP/1.1: that is what the replay speaks.
std::string http1_version(const std::string& har_version) {
  return equals_ignoring_case(har_version, "HTTP/1.0") ? "HTTP/1.0" : "HTTP/1.1";
}

void remove_headers(std::vector<HttpHeader>& headers, std::initializer_list<std::string_view> names) {
  std::erase_if(headers, [&](const HttpHeader& h) {
    return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return equals_ignoring_case(h.key, n); });
  });
}

// Sets Content-Encoding to `codings` (a to_har "_contentEncoding" mark: content it could not
// decode), or leaves the message without one.
void set_content_encoding(HttpMessage& m, const std::string& codings) {
  remove_headers(m.headers, {"Content-Encoding"});
  if (codings.empty()) return;
  if (codings.find_first_of("\r\n") != std::string::npos) throw Skip("_contentEncoding contains a line break");
  m.headers.push_back({"Content-Encoding", codings});
}

// A HAR cookie's name and value, checked: no line break may reach a header.
std::string cookie_pair(const json& cookie, const std::string& where) {
  const std::string name = string_member(cookie, "name", where, true);
  const std::string value = string_member(cookie, "value", where, false);
  if ((name + value).find_first_of("\r\n;") != std::string::npos) throw Skip(where + " has a ';' or a line break");
  return name + "=" + value;
}

// A Cookie header from request.cookies, for HARs whose headers lost it (sanitized exports).
void add_cookie_header(const json* cookies, HttpMessage& out) {
  if (!cookies || !cookies->is_array() || cookies->empty()) return;
  std::string value;
  for (const json& c : *cookies) value += (value.empty() ? "" : "; ") + cookie_pair(c, "request.cookies[]");
  out.headers.push_back({"Cookie", value});
}

// Set-Cookie headers from response.cookies, for HARs whose headers lost them. Without Expires:
// a session cookie lives as long as the replayed browser, which is what a replay needs.
void add_set_cookie_headers(const json* cookies, HttpMessage& out) {
  if (!cookies || !cookies->is_array()) return;
  for (const json& c : *cookies) {
    const std::string where = "response.cookies[]";
    std::string value = cookie_pair(c, where);
    for (const char* attribute : {"path", "domain", "sameSite"}) {
      const std::string text = string_member(c, attribute, where, false);
      if (text.find_first_of("\r\n;") != std::string::npos) throw Skip(where + " has a ';' or a line break");
      if (!text.empty())
        value += std::string("; ") + static_cast<char>(std::toupper(attribute[0])) + (attribute + 1) + "=" + text;
    }
    if (const json* secure = member(c, "secure"); secure && secure->is_boolean() && secure->get<bool>())
      value += "; Secure";
    if (const json* http_only = member(c, "httpOnly"); http_only && http_only->is_boolean() && http_only->get<bool>())
      value += "; HttpOnly";
    out.headers.push_back({"Set-Cookie", value});
  }
}

struct Url {
  bool https = false;
  std::string authority;  // host[:port], without user info
  std::string host;       // without brackets or port
  uint16_t port = 0;
  std::string path_and_query;
};

Url parse_url(const std::string& url) {
  Url out;
  const size_t sep = url.find("://");
  if (sep == std::string::npos) throw Skip("the URL is not absolute");
  const std::string scheme = ascii_lowercase(url.substr(0, sep));
  if (scheme != "http" && scheme != "https")
    throw Skip("a " + scheme + ": URL (only http and https exchanges can be replayed)");
  out.https = scheme == "https";
  const size_t start = sep + 3;
  const size_t end = url.find_first_of("/?#", start);
  out.authority = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  const size_t at = out.authority.rfind('@');
  if (at != std::string::npos) out.authority.erase(0, at + 1);
  if (out.authority.empty()) throw Skip("the URL has no host");
  std::string port_text;
  if (authority_has_port(out.authority)) {
    const size_t colon = out.authority.rfind(':');
    out.host = out.authority.substr(0, colon);
    port_text = out.authority.substr(colon + 1);
  } else {
    out.host = out.authority;
  }
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  out.port = out.https ? 443 : 80;
  if (!port_text.empty()) {
    if (port_text.size() > 5 ||
        !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoul(port_text) == 0 || std::stoul(port_text) > 65535)
      throw Skip("the URL's port \"" + port_text + "\" is not valid");
    out.port = static_cast<uint16_t>(std::stoul(port_text));
  }
  std::string rest = end == std::string::npos ? "" : url.substr(end);
  rest = rest.substr(0, rest.find('#'));
  out.path_and_query = (rest.empty() || rest[0] != '/') ? "/" + rest : rest;
  return out;
}

// A timing in microseconds; nothing for negative ones (-1: "does not apply"), and at most a day
// (fuzz-har-import: "wait": 3e26 overflowed the conversion; no phase of a request takes a day).
int64_t ms_to_us(double ms) {
  constexpr double kMaxTimingMs = 86'400'000;
  return ms > 0 ? static_cast<int64_t>(std::min(ms, kMaxTimingMs) * 1000.0 + 0.5) : 0;
}

// request.postData's bytes: "text", base64-decoded if its "encoding" says so, or to_har's
// "_text_base64" for binary.
std::string post_data(const json& post) {
  if (const json* b64 = member(post, "_text_base64")) {
    auto bytes = b64->is_string() ? base64_decode(b64->get<std::string>()) : std::nullopt;
    if (!bytes) throw Skip("request.postData._text_base64 is not valid base64");
    return *bytes;
  }
  std::string text = string_member(post, "text", "request.postData", false);
  if (string_member(post, "encoding", "request.postData", false) == "base64") {
    auto bytes = base64_decode(text);
    if (!bytes) throw Skip("request.postData.text is not valid base64");
    return *bytes;
  }
  return text;
}

// "method url httpVersion" as an HTTP/1.1 request line, the headers without HTTP/2's
// pseudo-headers and with a Host, and the body framed with a Content-Length. Returns the URL;
// *method is the request's method.
Url converted_request(const json& request, HttpMessage& out, std::string* method_out) {
  std::string& method = *method_out;
  method = string_member(request, "method", "request", true);
  if (method.empty() || method.find_first_of(" \r\n") != std::string::npos)
    throw Skip("request.method is not a method");
  const Url url = parse_url(string_member(request, "url", "request", true));
  if (url.path_and_query.find_first_of(" \r\n") != std::string::npos) throw Skip("the URL contains spaces");
  out.first_line =
      method + " " + url.path_and_query + " " + http1_version(string_member(request, "httpVersion", "request", false));

  std::string authority = url.authority;
  for (HttpHeader& h : har_headers(request, "request")) {
    if (!h.key.empty() && h.key[0] == ':') {  // HTTP/2 pseudo-header
      if (h.key == ":authority" && !h.value.empty()) authority = h.value;
      continue;
    }
    out.headers.push_back(std::move(h));
  }
  if (!out.header("Host")) out.headers.insert(out.headers.begin(), {"Host", authority});
  if (!out.header("Cookie")) add_cookie_header(member(request, "cookies"), out);
  // The body is the content as the HAR holds it (decoded, unless to_har could not decode it):
  // the headers say so, and a Content-Length frames it.
  remove_headers(out.headers, {"Transfer-Encoding", "Content-Length"});
  if (const json* post = member(request, "postData")) {
    out.body = post_data(*post);
    set_content_encoding(out, string_member(*post, "_contentEncoding", "request.postData", false));
  }
  if (!out.body.empty() || method == "POST" || method == "PUT" || method == "PATCH")
    out.headers.push_back({"Content-Length", std::to_string(out.body.size())});
  return url;
}

// serverIPAddress as an IPv4 address (brackets tolerated); nullopt when it is missing or not
// IPv4 (browsers leave it out for cached entries, and give IPv6 on dual-stack networks).
std::optional<std::string> ipv4_server_address(const json& entry) {
  const json* value = member(entry, "serverIPAddress");
  if (!value || !value->is_string()) return std::nullopt;
  std::string address = value->get<std::string>();
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
    address = address.substr(1, address.size() - 2);
  in_addr ipv4;
  if (::inet_pton(AF_INET, address.c_str(), &ipv4) != 1) return std::nullopt;
  return address;
}

// The replay serves IPv4 only. An entry without an IPv4 serverIPAddress takes the one another
// entry of its host has; a host with none at all gets a stand-in address of its own from
// 198.18.0.0/15 (RFC 2544's benchmarking block, which no recorded server uses), one per host,
// so that its name still resolves in the replay.
class ServerAddresses {
 public:
  ServerAddresses(const json& entries, std::vector<std::string>* notes) : notes_(notes) {
    for (const json& entry : entries) {
      const std::optional<std::string> address = ipv4_server_address(entry);
      const std::optional<std::string> host = entry_host(entry);
      if (!address) continue;
      used_.insert(*address);
      if (host) by_host_.emplace(*host, *address);
    }
  }

  std::string address_of(const json& entry, const std::string& host) {
    if (auto address = ipv4_server_address(entry)) return *address;
    const std::string key = ascii_lowercase(host);
    if (auto known = by_host_.find(key); known != by_host_.end()) return known->second;
    std::string stand_in;
    do {
      if (next_stand_in_ >= (2u << 16)) throw Skip("no IPv4 serverIPAddress, and no stand-in address is left");
      stand_in = "198." + std::to_string(18 + (next_stand_in_ >> 16)) + "." +
                 std::to_string((next_stand_in_ >> 8) & 0xff) + "." + std::to_string(next_stand_in_ & 0xff);
      next_stand_in_++;
    } while (stand_in.ends_with(".0") || stand_in.ends_with(".255") || used_.count(stand_in));
    by_host_.emplace(key, stand_in);
    if (notes_)
      notes_->push_back("no IPv4 server address for " + host + " in the HAR (IPv6 or none given): replayed at " +
                        stand_in + ", a stand-in address");
    return stand_in;
  }

 private:
  static std::optional<std::string> entry_host(const json& entry) {
    try {
      const json* request = member(entry, "request");
      if (!request) return std::nullopt;
      return ascii_lowercase(parse_url(string_member(*request, "url", "request", true)).host);
    } catch (const std::exception&) {  // the entry's own conversion says what is wrong with it
      return std::nullopt;
    }
  }

  std::vector<std::string>* notes_;
  std::map<std::string, std::string> by_host_;
  std::set<std::string> used_;
  uint32_t next_stand_in_ = 1;
};

// response.status, which must be a real HTTP status (0 is a failed, blocked or canceled
// request; Chromium says why in "_error").
int response_status(const json& response) {
  const json* status_json = member(response, "status");
  if (!status_json || !status_json->is_number()) throw Skip("response.status is missing");
  const double status_number = status_json->get<double>();
  if (status_number == 0) {
    const json* error = member(response, "_error");
    const std::string why = error && error->is_string() ? ": " + error->get<std::string>() : "";
    throw Skip("status 0 (the request failed, was blocked or canceled" + why + "): nothing to replay");
  }
  if (status_number < 100 || status_number > 599 || status_number != static_cast<int>(status_number))
    throw Skip("response.status " + status_json->dump() + " is not an HTTP status");
  if (status_number == 101) throw Skip("status 101 (a protocol switch such as a WebSocket cannot be replayed)");
  return static_cast<int>(status_number);
}

// response.content.text, decoded from base64 if the HAR says so; nullopt if the HAR has no text.
std::optional<std::string> response_content(const json& content) {
  const json* text = member(content, "text");
  if (!text) return std::nullopt;
  if (!text->is_string()) throw Skip("response.content.text is not a string");
  std::string body = text->get<std::string>();
  const std::string encoding = string_member(content, "encoding", "response.content", false);
  if (equals_ignoring_case(encoding, "base64")) {
    auto bytes = base64_decode(body);
    if (!bytes) throw Skip("response.content.text is not valid base64");
    return *bytes;
  }
  if (!encoding.empty()) throw Skip("response.content.encoding \"" + encoding + "\" is unknown");
  return body;
}

// The response body: the content, or empty where the status or method has none or a redirect
// left it out. A body the HAR does not hold cannot be made up: Skip.
std::string response_body(const json& content, int status, const std::string& method) {
  std::optional<std::string> text = response_content(content);
  if (status < 200 || status == 204 || status == 304 || method == "HEAD") return "";
  if (text) return *text;
  if ((status >= 300 && status < 400) || number_member(content, "size", -1) == 0) return "";
  throw Skip("the response body is not in the HAR (no content.text; export the HAR with content)");
}

// The response as HTTP/1.1 with the decoded content framed by a Content-Length. Returns the
// protocol ("http/1.1" or "http/1.0").
std::string converted_response(const json& response, int status, const json& content, const std::string& method,
                               HttpMessage& out, bool* revived) {
  const std::string version = http1_version(string_member(response, "httpVersion", "response", false));
  std::string status_text = string_member(response, "statusText", "response", false);
  if (status == 304) {
    // The browser revalidated its cached copy; a replayed client has no such copy and needs
    // the whole response. Browsers put the cached content in the HAR: serve it as a 200.
    const std::optional<std::string> cached = response_content(content);
    if (!cached || cached->empty())
      throw Skip("304 Not Modified without the content (the browser's cached copy is not in the HAR)");
    status = 200;
    status_text = "OK";
    *revived = true;
  }
  if (status_text.empty()) status_text = standard_reason_phrase(status);  // HTTP/2 has no reason phrase
  if (status_text.find_first_of("\r\n") != std::string::npos) throw Skip("response.statusText contains a line break");
  out.first_line = version + " " + std::to_string(status) + " " + status_text;
  for (HttpHeader& h : har_headers(response, "response")) {
    if (!h.key.empty() && h.key[0] == ':') continue;
    out.headers.push_back(std::move(h));
  }
  const std::string redirect = string_member(response, "redirectURL", "response", false);
  if (status >= 300 && status < 400 && !redirect.empty() && !out.header("Location")) {
    if (redirect.find_first_of("\r\n") != std::string::npos) throw Skip("response.redirectURL contains a line break");
    out.headers.push_back({"Location", redirect});
  }
  if (!out.header("Set-Cookie")) add_set_cookie_headers(member(response, "cookies"), out);
  // HAR content is decoded (decompressed, de-chunked): the headers must no longer claim
  // otherwise, or a client would decompress a plain body. (to_har marks content it could not
  // decode with the codings it still has.)
  remove_headers(out.headers, {"Content-Encoding", "Transfer-Encoding", "Content-Length"});
  out.body = response_body(content, status, method);
  if (!out.body.empty()) {
    set_content_encoding(out, string_member(content, "_contentEncoding", "response.content", false));
    const std::string mime_type = string_member(content, "mimeType", "response.content", false);
    if (!out.header("Content-Type") && !mime_type.empty() && mime_type != "x-unknown" &&
        mime_type.find_first_of("\r\n") == std::string::npos)
      out.headers.push_back({"Content-Type", mime_type});
  }
  const bool bodiless = status < 200 || status == 204 || status == 304 || method == "HEAD";
  if (!bodiless) out.headers.push_back({"Content-Length", std::to_string(out.body.size())});
  return ascii_lowercase(version);
}

// Timestamps from startedDateTime and the timings, when the HAR has them.
void set_timestamps(const json& entry, RecordedPair& p) {
  const auto started = us_from_iso8601(string_member(entry, "startedDateTime", "entry", false));
  if (!started || *started == 0) return;
  const json* timings = member(entry, "timings");
  if (!timings) {
    p.request_start_us = *started;
    return;
  }
  // startedDateTime includes queueing, DNS and connection set-up (ssl is inside connect).
  int64_t t = static_cast<int64_t>(*started);
  t += ms_to_us(number_member(*timings, "blocked", 0)) + ms_to_us(number_member(*timings, "dns", 0)) +
       ms_to_us(number_member(*timings, "connect", 0));
  p.request_start_us = static_cast<uint64_t>(t);
  t += ms_to_us(number_member(*timings, "send", 0));
  p.request_end_us = static_cast<uint64_t>(t);
  t += ms_to_us(number_member(*timings, "wait", 0));
  p.response_first_byte_us = static_cast<uint64_t>(t);
  t += ms_to_us(number_member(*timings, "receive", 0));
  p.response_last_byte_us = static_cast<uint64_t>(t);
  // A new connection's TCP handshake (connect includes ssl): the browser's round trip to the
  // server, as mm-record measures it on its own connections (derive_server_timing does the rest).
  const double connect = number_member(*timings, "connect", -1), ssl = number_member(*timings, "ssl", -1);
  if (connect > 0 && connect - std::max(ssl, 0.0) > 0) {
    p.server_connect_us = static_cast<uint64_t>(ms_to_us(connect - std::max(ssl, 0.0)));
    p.server_rtt_us = p.server_connect_us;
  }
}

// A browser's HAR times a connection's handshake only on its first request: every converted pair
// of an origin gets the origin's smallest handshake as its round trip, and a think time of what
// it waited for the first byte beyond one round trip (mm-record's own definition).
void derive_server_timing(std::vector<RecordedPair>& pairs, const std::vector<bool>& converted) {
  std::map<std::pair<std::string, uint16_t>, uint64_t> rtt;
  for (size_t i = 0; i < pairs.size(); i++) {
    if (!converted[i] || !pairs[i].server_rtt_us) continue;
    auto [it, added] = rtt.try_emplace({pairs[i].ip, pairs[i].port}, *pairs[i].server_rtt_us);
    if (!added) it->second = std::min(it->second, *pairs[i].server_rtt_us);
  }
  for (size_t i = 0; i < pairs.size(); i++) {
    RecordedPair& p = pairs[i];
    const auto it = rtt.find({p.ip, p.port});
    if (!converted[i] || it == rtt.end() || !p.request_end_us || p.response_first_byte_us < p.request_end_us) continue;
    p.server_rtt_us = it->second;
    const uint64_t wait = p.response_first_byte_us - p.request_end_us;
    p.server_think_us = wait > it->second ? wait - it->second : 0;
  }
}

// An entry from a browser or another tool: made into a plain HTTP/1.1 exchange. *revived: a
// 304 became a 200 with the cached content.
RecordedPair converted_pair(const json& entry, ServerAddresses& addresses, bool* revived) {
  const json* request = member(entry, "request");
  if (!request || !request->is_object()) throw Skip("no request");
  const json* response = member(entry, "response");
  if (!response || !response->is_object()) throw Skip("no response");

  RecordedPair p;
  std::string method;
  const Url url = converted_request(*request, p.request, &method);
  p.port = url.port;
  p.https = url.https;
  if (url.https) p.server_name = url.host;

  const int status = response_status(*response);
  const json* content = member(*response, "content");
  if (!content || !content->is_object()) throw Skip("no response content");
  p.protocol = converted_response(*response, status, *content, method, p.response, revived);
  p.ip = addresses.address_of(entry, url.host);
  set_timestamps(entry, p);
  return p;
}

// "entry 3 (https://example.com/x)": how warnings name an entry.
std::string entry_name(const json& entry, size_t index) {
  std::string url;
  if (const json* request = member(entry, "request")) {
    if (const json* u = member(*request, "url"); u && u->is_string()) url = " (" + u->get<std::string>() + ")";
  }
  return "entry " + std::to_string(index) + url;
}
}  // namespace

std::vector<RecordedPair> from_har(const json& har, std::vector<std::string>* warnings, const std::string& source,
                                   std::vector<std::string>* notes) {
  const json* log = member(har, "log");
  if (!log || !log->is_object()) throw UserError(source + " is not a HAR file: no \"log\" object at the top level");
  const json* entries = member(*log, "entries");
  if (!entries || !entries->is_array())
    throw UserError(source + " is not a HAR file: \"log\" has no \"entries\" array");
  ServerAddresses addresses(*entries, notes);
  std::vector<RecordedPair> pairs;
  std::vector<bool> converted;
  size_t index = 0, revived = 0;
  for (const json& entry : *entries) {
    index++;
    try {
      if (!entry.is_object()) throw Skip("not an object");
      const json* mahimahi = member(entry, "_mahimahi");
      bool was_304 = false;
      pairs.push_back(mahimahi ? exact_pair(entry, *mahimahi) : converted_pair(entry, addresses, &was_304));
      converted.push_back(!mahimahi);
      revived += was_304;
    } catch (const std::exception& e) {  // Skip, or a JSON type error in an odd entry
      if (warnings) warnings->push_back(source + ": " + entry_name(entry, index) + ": " + e.what() + "; skipped");
    }
  }
  if (notes && revived > 0)
    notes->push_back(count_of(revived, "304 Not Modified response") +
                     " came with the browser's cached content: recorded as 200 OK with it");
  derive_server_timing(pairs, converted);
  return pairs;
}

json parse_har_text(std::string_view text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond a double (406)
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 3, column 5: ..." -> from "parse error".
    const size_t bracket = what.find("] ");
    if (what.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) what.erase(0, bracket + 2);
    throw UserError(source + " is not valid JSON (a HAR file is JSON): " + what);
  }
}
