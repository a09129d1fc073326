// SPDX-License-Identifier: GPL-3.0-or-later
// The Local Proxy's loop (local_proxy.hh): the listener, the stop and its wait for the bulk, the
// browser's connections accepted (only the shell's command's) and their bookkeeping (epoll
// interest, close, the origins' connect deadlines, what they hold). A connection's phases are in
// local_connection.cc, the bulk connections in local_bulk.cc.
#include "cumulus/local_proxy.hh"

#include <linux/netfilter_ipv4.h>
#include <openssl/ssl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include "cumulus/local_proxy_parts.hh"
#include "tls/openssl_error.hh"
#include "tls/proxy_tls.hh"
#include "util/exception.hh"

using namespace local_proxy;

LocalProxy::LocalProxy(FileDescriptor listener, CertificateAuthority& ca, LocalProxyOptions options)
    : listener_(std::move(listener)),
      stop_(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))),
      ca_(ca),
      options_(std::move(options)),
      hello_context_(SSL_CTX_new(TLS_server_method()), SSL_CTX_free),
      upstream_context_(SSL_CTX_new(TLS_client_method()), SSL_CTX_free),
      cache_(options_.max_cache_bytes) {
  ::signal(SIGPIPE, SIG_IGN);
  rlimit files;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }
  if (!hello_context_ || !upstream_context_) throw openssl_failure("SSL_CTX_new");
  configure_interception_context(hello_context_.get(), &LocalProxy::client_hello, this);
  // The system's CAs, the user's own (which the user's browser trusts already: the replayed
  // origins present its certificates), and any --upstream-ca.
  configure_upstream_context(upstream_context_.get(), options_.verify_upstream, true,
                             {ca_.certificate_path().string(), options_.upstream_ca_file});

  buffer_.resize(kReadSize);
  epoll_.add(listener_.get(), EPOLLIN, kListenerKey);
  epoll_.add(stop_.get(), EPOLLIN, kStopKey);
}

LocalProxy::~LocalProxy() = default;

void LocalProxy::stop() {
  const uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
}

LocalProxyTotals LocalProxy::totals() const { return totals_; }

