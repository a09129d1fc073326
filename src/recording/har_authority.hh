// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one URL detail HAR export and import share: whether "host[:port]" names a port.
#include <string_view>

// True if the authority ends in ":port": a colon after any closing bracket of an IPv6 literal
// ("[::1]" has none, "[::1]:8080" and "example.com:8080" have one).
inline bool authority_has_port(std::string_view authority) {
  const size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) return false;
  const size_t bracket = authority.rfind(']');
  return bracket == std::string_view::npos || colon > bracket;
}
