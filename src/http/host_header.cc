// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/host_header.hh"

#include "util/text.hh"

std::pair<std::string_view, std::string_view> split_host_port(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close != std::string_view::npos) {
      std::string_view rest = host.substr(close + 1);
      if (!rest.empty() && rest.front() == ':') return {host.substr(0, close + 1), rest.substr(1)};
      return {host.substr(0, close + 1), {}};
    }
    return {host, {}};
  }
  const size_t colon = host.rfind(':');
  if (colon == std::string_view::npos || host.find(':') != colon) return {host, {}};  // none, or a bare IPv6
  return {host.substr(0, colon), host.substr(colon + 1)};
}

std::string normalize_host(std::string_view host, bool https) {
  auto [name, port] = split_host_port(trim_blanks(host));
  std::string out = ascii_lowercase(name);
  while (!out.empty() && out.back() == '.') out.pop_back();
  if (out.empty()) return out;
  // Leading zeros and the scheme's default port do not make a different host.
  std::string_view digits = port;
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  const auto number = decimal_value(digits);
  if (port.empty() || (number && *number == (https ? 443u : 80u))) return out;
  return out + ":" + (number ? std::to_string(*number) : ascii_lowercase(port));
}
