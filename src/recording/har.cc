// HAR 1.2 conversion both ways. Standard fields are filled for other tools' sake; the custom
// "_mahimahi" object carries the exact bytes (first lines, raw bodies, non-UTF-8 headers) and
// our timestamps, so a round trip through HAR loses nothing.
#include "recording/har.hh"

#include <arpa/inet.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "util/exception.hh"
#include "util/text.hh"

using nlohmann::json;

namespace {
constexpr size_t kBase64Chunk = 3 << 20;  // input bytes per EVP_EncodeBlock call (a multiple of 3; fits an int)

// A reason to skip one HAR entry; becomes a warning naming the entry.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bytes as JSON text: as-is when valid UTF-8, otherwise each byte as the code point of the same
// value (how browsers show header bytes), so that dump() never meets invalid UTF-8.
std::string display_text(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string out;
  for (unsigned char c : bytes) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// obj[key] = bytes when valid UTF-8, else obj[key + "_base64"] = base64(bytes).
void put_bytes(json& obj, const std::string& key, std::string_view bytes) {
  if (is_valid_utf8(bytes))
    obj[key] = std::string(bytes);
  else
    obj[key + "_base64"] = base64_encode(bytes);
}

std::string header_or(const HttpMessage& m, std::string_view key, std::string_view fallback) {
  auto value = m.header(key);
  return std::string(value ? *value : fallback);
}

json header_list(const std::vector<HttpHeader>& headers) {
  json list = json::array();
  for (const HttpHeader& h : headers) list.push_back({{"name", display_text(h.key)}, {"value", display_text(h.value)}});
  return list;
}

bool headers_are_utf8(const std::vector<HttpHeader>& headers) {
  return std::all_of(headers.begin(), headers.end(),
                     [](const HttpHeader& h) { return is_valid_utf8(h.key) && is_valid_utf8(h.value); });
}

json raw_header_list(const std::vector<HttpHeader>& headers) {
  json list = json::array();
  for (const HttpHeader& h : headers)
    list.push_back({{"name_base64", base64_encode(h.key)}, {"value_base64", base64_encode(h.value)}});
  return list;
}

// "GET /x HTTP/1.1" -> {"GET", "/x", "HTTP/1.1"}; the target is what lies between the first and
// the last space.
struct RequestLine {
  std::string method, target, version;
};
RequestLine split_request_line(std::string_view line) {
  RequestLine out;
  const size_t first = line.find(' ');
  if (first == std::string_view::npos) {
    out.method = line;
    return out;
  }
  out.method = line.substr(0, first);
  const size_t last = line.rfind(' ');
  if (last == first) {  // HTTP/0.9 style: no version
    out.target = line.substr(first + 1);
  } else {
    out.target = line.substr(first + 1, last - first - 1);
    out.version = line.substr(last + 1);
  }
  return out;
}

// "HTTP/1.1 200 OK" -> {"HTTP/1.1", 200, "OK"}; status 0 if unreadable.
struct StatusLine {
  std::string version;
  int status = 0;
  std::string text;
};
StatusLine split_status_line(std::string_view line) {
  StatusLine out;
  const size_t first = line.find(' ');
  out.version = line.substr(0, first);
  if (first == std::string_view::npos) return out;
  std::string_view rest = line.substr(first + 1);
  const size_t second = rest.find(' ');
  const std::string_view code = rest.substr(0, second);
  if (code.size() == 3 && std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; }))
    out.status = std::stoi(std::string(code));
  if (second != std::string_view::npos) out.text = rest.substr(second + 1);
  return out;
}

bool has_port(std::string_view host) {
  const size_t colon = host.rfind(':');
  if (colon == std::string_view::npos) return false;
  const size_t bracket = host.rfind(']');
  return bracket == std::string_view::npos || colon > bracket;
}

std::string request_url(const RecordedPair& p, const std::string& target) {
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) return target;  // absolute-form
  const std::string scheme = p.https ? "https" : "http";
  std::string host(trim_blanks(header_or(p.request, "Host", "")));
  if (host.empty()) host = p.ip;
  const uint16_t default_port = p.https ? 443 : 80;
  if (!has_port(host) && p.port != 0 && p.port != default_port) host += ":" + std::to_string(p.port);
  return scheme + "://" + host + (target.empty() || target[0] != '/' ? "/" : "") + target;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); i++) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return display_text(out);
}

