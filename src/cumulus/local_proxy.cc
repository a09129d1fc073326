// SPDX-License-Identifier: GPL-3.0-or-later
#include "cumulus/local_proxy.hh"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <deque>

#include "http/http_parser.hh"
#include "http/start_line.hh"
#include "tls/client_hello.hh"
#include "tls/openssl_error.hh"
#include "tls/proxy_tls.hh"
#include "tls/tls_stream.hh"
#include "util/host_name.hh"
#include "util/text.hh"

namespace {
constexpr uint64_t kListenerKey = 0, kStopKey = 1, kBulkKey = 2, kReadyKey = 3;
constexpr uint64_t kUpstreamBit = 1;  // key = id << 1 | 1 for a client's upstream connection
constexpr size_t kReadSize = 64 * 1024;
constexpr size_t kHighWater = 256 * 1024;
constexpr Nanos kConnectTimeout = 10 * kNanosPerSec;
constexpr Nanos kStopWait = 10 * kNanosPerSec;
// What one browser connection may have sent that is not answered yet: requests are held whole.
constexpr size_t kMaxQueuedRequests = 64;
constexpr size_t kMaxHeldRequests = 64u << 20;  // the most the shell's end waits for a bulk response
// The browser's connections at once, and what all of them may hold unanswered.
constexpr size_t kMaxClients = 512;
constexpr size_t kMaxHeldTotal = 256u << 20;

std::string address_text(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// A non-blocking TCP connection on its way to `to`; an invalid descriptor with errno if it failed at once.
FileDescriptor connect_to(const sockaddr_in& to) {
  FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  const int one = 1;
  (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS) {
    const int saved = errno;
    fd = FileDescriptor();
    errno = saved;
  }
  return fd;
}

// The error a non-blocking connect ended with (0: connected).
int connect_error(int fd) {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

// A browser's navigation to a document: what starts a page load.
bool is_navigation(const HttpMessage& request) {
  const auto dest = request.header("Sec-Fetch-Dest");
  const auto mode = request.header("Sec-Fetch-Mode");
  return dest && mode && equals_ignoring_case(*dest, "document") && equals_ignoring_case(*mode, "navigate");
}
}  // namespace

struct LocalProxy::Client {
  enum class Phase { Sniffing, ClientTls, Http, Tunnel };
  enum class Head { Idle, Waiting, Forwarding };
  uint64_t id = 0;
  TlsStream client, upstream;
  uint32_t client_interest = 0, upstream_interest = 0;
  Phase phase = Phase::Sniffing;
  sockaddr_in destination{};
  std::string server_name;  // SNI
  bool https = false;
  HttpParser requests{HttpParser::Direction::Request};
  std::unique_ptr<HttpParser> responses;  // of the current upstream connection
  std::deque<HttpMessage> queue;          // requests not answered yet; the front is being answered
  Head head = Head::Idle;
  bool upstream_open = false, upstream_connected = false, upstream_tls_done = false;
  Nanos upstream_deadline = 0;
  std::string upstream_waiting;  // bytes for the origin, sent once its connection is ready
  bool client_read_closed = false;
  bool close_when_flushed = false;
  size_t unanswered_bytes = 0;  // of the requests in the queue and the one being parsed (bounded)
  bool dead = false;

  std::string where() const {
    return address_text(destination) + (server_name.empty() ? "" : " (" + server_name + ")");
  }
};

struct LocalProxy::Bulk {
  FileDescriptor fd;
  bool connected = false;
  std::string url;
  std::string request;  // sent once connected
  size_t request_sent = 0;
  BulkDecoder decoder;
  Nanos started = 0, last_activity = 0;
  uint64_t pairs = 0;
};

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

// ---- The bulk connection

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
