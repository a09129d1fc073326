// SPDX-License-Identifier: GPL-3.0-or-later
// The Local Proxy's connections to the Remote Proxy (local_proxy_parts.hh): the bulk of a page
// load (its request, its frames into the cache, its end, failure or cut) and the connection
// opened ahead for the next page load; the requests that waited for the bulk, released.
#include <cstring>

#include "cumulus/local_proxy_parts.hh"
#include "util/text.hh"

using namespace local_proxy;

void LocalProxy::start_bulk(const std::string& url, const HttpMessage& navigation) {
  if (bulk_) end_bulk(false, "a new page load began");
  cache_.clear();
  totals_.page_loads++;
  // The connection opened ahead if it is still there (its handshake is done: the page load
  // saves a round trip, as a Local Proxy that keeps a connection to its Remote Proxy would).
  std::unique_ptr<Bulk> bulk = std::move(ready_);
  if (bulk) {
    epoll_.remove(bulk->fd.get());
  } else {
    bulk = std::make_unique<Bulk>();
    bulk->fd = connect_to(options_.remote);
  }
  bulk->url = url;
  bulk->started = bulk->last_activity = monotonic_now();
  BulkRequest request;
  request.url = url.substr(0, kMaxBulkUrl);
  request.user_agent = std::string(navigation.header("User-Agent").value_or(""));
  request.accept_language = std::string(navigation.header("Accept-Language").value_or(""));
  request.token = options_.token;
  bulk->request = encode_bulk_request(request, options_.remote_text);
  if (!bulk->fd.valid()) {
    const std::string why = std::strerror(errno);
    bulk_ = std::move(bulk);
    end_bulk(false, "cannot connect to the Remote Proxy at " + options_.remote_text + ": " + why);
    return;
  }
  epoll_.add(bulk->fd.get(), EPOLLOUT, kBulkKey);
  bulk_ = std::move(bulk);
  if (options_.verbose) options_.say("bulk request for " + printable(url, 300) + " to " + options_.remote_text);
}

void LocalProxy::open_ready_connection() {
  if (ready_ || stopping_) return;
  auto ready = std::make_unique<Bulk>();
  ready->fd = connect_to(options_.remote);
  if (!ready->fd.valid()) return;  // the next page load tries again, and says why if it fails
  epoll_.add(ready->fd.get(), EPOLLOUT, kReadyKey);
  ready_ = std::move(ready);
}

// The connection opened ahead: connected (then only its close matters), or gone.
void LocalProxy::handle_ready(uint32_t events) {
  if (!ready_) return;
  if (!ready_->connected && (events & EPOLLOUT) && connect_error(ready_->fd.get()) == 0) {
    ready_->connected = true;
    epoll_.modify(ready_->fd.get(), EPOLLIN | EPOLLRDHUP, kReadyKey);
    return;
  }
  // Refused, reset or closed by the Remote Proxy: dropped; the next page load connects anew.
  epoll_.remove(ready_->fd.get());
  ready_.reset();
}

void LocalProxy::handle_bulk(uint32_t events) {
  if (!bulk_) return;
  Bulk& b = *bulk_;
  if (!b.connected) {
    if (const int error = connect_error(b.fd.get()); error != 0) {
      end_bulk(false, "cannot connect to the Remote Proxy at " + options_.remote_text + ": " + std::strerror(error));
      return;
    }
    if (!(events & (EPOLLOUT | EPOLLIN))) return;
    b.connected = true;
  }
  while (b.request_sent < b.request.size()) {
    const ssize_t n = ::send(b.fd.get(), b.request.data() + b.request_sent, b.request.size() - b.request_sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN) return;
      end_bulk(false, "the connection to the Remote Proxy failed: " + std::string(std::strerror(errno)));
      return;
    }
    b.request_sent += static_cast<size_t>(n);
    if (b.request_sent == b.request.size()) epoll_.modify(b.fd.get(), EPOLLIN, kBulkKey);
  }
  for (;;) {
    const ssize_t n = ::recv(b.fd.get(), buffer_.data(), buffer_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN) return;
      end_bulk(false, "the bulk response was cut: " + std::string(std::strerror(errno)));
      return;
    }
    if (n == 0) {
      end_bulk(false, b.decoder.ended() ? "" : "the Remote Proxy closed the bulk response before its end");
      return;
    }
    b.last_activity = monotonic_now();
    totals_.bulk_bytes += static_cast<uint64_t>(n);
    if (!b.decoder.feed(std::string_view(buffer_.data(), static_cast<size_t>(n)))) {
      end_bulk(false, "the bulk response is not valid: " + b.decoder.error());
      return;
    }
    bulk_frames();
    if (!bulk_) return;
  }
}

