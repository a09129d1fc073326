// SPDX-License-Identifier: GPL-3.0-or-later
// A browser connection of the Local Proxy, phase by phase (local_proxy_parts.hh): the sniff of
// its first byte and its TLS (a certificate for the name it asks, at once), then its requests in
// order: answered from the bulk's cache, waiting for the bulk, or forwarded to their origin over
// a connection of its own; and bytes that are not HTTP/1.x relayed as a tunnel. The loop that
// drives it is in local_proxy.cc.
#include <openssl/ssl.h>
#include <poll.h>

#include <cstring>

#include "cumulus/local_proxy_parts.hh"
#include "http/start_line.hh"
#include "tls/client_hello.hh"
#include "tls/openssl_error.hh"
#include "tls/proxy_tls.hh"
#include "util/text.hh"

using namespace local_proxy;

namespace {
// A browser's navigation to a document: what starts a page load.
bool is_navigation(const HttpMessage& request) {
  const auto dest = request.header("Sec-Fetch-Dest");
  const auto mode = request.header("Sec-Fetch-Mode");
  return dest && mode && equals_ignoring_case(*dest, "document") && equals_ignoring_case(*mode, "navigate");
}
}  // namespace

int LocalProxy::client_hello(SSL* ssl, int* alert, void* arg) {
  auto* proxy = static_cast<LocalProxy*>(arg);
  auto* c = static_cast<Client*>(SSL_get_app_data(ssl));
  c->server_name = client_hello_server_name(ssl);
  char ip[INET_ADDRSTRLEN] = "";
  ::inet_ntop(AF_INET, &c->destination.sin_addr, ip, sizeof ip);
  std::string why;
  const int answer = use_minted_certificate(ssl, proxy->ca_, c->server_name, ip, alert, &why);
  if (answer == SSL_CLIENT_HELLO_ERROR) proxy->options_.say("a certificate for " + c->where() + ": " + why);
  return answer;
}

bool LocalProxy::sniff(Client& c) {
  switch (peek_first_byte(c.client.fd())) {
    case FirstByte::None:
      return false;
    case FirstByte::Closed:
      close(c, "");
      return false;
    case FirstByte::Tls:
      if (!start_client_tls(c.client, hello_context_.get(), &c)) {
        close(c, openssl_failure("SSL_new").what());
        return false;
      }
      c.phase = Client::Phase::ClientTls;
      return true;
    case FirstByte::Http:
      c.phase = Client::Phase::Http;
      return true;
    case FirstByte::Other:
      break;
  }
  // Not HTTP: relayed to its destination as it is.
  c.phase = Client::Phase::Tunnel;
  return open_upstream(c);
}

void LocalProxy::handle_client(Client& c, uint32_t events) {
  (void)events;
  if (c.phase == Client::Phase::Sniffing && !sniff(c)) return;
  if (c.dead) return;
  if (c.phase == Client::Phase::ClientTls) {
    const TlsStream::Handshake state = c.client.handshake();
    if (state == TlsStream::Handshake::Blocked) return;
    if (state != TlsStream::Handshake::Done) {
      const std::string why = c.client.peer_closed() ? "the client closed the connection" : c.client.error();
      close(c, "TLS with the browser for " + c.where() + " failed: " + why +
                   " (does the browser trust your mahimahi CA? mm-ca trust)");
      return;
    }
    c.https = true;
    c.phase = Client::Phase::Http;
  }
  if (!c.client.flush()) {
    close(c, "");
    return;
  }
  if (c.close_when_flushed && c.client.pending() == 0) {
    close(c, "");
    return;
  }
  // Room again for the origin's bytes: read them now (TLS may hold some already, which no
  // epoll event would announce).
  if (c.upstream_open && c.upstream_tls_done && c.client.pending() <= kHighWater &&
      (c.head == Client::Head::Forwarding || c.phase == Client::Phase::Tunnel)) {
    read_upstream(c);
    if (c.dead) return;
  }
  // While the origin's bytes wait for the browser, its connection is not read (and the other way round).
  if (c.phase == Client::Phase::Tunnel && c.upstream_open && c.upstream.pending() > kHighWater) return;
  if (!c.client_read_closed) read_client(c);
}