json query_string(std::string_view target) {
  json list = json::array();
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return list;
  std::string_view query = target.substr(question + 1);
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      list.push_back({{"name", percent_decoded(part.substr(0, eq))},
                      {"value", eq == std::string_view::npos ? "" : percent_decoded(part.substr(eq + 1))}});
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return list;
}

// Milliseconds from a to b, or -1 when either is unknown or they are out of order.
double span_ms(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0 || b < a) return -1;
  return static_cast<double>(b - a) / 1000.0;
}

json har_entry(const RecordingEntry& e) {
  const RecordedPair& p = e.pair;
  const RequestLine rl = split_request_line(p.request.first_line);
  const StatusLine sl = split_status_line(p.response.first_line);
  const std::string url = display_text(request_url(p, rl.target));

  json request = {{"method", display_text(rl.method)},
                  {"url", url},
                  {"httpVersion", display_text(rl.version)},
                  {"headers", header_list(p.request.headers)},
                  {"queryString", query_string(rl.target)},
                  {"cookies", json::array()},
                  {"headersSize", -1},
                  {"bodySize", p.request.body.size()}};
  if (!p.request.body.empty()) {
    const std::string body = decoded_body(p.request);
    json post = {{"mimeType", display_text(header_or(p.request, "Content-Type", ""))}};
    // postData has no base64 encoding of its own: binary goes in a custom field.
    if (is_valid_utf8(body)) {
      post["text"] = body;
    } else {
      post["text"] = "";
      post["_text_base64"] = base64_encode(body);
    }
    request["postData"] = post;
  }

  const std::string content_text = decoded_body(p.response);
  json content = {{"size", content_text.size()}, {"mimeType", display_text(header_or(p.response, "Content-Type", ""))}};
  if (is_valid_utf8(content_text)) {
    content["text"] = content_text;
  } else {
    content["text"] = base64_encode(content_text);
    content["encoding"] = "base64";
  }
  const std::string coding(trim_blanks(header_or(p.response, "Content-Encoding", "")));
  if (!coding.empty() && !equals_ignoring_case(coding, "identity"))
    content["comment"] = "the text is still encoded (Content-Encoding: " + display_text(coding) + ")";
  json response = {{"status", sl.status},
                   {"statusText", display_text(sl.text)},
                   {"httpVersion", display_text(sl.version)},
                   {"headers", header_list(p.response.headers)},
                   {"cookies", json::array()},
                   {"content", content},
                   {"redirectURL", display_text(header_or(p.response, "Location", ""))},
                   {"headersSize", -1},
                   {"bodySize", p.response.body.size()}};

  const double send = span_ms(p.request_start_us, p.request_end_us);
  const double wait = span_ms(p.request_end_us, p.response_first_byte_us);
  const double receive = span_ms(p.response_first_byte_us, p.response_last_byte_us);
  double time = span_ms(p.request_start_us, p.response_last_byte_us);
  if (time < 0) time = std::max(send, 0.0) + std::max(wait, 0.0) + std::max(receive, 0.0);

  json mahimahi = json::object();
  put_bytes(mahimahi, "ip", p.ip);
  mahimahi["port"] = p.port;
  mahimahi["scheme"] = p.https ? "https" : "http";
  put_bytes(mahimahi, "server_name", p.server_name);
  put_bytes(mahimahi, "protocol", p.protocol);
  put_bytes(mahimahi, "request_first_line", p.request.first_line);
  put_bytes(mahimahi, "response_first_line", p.response.first_line);
  if (!headers_are_utf8(p.request.headers)) mahimahi["request_headers_raw"] = raw_header_list(p.request.headers);
  if (!headers_are_utf8(p.response.headers)) mahimahi["response_headers_raw"] = raw_header_list(p.response.headers);
  mahimahi["request_body_raw_base64"] = base64_encode(p.request.body);
  mahimahi["response_body_raw_base64"] = base64_encode(p.response.body);
  mahimahi["timestamps"] = {{"request_start_us", p.request_start_us},
                            {"request_end_us", p.request_end_us},
                            {"response_first_byte_us", p.response_first_byte_us},
                            {"response_last_byte_us", p.response_last_byte_us}};
  mahimahi["file"] = display_text(e.file.filename().string());

  return {{"startedDateTime", iso8601_from_us(p.request_start_us)},
          {"time", time},
          {"request", request},
          {"response", response},
          {"cache", json::object()},
          {"timings",
           {{"blocked", -1},
            {"dns", -1},
            {"connect", -1},
            {"ssl", -1},
            {"send", send},
            {"wait", wait},
            {"receive", receive}}},
          {"serverIPAddress", display_text(p.ip)},
          {"connection", std::to_string(p.port)},
          {"_mahimahi", mahimahi}};
}