void LocalProxy::bulk_frames() {
  bool added = false;
  while (bulk_) {
    std::optional<BulkDecoder::Frame> frame = bulk_->decoder.next();
    if (!frame) break;
    if (frame->kind == BulkFrameKind::Pair) {
      std::string why;
      std::optional<RecordedPair> pair = parse_owned_pair(std::move(frame->payload), &why);
      if (!pair) {
        options_.say("a pair of the bulk response is not a valid record (" + why + "); left out");
        continue;
      }
      bulk_->pairs++;
      totals_.bulk_pairs++;
      if (options_.verbose)
        options_.say("bulk +" + std::to_string((monotonic_now() - bulk_->started) / 1'000'000) +
                     " ms: " + printable(pair->request.first_line, 200) + " (" +
                     printable(pair->request.header("Host").value_or(""), 100) + ", " +
                     std::to_string(pair->response.body.size()) + " bytes)");
      if (cache_.add(std::move(*pair))) added = true;
      continue;
    }
    const auto fields = parse_bulk_end(frame->payload);
    auto field = [&](const char* key) {
      const auto it = fields.find(key);
      return it == fields.end() ? std::string() : it->second;
    };
    const Nanos took = monotonic_now() - bulk_->started;
    std::string line = printable(bulk_->url, 200) + ": bulk response of " + count_of(bulk_->pairs, "object") + ", " +
                       std::to_string(bulk_->decoder.bytes() / 1024) + " KiB in " + std::to_string(took / 1'000'000) +
                       " ms; the Remote Proxy's load " + field("status");
    if (!field("reason").empty()) line += " (" + field("reason") + ")";
    if (!field("load_ms").empty()) line += ", " + field("load_ms") + " ms";
    if (!field("cpu_ms").empty()) line += ", CPU " + field("cpu_ms") + " ms";
    if (cache_.refused_bytes())
      line += "; " + std::to_string(cache_.refused_bytes() >> 10) + " KiB beyond --cache-limit not kept";
    options_.say(line);
    if (added) release_waiting();
    end_bulk(true, "");
    return;
  }
  if (added) release_waiting();
  if (bulk_ && !bulk_->decoder.error().empty())
    end_bulk(false, "the bulk response is not valid: " + bulk_->decoder.error());
}

void LocalProxy::end_bulk(bool ok, const std::string& why) {
  if (!bulk_) return;
  if (!ok) {
    totals_.bulk_failures++;
    if (!why.empty())
      options_.say(printable(bulk_->url, 200) + ": " + why + "; what the page still needs goes to its origins");
  }
  if (bulk_->fd.valid()) epoll_.remove(bulk_->fd.get());
  bulk_.reset();
  release_waiting();
  open_ready_connection();
}

// Requests waiting for the bulk: answered from the cache if it has them now, else (the bulk
// over) forwarded.
void LocalProxy::release_waiting() {
  std::vector<Client*> waiting;
  for (auto& [id, c] : clients_)
    if (!c->dead && c->head == Client::Head::Waiting) waiting.push_back(c.get());
  for (Client* c : waiting) {
    if (c->dead || c->head != Client::Head::Waiting) continue;
    if (answer_from_cache(*c)) {
      advance(*c);
    } else if (!bulk_) {
      if (forward_head(*c)) advance(*c);
    }
    if (!c->dead) update_interest(*c);
  }
}
