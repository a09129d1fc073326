// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One HTTP/1.x message as recorded: the first line (no CRLF), the header fields in their order
// with names as sent (values without leading whitespace), and the body exactly as it crossed
// the wire (still chunk-encoded, with its trailers, if it was sent chunked).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/text.hh"  // equals_ignoring_case: HTTP field names are ASCII case-insensitive

struct HttpHeader {
  std::string key;
  std::string value;
};

struct HttpMessage {
  std::string first_line;
  std::vector<HttpHeader> headers;
  std::string body;

  // The value of the first header named `key` (compared case-insensitively), if any.
  std::optional<std::string_view> header(std::string_view key) const;
  // The message as bytes on the wire: first line, headers, blank line, body.
  std::string serialize() const;
};