// ---- reading ----

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
  if (has_port(out.authority)) {
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

// An entry from a browser or another tool: made into a plain HTTP/1.1 exchange.
RecordedPair converted_pair(const json& entry) {
  const json* request = member(entry, "request");
  if (!request || !request->is_object()) throw Skip("no request");
  const json* response = member(entry, "response");
  if (!response || !response->is_object()) throw Skip("no response");

  RecordedPair p;
  const std::string method = string_member(*request, "method", "request", true);
  if (method.empty() || method.find_first_of(" \r\n") != std::string::npos)
    throw Skip("request.method is not a method");
  const Url url = parse_url(string_member(*request, "url", "request", true));
  if (url.path_and_query.find_first_of(" \r\n") != std::string::npos) throw Skip("the URL contains spaces");
  p.request.first_line =
      method + " " + url.path_and_query + " " + http1_version(string_member(*request, "httpVersion", "request", false));

  std::string authority = url.authority;
  for (HttpHeader& h : har_headers(*request, "request")) {
    if (!h.key.empty() && h.key[0] == ':') {  // HTTP/2 pseudo-header
      if (h.key == ":authority" && !h.value.empty()) authority = h.value;
      continue;
    }
    p.request.headers.push_back(std::move(h));
  }
  if (!p.request.header("Host")) p.request.headers.insert(p.request.headers.begin(), {"Host", authority});
  if (const json* post = member(*request, "postData")) {
    if (const json* b64 = member(*post, "_text_base64")) {
      auto bytes = b64->is_string() ? base64_decode(b64->get<std::string>()) : std::nullopt;
      if (!bytes) throw Skip("request.postData._text_base64 is not valid base64");
      p.request.body = *bytes;
    } else {
      p.request.body = string_member(*post, "text", "request.postData", false);
      if (string_member(*post, "encoding", "request.postData", false) == "base64") {
        auto bytes = base64_decode(p.request.body);
        if (!bytes) throw Skip("request.postData.text is not valid base64");
        p.request.body = *bytes;
      }
    }
  }
  // The body is the content as the HAR holds it: frame it with a Content-Length.
  remove_headers(p.request.headers, {"Transfer-Encoding", "Content-Length"});
  if (!p.request.body.empty() || method == "POST" || method == "PUT" || method == "PATCH")
    p.request.headers.push_back({"Content-Length", std::to_string(p.request.body.size())});

  std::string address = string_member(entry, "serverIPAddress", "entry", false);
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
    address = address.substr(1, address.size() - 2);
  in_addr ipv4;
  if (address.empty()) throw Skip("no serverIPAddress (the replay needs the server's IPv4 address)");
  if (::inet_pton(AF_INET, address.c_str(), &ipv4) != 1)
    throw Skip("serverIPAddress " + address + " is not an IPv4 address (the replay serves IPv4 only)");
  p.ip = address;
  p.port = url.port;
  p.https = url.https;
  if (url.https) p.server_name = url.host;

  const json* status_json = member(*response, "status");
  if (!status_json || !status_json->is_number()) throw Skip("response.status is missing");
  const double status_number = status_json->get<double>();
  if (status_number == 0) throw Skip("status 0 (the request failed or was blocked: nothing to replay)");
  if (status_number < 100 || status_number > 599 || status_number != static_cast<int>(status_number))
    throw Skip("response.status " + status_json->dump() + " is not an HTTP status");
  const int status = static_cast<int>(status_number);
  const json* content = member(*response, "content");
  if (!content || !content->is_object()) throw Skip("no response content");

  const std::string version = http1_version(string_member(*response, "httpVersion", "response", false));
  p.protocol = ascii_lowercase(version);
  std::string status_text = string_member(*response, "statusText", "response", false);
  if (status_text.empty()) status_text = reason_phrase(status);  // HTTP/2 has no reason phrase
  if (status_text.find_first_of("\r\n") != std::string::npos) throw Skip("response.statusText contains a line break");
  p.response.first_line = version + " " + std::to_string(status) + " " + status_text;
  for (HttpHeader& h : har_headers(*response, "response")) {
    if (!h.key.empty() && h.key[0] == ':') continue;
    p.response.headers.push_back(std::move(h));
  }
  // HAR content is decoded (decompressed, de-chunked): the headers must no longer claim otherwise.
  remove_headers(p.response.headers, {"Content-Encoding", "Transfer-Encoding", "Content-Length"});

  const bool bodiless = status < 200 || status == 204 || status == 304 || method == "HEAD";
  if (!bodiless) {
    const json* text = member(*content, "text");
    if (!text) {
      if (number_member(*content, "size", -1) != 0) throw Skip("the response body is not in the HAR (no content.text)");
    } else {
      if (!text->is_string()) throw Skip("response.content.text is not a string");
      p.response.body = text->get<std::string>();
      const std::string encoding = string_member(*content, "encoding", "response.content", false);
      if (encoding == "base64") {
        auto bytes = base64_decode(p.response.body);
        if (!bytes) throw Skip("response.content.text is not valid base64");
        p.response.body = *bytes;
      } else if (!encoding.empty()) {
        throw Skip("response.content.encoding \"" + encoding + "\" is unknown");
      }
    }
    p.response.headers.push_back({"Content-Length", std::to_string(p.response.body.size())});
  }

  // Timestamps from startedDateTime and the timings, when the HAR has them.
  const auto started = us_from_iso8601(string_member(entry, "startedDateTime", "entry", false));
  if (started && *started > 0) {
    int64_t t = static_cast<int64_t>(*started);
    if (const json* timings = member(entry, "timings")) {
      // startedDateTime includes queueing, DNS and connection set-up (ssl is inside connect).
      t += ms_to_us(number_member(*timings, "blocked", 0)) + ms_to_us(number_member(*timings, "dns", 0)) +
           ms_to_us(number_member(*timings, "connect", 0));
      p.request_start_us = static_cast<uint64_t>(t);
      t += ms_to_us(number_member(*timings, "send", 0));
      p.request_end_us = static_cast<uint64_t>(t);
      t += ms_to_us(number_member(*timings, "wait", 0));
      p.response_first_byte_us = static_cast<uint64_t>(t);
      t += ms_to_us(number_member(*timings, "receive", 0));
      p.response_last_byte_us = static_cast<uint64_t>(t);
    } else {
      p.request_start_us = *started;
    }
  }
  return p;
}
}  // namespace

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t length;
    uint32_t code;
    if ((c & 0xE0) == 0xC0) {
      length = 2;
      code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3;
      code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4;
      code = c & 0x07;
    } else {
      return false;
    }
    if (text.size() - i < length) return false;
    for (size_t k = 1; k < length; k++) {
      const unsigned char d = static_cast<unsigned char>(text[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      code = (code << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
      return false;  // overlong, too big, surrogate
    i += length;
  }
  return true;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::string block;
  for (size_t pos = 0; pos < bytes.size(); pos += kBase64Chunk) {
    const size_t n = std::min(kBase64Chunk, bytes.size() - pos);
    block.resize((n + 2) / 3 * 4 + 1);  // EVP_EncodeBlock adds a NUL
    const int written =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(block.data()),
                        reinterpret_cast<const unsigned char*>(bytes.data() + pos), static_cast<int>(n));
    out.append(block.data(), static_cast<size_t>(written));
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string clean;
  clean.reserve(text.size() + 3);
  size_t padding = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding++;
      continue;
    }
    const bool alphabet =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!alphabet || padding > 0) return std::nullopt;  // a stray character, or data after the padding
    clean += c;
  }
  if (padding > 2 || clean.size() % 4 == 1) return std::nullopt;
  // EVP_DecodeBlock wants whole quads and turns padding into zero bytes: pad, then trim.
  const size_t missing = (4 - clean.size() % 4) % 4;
  clean.append(missing, '=');
  std::string out;
  out.reserve(clean.size() / 4 * 3);
  std::string block;
  const size_t chunk = kBase64Chunk / 3 * 4;
  for (size_t pos = 0; pos < clean.size(); pos += chunk) {
    const size_t n = std::min(chunk, clean.size() - pos);
    block.resize(n / 4 * 3);
    const int decoded =
        EVP_DecodeBlock(reinterpret_cast<unsigned char*>(block.data()),
                        reinterpret_cast<const unsigned char*>(clean.data() + pos), static_cast<int>(n));
    if (decoded < 0) return std::nullopt;
    out.append(block.data(), static_cast<size_t>(decoded));
  }
  out.resize(out.size() - missing);
  return out;
}

