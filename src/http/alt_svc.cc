// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/alt_svc.hh"

#include "util/text.hh"

bool alt_svc_advertises_h3(const std::string& value) {
  // Alt-Svc = clear / 1#alt-value; alt-value = protocol-id "=" alt-authority *(OWS ";" parameter)
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    const std::string_view item = trim_blanks(std::string_view(value).substr(start, end - start));
    const std::string_view id = item.substr(0, item.find('='));
    if (equals_ignoring_case(id, "h3") || (id.size() > 3 && equals_ignoring_case(id.substr(0, 3), "h3-"))) return true;
    start = end + 1;
  }
  return false;
}

bool advertises_h3(const std::vector<HttpHeader>& headers) {
  for (const HttpHeader& h : headers) {
    if (equals_ignoring_case(h.key, "Alt-Svc") && alt_svc_advertises_h3(h.value)) return true;
  }
  return false;
}
