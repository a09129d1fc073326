// SPDX-License-Identifier: GPL-3.0-or-later
// De-chunking stored bodies.
#include "http/chunked.hh"

#include <cstdint>
#include <optional>
#include <string_view>

#include "util/text.hh"

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_chunked(const HttpMessage& message) {
  // The last coding of the last Transfer-Encoding field decides the framing.
  std::optional<std::string_view> last;
  for (const HttpHeader& h : message.headers) {
    if (equals_ignoring_case(h.key, "Transfer-Encoding")) last = h.value;
  }
  if (!last) return false;
  std::string_view value = *last;
  const size_t comma = value.rfind(',');
  if (comma != std::string_view::npos) value.remove_prefix(comma + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return equals_ignoring_case(value, "chunked");
}

std::string decoded_body(const HttpMessage& message) {
  if (!is_chunked(message)) return message.body;
  const std::string_view in = message.body;
  std::string out;
  size_t pos = 0;
  while (pos < in.size()) {
    const size_t eol = in.find('\n', pos);
    if (eol == std::string_view::npos) break;
    // chunk-size [; extensions] CRLF
    uint64_t size = 0;
    size_t digits = 0;
    for (size_t i = pos; i < eol; i++, digits++) {
      const int value = hex_digit_value(in[i]);
      if (value < 0) break;
      if (digits >= 15) return out;  // absurd size: malformed
      size = size * 16 + static_cast<uint64_t>(value);
    }
    if (digits == 0) break;
    pos = eol + 1;
    if (size == 0) break;          // last chunk; the trailers that follow are not content
    if (in.size() - pos < size) {  // truncated: keep what arrived
      out.append(in.substr(pos));
      break;
    }
    out.append(in.substr(pos, size));
    pos += size;
    if (in.substr(pos, 2) == "\r\n")
      pos += 2;
    else if (in.substr(pos, 1) == "\n")
      pos += 1;
    else
      break;
  }
  return out;
}
