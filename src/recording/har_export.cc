// SPDX-License-Identifier: GPL-3.0-or-later
// HAR export: a recording as a HAR 1.2 document. Standard fields are filled as the spec and
// other tools expect (content decoded: de-chunked and decompressed); the custom "_mahimahi"
// object carries the exact bytes (first lines, raw bodies, non-UTF-8 headers) and our
// timestamps, so a round trip through HAR loses nothing.
#include <algorithm>

#include "http/chunked.hh"
#include "http/content_coding.hh"
#include "http/start_line.hh"
#include "recording/har.hh"
#include "recording/har_authority.hh"
#include "util/base64.hh"
#include "util/text.hh"
#include "util/time_text.hh"
#include "util/utf8.hh"

using nlohmann::json;

namespace {
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

std::string request_url(const RecordedPair& p, const std::string& target) {
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) return target;  // absolute-form
  const std::string scheme = p.https ? "https" : "http";
  std::string host(trim_blanks(header_or(p.request, "Host", "")));
  if (host.empty()) host = p.ip;
  const uint16_t default_port = p.https ? 443 : 80;
  if (!authority_has_port(host) && p.port != 0 && p.port != default_port) host += ":" + std::to_string(p.port);
  return scheme + "://" + host + (target.empty() || target[0] != '/' ? "/" : "") + target;
}

std::string percent_decoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); i++) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_digit_value(text[i + 1]) >= 0 &&
               hex_digit_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit_value(text[i + 1]) * 16 + hex_digit_value(text[i + 2]));
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

// A message's content for HAR, which holds it decoded (de-chunked, decompressed). When the
// content codings cannot be undone (unknown, corrupt, truncated), the bytes stay encoded and
// still_encoded names the codings, so that an import keeps the Content-Encoding that goes with them.
struct HarContent {
  std::string bytes;
  size_t encoded_size = 0;  // after de-chunking, before decompression
  std::vector<std::string> still_encoded;
  std::string why;
};

HarContent har_content_of(const HttpMessage& m) {
  HarContent c;
  const std::string dechunked = decoded_body(m);
  c.encoded_size = dechunked.size();
  const std::vector<std::string> codings = content_codings(m);
  if (auto content = decode_content(dechunked, codings, &c.why)) {
    c.bytes = std::move(*content);
  } else {
    c.bytes = dechunked;
    c.still_encoded = codings;
  }
  return c;
}

json har_request(const RecordedPair& p) {
  const RequestLine rl = split_request_line(p.request.first_line);
  json request = {{"method", display_text(rl.method)},
                  {"url", display_text(request_url(p, std::string(rl.target)))},
                  {"httpVersion", display_text(rl.version)},
                  {"headers", header_list(p.request.headers)},
                  {"queryString", query_string(rl.target)},
                  {"cookies", json::array()},
                  {"headersSize", -1},
                  {"bodySize", p.request.body.size()}};
  if (!p.request.body.empty()) {
    const HarContent body = har_content_of(p.request);
    json post = {{"mimeType", display_text(header_or(p.request, "Content-Type", ""))}};
    // postData has no base64 encoding of its own: binary goes in a custom field.
    if (is_valid_utf8(body.bytes)) {
      post["text"] = body.bytes;
    } else {
      post["text"] = "";
      post["_text_base64"] = base64_encode(body.bytes);
    }
    if (!body.still_encoded.empty()) {
      post["_contentEncoding"] = display_text(coding_list_text(body.still_encoded));
      post["comment"] = "not decoded: " + display_text(body.why);  // it quotes recorded bytes
    }
    request["postData"] = post;
  }
  return request;
}

// HAR 1.2 content: text is the decoded content (base64 with encoding "base64" when it is not
// UTF-8), size its length, compression the bytes the content coding saved.
json har_content(const HttpMessage& response) {
  const HarContent c = har_content_of(response);
  json content = {{"size", c.bytes.size()}, {"mimeType", display_text(header_or(response, "Content-Type", ""))}};
  if (!content_codings(response).empty() && c.still_encoded.empty())
    content["compression"] = static_cast<int64_t>(c.bytes.size()) - static_cast<int64_t>(c.encoded_size);
  if (is_valid_utf8(c.bytes)) {
    content["text"] = c.bytes;
  } else {
    content["text"] = base64_encode(c.bytes);
    content["encoding"] = "base64";
  }
  if (!c.still_encoded.empty()) {
    // Not HAR's promise, but the best there is: the bytes as sent, and which codings remain.
    content["_contentEncoding"] = display_text(coding_list_text(c.still_encoded));
    content["comment"] = "not decoded (" + display_text(c.why) + "): the text is the content still encoded as " +
                         display_text(coding_list_text(c.still_encoded));
  }
  return content;
}

json har_response(const HttpMessage& response) {
  const StatusLine sl = split_status_line(response.first_line);
  return {{"status", three_digit_status(sl.code).value_or(0)},
          {"statusText", display_text(sl.reason)},
          {"httpVersion", display_text(sl.version)},
          {"headers", header_list(response.headers)},
          {"cookies", json::array()},
          {"content", har_content(response)},
          {"redirectURL", display_text(header_or(response, "Location", ""))},
          {"headersSize", -1},
          {"bodySize", response.body.size()}};
}

// Everything from_har needs to give the pair back exactly.
json mahimahi_object(const RecordingEntry& e) {
  const RecordedPair& p = e.pair;
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
  json server = json::object();
  if (p.server_rtt_us) server["rtt_us"] = *p.server_rtt_us;
  if (p.server_connect_us) server["connect_us"] = *p.server_connect_us;
  if (p.server_think_us) server["think_us"] = *p.server_think_us;
  if (!p.server_tls_version.empty()) put_bytes(server, "tls_version", p.server_tls_version);
  if (!p.server_certificate_names.empty()) {
    json names = json::array();
    for (const std::string& n : p.server_certificate_names) names.push_back(display_text(n));
    server["certificate_names"] = names;
  }
  if (!server.empty()) mahimahi["server_timing"] = server;
  mahimahi["file"] = display_text(e.file.filename().string());
  return mahimahi;
}

json har_entry(const RecordingEntry& e) {
  const RecordedPair& p = e.pair;
  const double send = span_ms(p.request_start_us, p.request_end_us);
  const double wait = span_ms(p.request_end_us, p.response_first_byte_us);
  const double receive = span_ms(p.response_first_byte_us, p.response_last_byte_us);
  double time = span_ms(p.request_start_us, p.response_last_byte_us);
  if (time < 0) time = std::max(send, 0.0) + std::max(wait, 0.0) + std::max(receive, 0.0);

  return {{"startedDateTime", iso8601_from_us(p.request_start_us)},
          {"time", time},
          {"request", har_request(p)},
          {"response", har_response(p.response)},
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
          {"_mahimahi", mahimahi_object(e)}};
}
}  // namespace

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
