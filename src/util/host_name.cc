// SPDX-License-Identifier: GPL-3.0-or-later
#include "util/host_name.hh"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

bool is_host_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool letter_or_digit = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!letter_or_digit && c != '-' && c != '_') return false;
    if (++label > 63) return false;
  }
  return label > 0;
}

bool is_ip_literal(std::string_view name) {
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
    in6_addr v6;
    return ::inet_pton(AF_INET6, std::string(name.substr(1, name.size() - 2)).c_str(), &v6) == 1;
  }
  const std::string text(name);
  in_addr v4;
  in6_addr v6;
  return ::inet_pton(AF_INET, text.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}