void LocalProxy::run() {
  open_ready_connection();
  epoll_event events[256];
  // When the shell ends (its command is done) while a bulk response is still coming, the proxy
  // waits for its end, at most stop_wait: the Remote Proxy's load then gets reported (its time
  // and CPU time) although the browser finished first. Its clients are closed at once.
  Nanos stop_deadline = kNever;
  for (;;) {
    Nanos timeout = kNever;
    const Nanos now = monotonic_now();
    if (stopping_ && (!bulk_ || now >= stop_deadline)) {
      if (bulk_) end_bulk(false, "the shell ended before the bulk response did");
      return;
    }
    if (stopping_) timeout = stop_deadline - now;
    if (bulk_) timeout = std::min(timeout, std::max<Nanos>(0, bulk_->last_activity + options_.stall_timeout - now));
    for (const auto& [id, c] : clients_) {
      if (c->upstream_open && !c->upstream_tls_done)
        timeout = std::min(timeout, std::max<Nanos>(0, c->upstream_deadline - now));
    }
    const int n = epoll_.wait(events, 256, timeout);
    for (int i = 0; i < n; i++) {
      const uint64_t key = events[i].data.u64;
      if (key == kStopKey) {
        stopping_ = true;
        stop_deadline = monotonic_now() + std::min<Nanos>(options_.stall_timeout, kStopWait);
        epoll_.remove(stop_.get());
        epoll_.remove(listener_.get());
        for (auto& [id, c] : clients_) close(*c, "");
        if (ready_) epoll_.remove(ready_->fd.get());
        ready_.reset();
        continue;
      }
      if (key == kListenerKey) {
        accept_all();
        continue;
      }
      if (key == kBulkKey) {
        handle_bulk(events[i].events);
        continue;
      }
      if (key == kReadyKey) {
        handle_ready(events[i].events);
        continue;
      }
      const auto it = clients_.find(key >> 1);
      if (it == clients_.end()) continue;
      Client& c = *it->second;
      if (key & kUpstreamBit) {
        handle_upstream(c, events[i].events);
      } else {
        handle_client(c, events[i].events);
      }
      if (!c.dead) update_interest(c);
    }
    check_stall();
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (it->second->dead) {
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void LocalProxy::accept_all() {
  sockaddr_in self{};
  socklen_t self_length = sizeof self;
  (void)::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&self), &self_length);
  for (;;) {
    sockaddr_in peer{};
    socklen_t peer_length = sizeof peer;
    FileDescriptor fd(
        ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_length, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    // Only the shell's command: its connections come from its address, redirected here by the
    // shell's rule. Anyone else in the caller's namespace (another user) reaches the listener
    // only directly, whose original destination is the listener itself (and would loop).
    auto c = std::make_unique<Client>();
    socklen_t length = sizeof c->destination;
    const bool redirected = ::getsockopt(fd.get(), SOL_IP, SO_ORIGINAL_DST, &c->destination, &length) == 0;
    const bool from_command =
        options_.client_address.value == 0 || ntohl(peer.sin_addr.s_addr) == options_.client_address.value;
    const bool to_self = !redirected || (c->destination.sin_addr.s_addr == self.sin_addr.s_addr &&
                                         c->destination.sin_port == self.sin_port);
    if (!from_command || to_self) {
      if (++totals_.refused_connections <= 5)
        options_.say("refused a connection from " + address_text(peer) +
                     (to_self ? " to the proxy itself" : ", which is not the shell's command") +
                     " (the proxy serves only its own shell)");
      TlsStream(std::move(fd)).reset_on_close();  // closed at once, with a reset
      continue;
    }
    if (clients_.size() >= kMaxClients) {
      if (++totals_.refused_connections <= 5)
        options_.say("refused a connection to " + address_text(c->destination) + ": the browser has " +
                     std::to_string(kMaxClients) + " open already");
      TlsStream(std::move(fd)).reset_on_close();  // closed at once, with a reset
      continue;
    }
    const int one = 1;
    (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->id = next_id_++;
    c->client = TlsStream(std::move(fd));
    c->client_interest = EPOLLIN;
    epoll_.add(c->client.fd(), EPOLLIN, c->id << 1);
    clients_.emplace(c->id, std::move(c));
  }
}

void LocalProxy::update_interest(Client& c) {
  uint32_t want = 0;
  if (c.phase == Client::Phase::ClientTls) {
    want = c.client.tls_wants_write() ? EPOLLOUT : EPOLLIN;
  } else {
    const bool room = c.phase == Client::Phase::Tunnel
                          ? c.upstream.pending() <= kHighWater && c.upstream_waiting.size() <= kHighWater
                          : c.queue.size() <= kMaxQueuedRequests;
    if (!c.client_read_closed && room) want |= EPOLLIN;
    if (c.client.pending() > 0 || c.client.tls_wants_write()) want |= EPOLLOUT;
  }
  if (want != c.client_interest) {
    epoll_.modify(c.client.fd(), want, c.id << 1);
    c.client_interest = want;
  }
  if (!c.upstream_open) return;
  uint32_t up = 0;
  if (!c.upstream_connected) {
    up = EPOLLOUT;
  } else if (!c.upstream_tls_done) {
    up = c.upstream.tls_wants_write() ? EPOLLOUT : EPOLLIN;
  } else {
    // Not read while its bytes wait for the browser (bounded memory; the origin feels the pace).
    if (c.client.pending() <= kHighWater) up |= EPOLLIN;
    if (c.upstream.pending() > 0 || c.upstream.tls_wants_write()) up |= EPOLLOUT;
  }
  if (up != c.upstream_interest) {
    epoll_.modify(c.upstream.fd(), up, c.id << 1 | kUpstreamBit);
    c.upstream_interest = up;
  }
}

void LocalProxy::close(Client& c, const std::string& why) {
  if (c.dead) return;
  if (!why.empty()) options_.say(why);
  epoll_.remove(c.client.fd());
  if (c.upstream_open) epoll_.remove(c.upstream.fd());
  c.dead = true;
}

void LocalProxy::check_stall() {
  const Nanos now = monotonic_now();
  if (bulk_ && now - bulk_->last_activity >= options_.stall_timeout) {
    end_bulk(false,
             "the Remote Proxy sent nothing for " + std::to_string(options_.stall_timeout / kNanosPerSec) + " s");
  }
  for (auto& [id, c] : clients_) {
    if (!c->dead && c->upstream_open && !c->upstream_tls_done && now >= c->upstream_deadline) {
      totals_.failed_connections++;
      close(*c, "no connection to " + c->where() + " within " + std::to_string(kConnectTimeout / kNanosPerSec) + " s");
    }
  }
}

size_t LocalProxy::held_total() const {
  size_t total = 0;
  for (const auto& [id, c] : clients_) total += c->unanswered_bytes;
  return total;
}
