// HAR import: the pairs of a HAR document. Entries written by to_har come back exactly from
// their "_mahimahi" object; entries from browsers and other tools become plain HTTP/1.1
// exchanges. An entry that cannot be replayed is skipped with a warning naming it and why.
#include <arpa/inet.h>

#include <algorithm>

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
  return p;
}

// HTTP/2 and HTTP/3 exchanges are recorded as HTTP/1.1: that is what the replay speaks.
std::string http1_version(const std::string& har_version) {
  return equals_ignoring_case(har_version, "HTTP/1.0") ? "HTTP/1.0" : "HTTP/1.1";
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 203:
      return "Non-Authoritative Information";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 410:
      return "Gone";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

void remove_headers(std::vector<HttpHeader>& headers, std::initializer_list<std::string_view> names) {
  std::erase_if(headers, [&](const HttpHeader& h) {
    return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return equals_ignoring_case(h.key, n); });
  });
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

int64_t ms_to_us(double ms) { return ms > 0 ? static_cast<int64_t>(ms * 1000.0 + 0.5) : 0; }

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
  if (const json* post = member(request, "postData")) out.body = post_data(*post);
  // The body is the content as the HAR holds it: frame it with a Content-Length.
  remove_headers(out.headers, {"Transfer-Encoding", "Content-Length"});
  if (!out.body.empty() || method == "POST" || method == "PUT" || method == "PATCH")
    out.headers.push_back({"Content-Length", std::to_string(out.body.size())});
  return url;
}

// serverIPAddress, which must be IPv4 (brackets tolerated): the replay serves IPv4 only.
std::string server_address(const json& entry) {
  std::string address = string_member(entry, "serverIPAddress", "entry", false);
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
    address = address.substr(1, address.size() - 2);
  in_addr ipv4;
  if (address.empty()) throw Skip("no serverIPAddress (the replay needs the server's IPv4 address)");
  if (::inet_pton(AF_INET, address.c_str(), &ipv4) != 1)
    throw Skip("serverIPAddress " + address + " is not an IPv4 address (the replay serves IPv4 only)");
  return address;
}

// response.status, which must be a real HTTP status (0 is a failed or blocked request).
int response_status(const json& response) {
  const json* status_json = member(response, "status");
  if (!status_json || !status_json->is_number()) throw Skip("response.status is missing");
  const double status_number = status_json->get<double>();
  if (status_number == 0) throw Skip("status 0 (the request failed or was blocked: nothing to replay)");
  if (status_number < 100 || status_number > 599 || status_number != static_cast<int>(status_number))
    throw Skip("response.status " + status_json->dump() + " is not an HTTP status");
  return static_cast<int>(status_number);
}

// response.content.text, decoded from base64 if the HAR says so.
std::string response_content(const json& content) {
  const json* text = member(content, "text");
  if (!text) {
    if (number_member(content, "size", -1) != 0) throw Skip("the response body is not in the HAR (no content.text)");
    return "";
  }
  if (!text->is_string()) throw Skip("response.content.text is not a string");
  std::string body = text->get<std::string>();
  const std::string encoding = string_member(content, "encoding", "response.content", false);
  if (encoding == "base64") {
    auto bytes = base64_decode(body);
    if (!bytes) throw Skip("response.content.text is not valid base64");
    return *bytes;
  }
  if (!encoding.empty()) throw Skip("response.content.encoding \"" + encoding + "\" is unknown");
  return body;
}

// The response as HTTP/1.1 with the decoded content framed by a Content-Length. Returns the
// protocol ("http/1.1" or "http/1.0").
std::string converted_response(const json& response, int status, const json& content, const std::string& method,
                               HttpMessage& out) {
  const std::string version = http1_version(string_member(response, "httpVersion", "response", false));
  std::string status_text = string_member(response, "statusText", "response", false);
  if (status_text.empty()) status_text = reason_phrase(status);  // HTTP/2 has no reason phrase
  if (status_text.find_first_of("\r\n") != std::string::npos) throw Skip("response.statusText contains a line break");
  out.first_line = version + " " + std::to_string(status) + " " + status_text;
  for (HttpHeader& h : har_headers(response, "response")) {
    if (!h.key.empty() && h.key[0] == ':') continue;
    out.headers.push_back(std::move(h));
  }
  // HAR content is decoded (decompressed, de-chunked): the headers must no longer claim otherwise.
  remove_headers(out.headers, {"Content-Encoding", "Transfer-Encoding", "Content-Length"});

  const bool bodiless = status < 200 || status == 204 || status == 304 || method == "HEAD";
  if (!bodiless) {
    out.body = response_content(content);
    out.headers.push_back({"Content-Length", std::to_string(out.body.size())});
  }
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
}

// An entry from a browser or another tool: made into a plain HTTP/1.1 exchange.
RecordedPair converted_pair(const json& entry) {
  const json* request = member(entry, "request");
  if (!request || !request->is_object()) throw Skip("no request");
  const json* response = member(entry, "response");
  if (!response || !response->is_object()) throw Skip("no response");

  RecordedPair p;
  std::string method;
  const Url url = converted_request(*request, p.request, &method);
  p.ip = server_address(entry);
  p.port = url.port;
  p.https = url.https;
  if (url.https) p.server_name = url.host;

  const int status = response_status(*response);
  const json* content = member(*response, "content");
  if (!content || !content->is_object()) throw Skip("no response content");
  p.protocol = converted_response(*response, status, *content, method, p.response);
  set_timestamps(entry, p);
  return p;
}
}  // namespace

std::vector<RecordedPair> from_har(const json& har, std::vector<std::string>* warnings, const std::string& source) {
  const json* log = member(har, "log");
  if (!log || !log->is_object()) throw UserError(source + " is not a HAR file: no \"log\" object at the top level");
  const json* entries = member(*log, "entries");
  if (!entries || !entries->is_array())
    throw UserError(source + " is not a HAR file: \"log\" has no \"entries\" array");
  std::vector<RecordedPair> pairs;
  size_t index = 0;
  for (const json& entry : *entries) {
    index++;
    try {
      if (!entry.is_object()) throw Skip("not an object");
      const json* mahimahi = member(entry, "_mahimahi");
      pairs.push_back(mahimahi ? exact_pair(entry, *mahimahi) : converted_pair(entry));
    } catch (const std::exception& e) {  // Skip, or a JSON type error in an odd entry
      if (warnings) {
        std::string url;
        if (const json* request = member(entry, "request")) {
          if (const json* u = member(*request, "url"); u && u->is_string()) url = " (" + u->get<std::string>() + ")";
        }
        warnings->push_back(source + ": entry " + std::to_string(index) + url + ": " + e.what() + "; skipped");
      }
    }
  }
  return pairs;
}

json parse_har_text(std::string_view text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 3, column 5: ..." -> from "parse error".
    const size_t bracket = what.find("] ");
    if (what.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) what.erase(0, bracket + 2);
    throw UserError(source + " is not valid JSON (a HAR file is JSON): " + what);
  }
}
