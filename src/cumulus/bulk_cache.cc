// SPDX-License-Identifier: GPL-3.0-or-later
#include "cumulus/bulk_cache.hh"

#include "http/start_line.hh"
#include "replay/replay_index.hh"
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

void BulkCache::clear() {
  slots_.clear();
  bytes_ = refused_bytes_ = 0;
  entries_ = 0;
}
