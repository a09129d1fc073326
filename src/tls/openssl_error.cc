// SPDX-License-Identifier: GPL-3.0-or-later
// OpenSSL's error queue as text (see openssl_error.hh).
#include "tls/openssl_error.hh"

#include <openssl/err.h>

#include <string_view>

std::string openssl_error_reasons() {
  std::string reasons;
  while (const unsigned long code = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(code, line, sizeof line);
    // "error:0A000086:SSL routines::certificate verify failed" -> the reason only
    const std::string_view text(line);
    const size_t colon = text.rfind(':');
    if (!reasons.empty()) reasons += "; ";
    reasons += colon == std::string_view::npos ? text : text.substr(colon + 1);
  }
  return reasons;
}

std::runtime_error openssl_failure(const std::string& what) {
  const std::string reasons = openssl_error_reasons();
  return std::runtime_error("OpenSSL: " + what + (reasons.empty() ? "" : ": " + reasons));
}
