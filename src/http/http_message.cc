// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/http_message.hh"

std::optional<std::string_view> HttpMessage::header(std::string_view key) const {
  for (const HttpHeader& h : headers) {
    if (equals_ignoring_case(h.key, key)) return std::string_view(h.value);
  }
  return std::nullopt;
}

std::string HttpMessage::serialize() const {
  std::string out = first_line + "\r\n";
  for (const HttpHeader& h : headers) out += h.key + ": " + h.value + "\r\n";
  out += "\r\n";
  out += body;
  return out;
}
