// SPDX-License-Identifier: GPL-3.0-or-later
// Start-line splitting: positions of spaces only, no validation.
#include "http/start_line.hh"

#include <tuple>
#include <utility>

namespace {
std::string_view without_leading_spaces(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return text;
}

// The word up to the first space, and what follows that space (empty if there is none).
std::pair<std::string_view, std::string_view> first_word(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return {text, {}};
  return {text.substr(0, space), text.substr(space + 1)};
}
}  // namespace

RequestLine split_request_line(std::string_view line, StartLineSpaces spaces) {
  RequestLine out;
  const size_t first = line.find(' ');
  out.method = line.substr(0, first);
  if (first == std::string_view::npos) return out;
  if (spaces == StartLineSpaces::Runs) {
    std::string_view rest;
    std::tie(out.target, rest) = first_word(without_leading_spaces(line.substr(first + 1)));
    out.version = without_leading_spaces(rest);
    return out;
  }
  const size_t last = line.rfind(' ');
  if (last == first) {  // HTTP/0.9 style: no version
    out.target = line.substr(first + 1);
  } else {
    out.target = line.substr(first + 1, last - first - 1);
    out.version = line.substr(last + 1);
  }
  return out;
}

StatusLine split_status_line(std::string_view line, StartLineSpaces spaces) {
  StatusLine out;
  std::string_view rest;
  std::tie(out.version, rest) = first_word(line);
  if (spaces == StartLineSpaces::Runs) rest = without_leading_spaces(rest);
  std::tie(out.code, out.reason) = first_word(rest);
  return out;
}

std::optional<int> three_digit_status(std::string_view code) {
  if (code.size() != 3) return std::nullopt;
  int value = 0;
  for (char c : code) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

const char* standard_reason_phrase(int status) {
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