bool LocalProxy::read_client(Client& c) {
  for (;;) {
    const ssize_t n = c.client.read(buffer_.data(), buffer_.size());
    if (n == TlsStream::kWouldBlock) return true;
    if (n == TlsStream::kFailed) {
      close(c, "");
      return false;
    }
    if (n == 0) {
      c.client_read_closed = true;
      if (c.phase == Client::Phase::Tunnel) {
        if (c.upstream_connected) c.upstream.shut_write();
      } else if (c.queue.empty() && c.client.pending() == 0) {
        close(c, "");
        return false;
      }
      return true;
    }
    const std::string_view data(buffer_.data(), static_cast<size_t>(n));
    if (c.phase == Client::Phase::Tunnel) {
      if (!upstream_ready(c)) {
        c.upstream_waiting.append(data);
      } else if (!c.upstream.send(data)) {
        close(c, "");
        return false;
      }
      if (c.upstream.pending() > kHighWater || c.upstream_waiting.size() > kHighWater) return true;
      continue;
    }
    c.requests.feed(data);
    c.unanswered_bytes += data.size();
    if (c.unanswered_bytes > kMaxHeldRequests || (c.unanswered_bytes > (1u << 20) && held_total() > kMaxHeldTotal)) {
      close(c, "the browser sent " + c.where() + " more than " +
                   std::to_string((c.unanswered_bytes > kMaxHeldRequests ? kMaxHeldRequests : kMaxHeldTotal) >> 20) +
                   " MiB of requests not answered yet" +
                   (c.unanswered_bytes > kMaxHeldRequests ? "" : " over all its connections") +
                   " (mm-cumulus-local holds each request whole before it answers or forwards it): the connection "
                   "is closed");
      return false;
    }
    if (c.requests.state() != HttpParser::State::Http) {
      close(c, "a request from the browser to " + c.where() + " is not HTTP/1.x: " + c.requests.error());
      return false;
    }
    while (c.requests.has_completed()) c.queue.push_back(c.requests.pop_completed().message);
    advance(c);
    if (c.dead) return false;
    if (c.queue.size() > kMaxQueuedRequests) return true;  // a pipelining browser waits, as the socket fills
  }
}

// Answers the requests in order, as far as it can now.
void LocalProxy::advance(Client& c) {
  if (c.queue.empty() && !c.requests.in_message()) c.unanswered_bytes = 0;
  while (!c.dead && c.head == Client::Head::Idle && !c.queue.empty()) {
    if (c.queue.size() == 1 && !c.requests.in_message()) c.unanswered_bytes = 0;
    const HttpMessage& request = c.queue.front();
    const RequestLine line = split_request_line(request.first_line);
    if (line.method == "GET" && (is_navigation(request) || !any_navigation_)) {
      any_navigation_ = true;
      const std::string host(request.header("Host").value_or(""));
      const std::string url = line.target.starts_with("http")
                                  ? std::string(line.target)
                                  : (c.https ? "https://" : "http://") + host + std::string(line.target);
      // A navigation that a redirect of this page load leads to (http:// to https://, to www.)
      // is the same page load: the Remote Proxy's browser followed it too.
      const bool redirected = cache_.redirects_to(c.https, host, line.target);
      if (!redirected && (!bulk_ || bulk_->url != url)) start_bulk(url, request);
    }
    if (answer_from_cache(c)) continue;
    if (bulk_ && (line.method == "GET" || line.method == "HEAD")) {
      c.head = Client::Head::Waiting;
      return;
    }
    if (!forward_head(c)) return;
  }
  if (!c.dead && c.queue.empty() && c.client_read_closed && c.client.pending() == 0) close(c, "");
}

bool LocalProxy::answer_from_cache(Client& c) {
  const HttpMessage& request = c.queue.front();
  const RequestLine line = split_request_line(request.first_line);
  std::optional<CachedResponse> response =
      cache_.take(c.https, request.header("Host").value_or(""), line.method, line.target);
  if (!response) return false;
  c.queue.pop_front();
  c.head = Client::Head::Idle;
  totals_.from_cache++;
  if (!c.client.send(response->bytes)) {
    close(c, "");
    return true;
  }
  if (response->close_after) {
    c.queue.clear();
    c.close_when_flushed = true;
    if (c.client.pending() == 0) close(c, "");
  }
  return true;
}

bool LocalProxy::forward_head(Client& c) {
  c.head = Client::Head::Forwarding;
  totals_.forwarded++;
  const HttpMessage& request = c.queue.front();
  if (options_.verbose) options_.say("forwarding to " + c.where() + ": " + printable(request.first_line, 200));
  if (!c.upstream_open && !open_upstream(c)) return false;
  c.responses->expect_response_to(split_request_line(request.first_line).method);
  const std::string bytes = request.serialize();
  if (!upstream_ready(c)) {
    c.upstream_waiting += bytes;
  } else if (!c.upstream.send(bytes)) {
    close(c, "");
    return false;
  }
  return true;
}

bool LocalProxy::open_upstream(Client& c) {
  FileDescriptor fd = connect_to(c.destination);
  if (!fd.valid()) {
    totals_.failed_connections++;
    close(c, "cannot connect to " + c.where() + ": " + std::strerror(errno));
    return false;
  }
  c.upstream = TlsStream(std::move(fd));
  c.upstream_open = true;
  c.upstream_connected = c.upstream_tls_done = false;
  c.upstream_deadline = monotonic_now() + kConnectTimeout;
  c.responses = std::make_unique<HttpParser>(HttpParser::Direction::Response);
  // The origin's answer is relayed as it comes; only its framing matters here, not its body,
  // which the parser counts without keeping (a large download costs no memory).
  c.responses->set_body_limit(1);
  c.upstream_interest = EPOLLOUT;
  epoll_.add(c.upstream.fd(), EPOLLOUT, c.id << 1 | kUpstreamBit);
  return true;
}