std::string iso8601_from_us(uint64_t us) {
  const time_t seconds = static_cast<time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(us % 1000000 / 1000));
  return text;
}

std::optional<uint64_t> us_from_iso8601(std::string_view text) {
  size_t pos = 0;
  auto digits = [&](size_t n) -> std::optional<int> {
    if (text.size() - pos < n) return std::nullopt;
    int value = 0;
    for (size_t i = 0; i < n; i++) {
      const char c = text[pos + i];
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    pos += n;
    return value;
  };
  auto expect = [&](char c) {
    if (pos < text.size() && text[pos] == c) {
      pos++;
      return true;
    }
    return false;
  };
  std::tm tm{};
  auto year = digits(4);
  if (!year || !expect('-')) return std::nullopt;
  auto month = digits(2);
  if (!month || !expect('-')) return std::nullopt;
  auto day = digits(2);
  if (!day || !(expect('T') || expect(' '))) return std::nullopt;
  auto hour = digits(2);
  if (!hour || !expect(':')) return std::nullopt;
  auto minute = digits(2);
  if (!minute || !expect(':')) return std::nullopt;
  auto second = digits(2);
  if (!second) return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60)
    return std::nullopt;
  int64_t fraction_us = 0;
  if (expect('.') || expect(',')) {
    int64_t scale = 100000;
    size_t count = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      fraction_us += (text[pos] - '0') * scale;
      scale /= 10;
      pos++;
      count++;
    }
    if (count == 0) return std::nullopt;
  }
  int64_t offset_s = 0;
  if (expect('Z') || expect('z')) {
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    pos++;
    auto oh = digits(2);
    if (!oh) return std::nullopt;
    expect(':');
    auto om = digits(2);
    if (!om) return std::nullopt;
    offset_s = sign * (*oh * 3600 + *om * 60);
  }
  if (pos != text.size()) return std::nullopt;
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  const int64_t seconds = static_cast<int64_t>(timegm(&tm)) - offset_s;
  if (seconds < 0) return std::nullopt;
  return static_cast<uint64_t>(seconds) * 1000000 + static_cast<uint64_t>(fraction_us);
}

json to_har(const std::vector<RecordingEntry>& entries) {
  std::vector<const RecordingEntry*> order;
  for (const RecordingEntry& e : entries) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const RecordingEntry* a, const RecordingEntry* b) {
    return a->pair.request_start_us < b->pair.request_start_us;
  });
  json list = json::array();
  for (const RecordingEntry* e : order) list.push_back(har_entry(*e));
#ifdef PACKAGE_VERSION
  const char* version = PACKAGE_VERSION;
#else
  const char* version = "0";
#endif
  return {{"log", {{"version", "1.2"}, {"creator", {{"name", "mahimahi"}, {"version", version}}}, {"entries", list}}}};
}

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
