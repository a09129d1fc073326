// SPDX-License-Identifier: GPL-3.0-or-later
#include "cumulus/bulk_cache.hh"

#include <cctype>

#include "http/host_header.hh"
#include "http/start_line.hh"
#include "util/text.hh"

bool response_closes_connection(const HttpMessage& response, std::string_view method) {
  for (const HttpHeader& h : response.headers) {
    if (equals_ignoring_case(h.key, "Connection") && ascii_lowercase(h.value).find("close") != std::string::npos)
      return true;
  }
  const StatusLine status = split_status_line(response.first_line);
  const std::string_view code = status.code;
  if (method == "HEAD" || code.starts_with("1") || code == "204" || code == "304") return false;
  if (response.header("Content-Length")) return false;
  if (const auto te = response.header("Transfer-Encoding");
      te && ascii_lowercase(*te).find("chunked") != std::string::npos)
    return false;
  return true;  // the body runs to the end of the connection
}

std::optional<RedirectTarget> redirect_target(std::string_view location, bool https, std::string_view host,
                                              std::string_view request_target) {
  location = trim_blanks(location);
  if (location.empty()) return std::nullopt;
  if (starts_with_ignoring_case(location, "http://") || starts_with_ignoring_case(location, "https://")) {
    const bool to_https = starts_with_ignoring_case(location, "https://");
    const std::string_view rest = location.substr(to_https ? 8 : 7);
    const size_t end = rest.find_first_of("/?#");
    const std::string_view authority = rest.substr(0, end);
    if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
    std::string target = end == std::string_view::npos ? "/" : std::string(rest.substr(end));
    if (target.starts_with("?")) target = "/" + target;
    if (const size_t hash = target.find('#'); hash != std::string::npos) target.resize(hash);
    return RedirectTarget{to_https, std::string(authority), target};
  }
  // Another scheme (ftp:, data:, javascript:): not a navigation this proxy sees.
  const size_t colon = location.find(':');
  if (colon != std::string_view::npos && colon > 0 && std::isalpha(static_cast<unsigned char>(location[0])) &&
      location.substr(0, colon).find_first_of("/?#") == std::string_view::npos)
    return std::nullopt;
  if (location.starts_with("//")) {  // scheme-relative
    return redirect_target(std::string(https ? "https:" : "http:") + std::string(location), https, host,
                           request_target);
  }
  std::string target;
  if (location.starts_with("/")) {
    target = std::string(location);
  } else {  // relative to the request's path
    const std::string_view path = request_target.substr(0, request_target.find('?'));
    target = std::string(path.substr(0, path.rfind('/') + 1)) + std::string(location);
  }
  if (const size_t hash = target.find('#'); hash != std::string::npos) target.resize(hash);
  return RedirectTarget{https, std::string(host), target};
}

std::string BulkCache::key(bool https, std::string_view host, std::string_view method, std::string_view target) {
  std::string k = https ? "s\n" : "p\n";
  k += normalize_host(host, https);
  k += '\n';
  k += method;
  k += '\n';
  k += target;
  return k;
}

bool BulkCache::add(RecordedPair&& pair) {
  const RequestLine line = split_request_line(pair.request.first_line);
  if (line.method != "GET" && line.method != "HEAD") return false;
  const std::optional<std::string_view> host = pair.request.header("Host");
  if (!host || host->empty()) return false;
  CachedResponse response;
  response.close_after = response_closes_connection(pair.response, line.method);
  response.bytes = pair.response.serialize();
  if (bytes_ + response.bytes.size() > max_bytes_) {
    refused_bytes_ += response.bytes.size();
    return false;
  }
  bytes_ += response.bytes.size();
  entries_++;
  if (const StatusLine status = split_status_line(pair.response.first_line); status.code.starts_with("3")) {
    if (const auto location = pair.response.header("Location")) {
      if (const auto to = redirect_target(*location, pair.https, *host, line.target))
        redirect_targets_.insert(key(to->https, to->host, "GET", to->target));
    }
  }
  slots_[key(pair.https, *host, line.method, line.target)].responses.push_back(std::move(response));
  return true;
}

std::optional<CachedResponse> BulkCache::take(bool https, std::string_view host, std::string_view method,
                                              std::string_view target) {
  if (method != "GET" && method != "HEAD") return std::nullopt;
  const auto it = slots_.find(key(https, host, method, target));
  if (it == slots_.end() || it->second.responses.empty()) return std::nullopt;
  Slot& slot = it->second;
  const size_t index = std::min(slot.served, slot.responses.size() - 1);
  slot.served++;
  return slot.responses[index];
}

bool BulkCache::redirects_to(bool https, std::string_view host, std::string_view target) const {
  return redirect_targets_.contains(key(https, host, "GET", target));
}

void BulkCache::clear() {
  slots_.clear();
  redirect_targets_.clear();
  bytes_ = refused_bytes_ = 0;
  entries_ = 0;
}