// Connects and shakes hands as far as the socket allows; true once bytes can go to the origin.
bool LocalProxy::upstream_ready(Client& c) {
  if (!c.upstream_open) return false;
  if (!c.upstream_connected) {
    pollfd p{c.upstream.fd(), POLLOUT, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (const int error = connect_error(c.upstream.fd()); error != 0) {
      totals_.failed_connections++;
      close(c, "cannot connect to " + c.where() + ": " + std::strerror(error));
      return false;
    }
    c.upstream_connected = true;
    if (c.https) {
      SSL* ssl = SSL_new(upstream_context_.get());
      if (!ssl) {
        close(c, openssl_failure("SSL_new").what());
        return false;
      }
      c.upstream.start_tls(ssl);
      char ip[INET_ADDRSTRLEN] = "";
      ::inet_ntop(AF_INET, &c.destination.sin_addr, ip, sizeof ip);
      set_upstream_identity(ssl, c.server_name, ip);
      SSL_set_connect_state(ssl);
    } else {
      c.upstream_tls_done = true;
    }
  }
  if (!c.upstream_tls_done) {
    const TlsStream::Handshake state = c.upstream.handshake();
    if (state == TlsStream::Handshake::Blocked) return false;
    if (state != TlsStream::Handshake::Done) {
      totals_.failed_connections++;
      close(c, "TLS with " + c.where() + " failed: " + c.upstream.error());
      return false;
    }
    c.upstream_tls_done = true;
  }
  if (!c.upstream_waiting.empty()) {
    const std::string bytes = std::move(c.upstream_waiting);
    c.upstream_waiting.clear();
    if (!c.upstream.send(bytes)) {
      close(c, "");
      return false;
    }
  }
  return true;
}

void LocalProxy::handle_upstream(Client& c, uint32_t events) {
  (void)events;
  if (!c.upstream_open) return;
  if (!upstream_ready(c)) return;
  if (!c.upstream.flush()) {
    close(c, "");
    return;
  }
  if (c.client.pending() > kHighWater) return;  // the browser reads slowly: so does the origin's socket
  read_upstream(c);
  // The tunnel's browser side may have waited for room here.
  if (!c.dead && c.phase == Client::Phase::Tunnel && !c.client_read_closed && c.upstream.pending() <= kHighWater)
    read_client(c);
}

bool LocalProxy::read_upstream(Client& c) {
  for (;;) {
    const ssize_t n = c.upstream.read(buffer_.data(), buffer_.size());
    if (n == TlsStream::kWouldBlock) return true;
    if (n <= 0) {
      // The origin closed (or failed): a close-delimited response ends here; another in the
      // middle is cut, and so is the browser's connection, as the origin's would have been.
      const bool clean = n == 0 && c.responses && c.responses->finish();
      if (c.phase == Client::Phase::Tunnel) {
        c.close_when_flushed = true;
        if (c.client.pending() == 0) close(c, "");
        return false;
      }
      bool answered = false;
      while (c.responses && c.responses->has_completed()) {
        const HttpParser::Completed done = c.responses->pop_completed();
        if (!done.interim && c.head == Client::Head::Forwarding) answered = true;
      }
      epoll_.remove(c.upstream.fd());
      c.upstream = TlsStream();
      c.upstream_open = c.upstream_connected = c.upstream_tls_done = false;
      c.upstream_interest = 0;
      if (c.head == Client::Head::Forwarding) {
        // Nothing more can follow on the browser's connection: the response's end (or its cut)
        // was the origin's close.
        if (!clean && !answered && options_.verbose) options_.say(c.where() + " closed before its response ended");
        c.queue.clear();
        c.head = Client::Head::Idle;
        c.close_when_flushed = true;
        if (c.client.pending() == 0) close(c, "");
      }
      return false;
    }
    const std::string_view data(buffer_.data(), static_cast<size_t>(n));
    if (c.phase == Client::Phase::Tunnel) {
      if (!c.client.send(data)) {
        close(c, "");
        return false;
      }
      if (c.client.pending() > kHighWater) return true;
      continue;
    }
    if (c.head != Client::Head::Forwarding) {
      close(c, "");  // bytes nobody asked for
      return false;
    }
    c.responses->feed(data);
    if (!c.client.send(data)) {
      close(c, "");
      return false;
    }
    if (c.responses->state() == HttpParser::State::Tunnel) {
      c.phase = Client::Phase::Tunnel;  // 101: the rest goes both ways as it is
      c.queue.clear();
      c.head = Client::Head::Idle;
      return true;
    }
    if (c.responses->state() == HttpParser::State::Error) {
      close(c, "the answer of " + c.where() + " is not HTTP/1.x: " + c.responses->error());
      return false;
    }
    while (c.responses->has_completed()) {
      const HttpParser::Completed done = c.responses->pop_completed();
      if (done.interim) continue;
      const bool closes =
          response_closes_connection(done.message, split_request_line(c.queue.front().first_line).method);
      c.queue.pop_front();
      c.head = Client::Head::Idle;
      if (closes) {
        c.queue.clear();
        c.close_when_flushed = true;
        if (c.client.pending() == 0) close(c, "");
        return false;
      }
      advance(c);
      if (c.dead) return false;
    }
    if (c.client.pending() > kHighWater) return true;
  }
}
