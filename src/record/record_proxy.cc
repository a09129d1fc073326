// SPDX-License-Identifier: GPL-3.0-or-later
// The recording proxy's loop (record_proxy.hh): the listener and the stop, each accepted
// connection's start (its destination, the refused ones, the connect onward) and bookkeeping (its
// epoll interest, its close), the probes of the origins' protocols, --refuse-upstream's list. A
// connection's phases are in record_connection.cc.
#include "record/record_proxy.hh"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <ctime>
#include <iostream>

#include "record/record_proxy_parts.hh"
#include "tls/openssl_error.hh"
#include "tls/proxy_tls.hh"
#include "util/clock.hh"
#include "util/exception.hh"
#include "util/host_name.hh"
#include "util/text.hh"

using namespace record_proxy;

namespace {

constexpr uint64_t kListenerKey = 0;
constexpr uint64_t kStopKey = 1;
// A probe of an origin's protocols: how long it may take, and how many at once.
constexpr uint64_t kProbeTimeoutUs = 3'000'000;
constexpr size_t kMaxProbes = 64;
constexpr size_t kReadSize = 64 * 1024;
// Origins whose TLS session is kept for resumption (a page has tens; a crawl may have more).
constexpr size_t kMaxUpstreamSessions = 4096;

// For durations (the wall clock may step): util/clock.hh's monotonic clock, in microseconds.
uint64_t monotonic_us() { return static_cast<uint64_t>(monotonic_now()) / 1000; }

}  // namespace

struct RecordProxy::Probe {
  uint64_t id = 0;
  std::string origin;
  TlsStream stream;
  bool connected = false;
  uint64_t deadline_us = 0;  // monotonic
};

RecordProxy::RecordProxy(FileDescriptor listener, CertificateAuthority& ca, RecordWriter& writer,
                         RecordProxyOptions options)
    : listener_(std::move(listener)),
      stop_(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))),
      ca_(ca),
      writer_(writer),
      options_(options),
      hello_context_(SSL_CTX_new(TLS_server_method()), SSL_CTX_free),
      upstream_context_(SSL_CTX_new(TLS_client_method()), SSL_CTX_free),
      probe_context_(SSL_CTX_new(TLS_client_method()), SSL_CTX_free) {
  ::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes to sockets with write(): a closed peer must not kill us
  // Each connection needs two descriptors; the default soft limit (1024) would cap us near 500.
  rlimit files;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
  }
  socklen_t length = sizeof listener_address_;
  check_syscall("getsockname",
                ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&listener_address_), &length));
  if (!hello_context_ || !upstream_context_ || !probe_context_) throw openssl_failure("SSL_CTX_new");
  // The probe only asks which protocol the server picks: it sends no request, so it needs to
  // trust nothing.
  static const unsigned char kH2AndHttp11[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_verify(probe_context_.get(), SSL_VERIFY_NONE, nullptr);
  // Nor does it build and check the certificate's chain (OpenSSL does even under VERIFY_NONE).
  SSL_CTX_set_cert_verify_callback(
      probe_context_.get(), [](X509_STORE_CTX*, void*) { return 1; }, nullptr);
  SSL_CTX_set_alpn_protos(probe_context_.get(), kH2AndHttp11, sizeof kH2AndHttp11);
  // Every TLS side reads ahead: a read takes what the socket has, not a record's 5-byte header
  // and then its body (half the proxy's reads). What it read beyond the record it returned
  // stays in OpenSSL, where epoll does not see it: pump() comes back for it (again_).
  SSL_CTX_set_read_ahead(probe_context_.get(), 1);

  configure_interception_context(hello_context_.get(), &RecordProxy::client_hello, this);
  // The system's CAs (or SSL_CERT_FILE / SSL_CERT_DIR), or --upstream-ca instead: the program
  // being recorded trusts us only because we checked the server for it.
  configure_upstream_context(upstream_context_.get(), options_.verify_upstream, options_.upstream_ca_file.empty(),
                             {options_.upstream_ca_file});
  SSL_CTX_set_read_ahead(upstream_context_.get(), 1);
  SSL_CTX_set_app_data(upstream_context_.get(), this);
  SSL_CTX_set_session_cache_mode(upstream_context_.get(), SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(upstream_context_.get(), &RecordProxy::new_upstream_session);

  buffer_.resize(kReadSize);
  epoll_.add(listener_.get(), EPOLLIN, kListenerKey);
  epoll_.add(stop_.get(), EPOLLIN, kStopKey);
}

RecordProxy::~RecordProxy() = default;

void RecordProxy::stop() {
  const uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
}

uint64_t RecordProxy::failed_connections() const { return failed_.load(); }

void RecordProxy::run() {
  epoll_event events[256];
  for (;;) {
    const uint64_t next = expire_probes();
    const uint64_t now = monotonic_us();
    const Nanos timeout = !again_.empty() ? 0
                          : next == 0     ? kNever
                                          : static_cast<Nanos>(next > now ? next - now : 0) * 1000;
    const int n = epoll_.wait(events, 256, timeout);
    for (int i = 0; i < n; i++) {
      const uint64_t key = events[i].data.u64;
      if (key == kStopKey) {
        while (!probes_.empty()) finish_probe(probes_.begin()->first, "");  // the held pairs are written
        for (auto& [id, c] : connections_) {
          // A client that had our certificate and never finished the handshake (it refused the
          // certificate, and its alert did not get through before the shell ended) failed too.
          if (!c->dead && c->phase == Connection::Phase::ClientTls) {
            fail(*c, "TLS with the client for " + c->where() + " did not finish before the shell ended" + kTrustHint);
          } else {
            close(*c, false);
          }
        }
        connections_.clear();
        if (options_.verbose) {
          timespec cpu;
          ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
          std::cerr << "mm-record: the proxy used " << cpu.tv_sec * 1000.0 + cpu.tv_nsec / 1e6 << " ms of CPU"
                    << std::endl;
        }
        return;
      }
      if (key == kListenerKey) {
        accept_all();
      } else {
        handle(key, events[i].events);
      }
    }
    pump_again();
  }
}

// The connections whose last pump stopped at its bound while they still had work: bytes read
// ahead into OpenSSL, which no epoll event announces.
void RecordProxy::pump_again() {
  if (again_.empty()) return;
  std::vector<uint64_t> ids;
  ids.swap(again_);
  for (const uint64_t id : ids) {
    auto it = connections_.find(id);
    if (it == connections_.end()) continue;
    Connection& c = *it->second;
    if (!c.dead) pump(c);
    if (c.dead) connections_.erase(it);
  }
}

void RecordProxy::accept_all() {
  for (;;) {
    FileDescriptor client(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN) std::cerr << "mm-record: accepting a connection: " << std::strerror(errno) << std::endl;
      return;
    }
    start_connection(std::move(client));
  }
}

// Starts connecting onward to where the client was going; the rest happens in pump().
void RecordProxy::start_connection(FileDescriptor client_fd) {
  TlsStream client(std::move(client_fd));
  sockaddr_in original{};
  socklen_t length = sizeof original;
  if (::getsockopt(client.fd(), SOL_IP, SO_ORIGINAL_DST, &original, &length) < 0) return;  // not redirected
  if (original.sin_addr.s_addr == listener_address_.sin_addr.s_addr &&
      original.sin_port == listener_address_.sin_port) {
    client.reset_on_close();  // to the proxy itself: it would loop
    return;
  }
  char text[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &original.sin_addr, text, sizeof text);
  const Ipv4 destination{ntohl(original.sin_addr.s_addr)};
  for (const Ipv4Net& net : options_.refused_upstream) {
    if (!net.contains(destination)) continue;
    // A line for the first few: a page cannot flood standard error.
    if (++refused_ <= 10)
      std::cerr << "mm-record: refused a connection to " << text << ":" << ntohs(original.sin_port) << " (in "
                << net.str() << ", which --refuse-upstream names)" << std::endl;
    client.reset_on_close();
    return;
  }
  auto c = std::make_unique<Connection>();
  c->id = next_id_++;
  c->ip = text;
  c->port = ntohs(original.sin_port);
  c->client = std::move(client);
  c->requests.set_body_limit(options_.max_body_bytes);
  c->responses.set_body_limit(options_.max_body_bytes);
  c->server = TlsStream(FileDescriptor(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
  if (c->server.fd() < 0) {
    std::cerr << "mm-record: cannot make a socket: " << std::strerror(errno) << std::endl;
    c->client.reset_on_close();
    return;
  }
  const int one = 1;
  (void)::setsockopt(c->client.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  (void)::setsockopt(c->server.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  Connection& conn = *c;
  connections_.emplace(conn.id, std::move(c));
  epoll_.add(conn.client.fd(), 0, conn.id * 2);
  epoll_.add(conn.server.fd(), EPOLLOUT, conn.id * 2 + 1);
  conn.server_interest = EPOLLOUT;
  conn.connect_started_us = monotonic_us();
  if (::connect(conn.server.fd(), reinterpret_cast<const sockaddr*>(&original), sizeof original) == 0) {
    conn.connect_us = monotonic_us() - conn.connect_started_us;
    conn.phase = Connection::Phase::Sniffing;
    pump(conn);
  } else if (errno != EINPROGRESS) {
    fail(conn, "cannot connect to " + conn.where() + ": " + std::strerror(errno));
  }
  if (conn.dead) connections_.erase(conn.id);
}

void RecordProxy::handle(uint64_t key, uint32_t events) {
  if (auto probe = probes_.find(key / 2); probe != probes_.end()) return handle_probe(*probe->second, events);
  auto it = connections_.find(key / 2);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  const bool server_side = key % 2 == 1;
  if (c.phase == Connection::Phase::Connecting) {
    if (server_side) {
      int err = 0;
      socklen_t length = sizeof err;
      (void)::getsockopt(c.server.fd(), SOL_SOCKET, SO_ERROR, &err, &length);
      if (err != 0) {
        fail(c, "cannot connect to " + c.where() + ": " + std::strerror(err));
      } else {
        c.connect_us = monotonic_us() - c.connect_started_us;
        c.phase = Connection::Phase::Sniffing;
      }
    } else if (events & (EPOLLHUP | EPOLLERR)) {
      close(c, true);  // the client gave up while we were connecting
    }
  } else if (!server_side && c.phase != Connection::Phase::Relaying && (events & EPOLLERR)) {
    close(c, true);
  }
  if (!c.dead) pump(c);
  if (c.dead) connections_.erase(it);
}

void RecordProxy::pump(Connection& c) {
  using Phase = Connection::Phase;
  constexpr int kRounds = 32;  // then the other connections' turn
  int round = 0;
  bool progress = false;
  for (; round < kRounds && !c.dead; round++) {
    progress = false;
    switch (c.phase) {
      case Phase::Connecting:
        break;
      case Phase::Sniffing:
        progress = sniff(c);
        break;
      case Phase::ClientHello:
      case Phase::ClientTls:
        progress = client_handshake(c);
        break;
      case Phase::UpstreamTls:
        progress = upstream_handshake(c);
        break;
      case Phase::Relaying:
        progress = relay(c);
        break;
    }
    if (!progress) break;
  }
  if (c.dead) return;
  update_interest(c);
  if (round == kRounds && progress) again_.push_back(c.id);
}

void RecordProxy::update_interest(Connection& c) {
  using Phase = Connection::Phase;
  uint32_t client = 0, server = 0;
  const auto tls = [](const TlsStream& e) {
    return (e.tls_wants_read() ? EPOLLIN : 0u) | (e.tls_wants_write() ? EPOLLOUT : 0u);
  };
  switch (c.phase) {
    case Phase::Connecting:
      server = EPOLLOUT;
      break;
    case Phase::Sniffing:
      client = EPOLLIN;
      server = EPOLLIN;
      break;
    case Phase::ClientHello:
    case Phase::ClientTls:
      client = tls(c.client) ? tls(c.client) : EPOLLIN;
      break;
    case Phase::UpstreamTls:
      server = tls(c.server) ? tls(c.server) : EPOLLIN;
      break;
    case Phase::Relaying:
      for (auto [from, to, events] :
           {std::tuple{&c.client, &c.server, &client}, std::tuple{&c.server, &c.client, &server}}) {
        if (!from->read_closed() && to->pending() < kHighWater) *events |= EPOLLIN;
        if (from->pending() > 0) *events |= EPOLLOUT;
        *events |= tls(*from);
      }
      break;
  }
  if (client != c.client_interest) {
    epoll_.modify(c.client.fd(), client, c.id * 2);
    c.client_interest = client;
  }
  if (server != c.server_interest) {
    epoll_.modify(c.server.fd(), server, c.id * 2 + 1);
    c.server_interest = server;
  }
}

void RecordProxy::close(Connection& c, bool reset) {
  if (c.dead) return;
  c.dead = true;
  if (reset) {
    c.client.reset_on_close();
    c.server.reset_on_close();
  }
  epoll_.remove(c.client.fd());
  epoll_.remove(c.server.fd());
  if (options_.verbose)  // one write: a line per connection, many per page
    std::cerr << "mm-record: " + c.where() + (c.https ? " https" : "") + ": " + count_of(c.pairs, "pair") + "\n"
              << std::flush;
}

void RecordProxy::fail(Connection& c, const std::string& why) {
  failed_++;
  std::cerr << "mm-record: " << why << std::endl;
  close(c, true);
}

int RecordProxy::new_upstream_session(SSL* ssl, SSL_SESSION* session) {
  auto* proxy = static_cast<RecordProxy*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  const auto* c = static_cast<const Connection*>(SSL_get_app_data(ssl));
  if (!proxy || !c || !SSL_SESSION_is_resumable(session)) return 0;
  auto& sessions = proxy->upstream_sessions_;
  if (sessions.size() >= kMaxUpstreamSessions && !sessions.count(c->origin())) return 0;
  sessions.insert_or_assign(c->origin(),
                            std::unique_ptr<SSL_SESSION, void (*)(SSL_SESSION*)>(session, SSL_SESSION_free));
  return 1;  // ours now
}

// ---- Probes of the origins' protocols ----

void RecordProxy::start_probe(const Connection& c) {
  const std::string origin = c.origin();
  if (origin_alpn_.count(origin) || probing_.count(origin) || probes_.size() >= kMaxProbes) return;
  auto p = std::make_unique<Probe>();
  p->id = next_id_++;
  p->origin = origin;
  p->deadline_us = monotonic_us() + kProbeTimeoutUs;
  p->stream = TlsStream(FileDescriptor(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
  if (p->stream.fd() < 0) return;
  SSL* ssl = SSL_new(probe_context_.get());
  if (!ssl) return;
  p->stream.start_tls(ssl);
  if (!c.server_name.empty() && !is_ip_literal(c.server_name)) SSL_set_tlsext_host_name(ssl, c.server_name.c_str());
  SSL_set_connect_state(ssl);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(c.port);
  if (::inet_pton(AF_INET, c.ip.c_str(), &to.sin_addr) != 1) return;
  if (::connect(p->stream.fd(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS) {
    origin_alpn_[origin] = "";
    return;
  }
  epoll_.add(p->stream.fd(), EPOLLOUT, p->id * 2);
  probing_[origin] = p->id;
  probes_.emplace(p->id, std::move(p));
}

void RecordProxy::handle_probe(Probe& p, uint32_t events) {
  if (!p.connected) {
    int err = 0;
    socklen_t length = sizeof err;
    (void)::getsockopt(p.stream.fd(), SOL_SOCKET, SO_ERROR, &err, &length);
    if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) return finish_probe(p.id, "");
    p.connected = true;
  }
  const TlsStream::Handshake state = p.stream.handshake();
  if (state == TlsStream::Handshake::Done) {
    const unsigned char* protocol = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(p.stream.ssl(), &protocol, &length);
    return finish_probe(p.id, std::string(reinterpret_cast<const char*>(protocol), length));
  }
  if (state != TlsStream::Handshake::Blocked) return finish_probe(p.id, "");
  epoll_.modify(p.stream.fd(),
                (p.stream.tls_wants_read() ? EPOLLIN : 0u) | (p.stream.tls_wants_write() ? EPOLLOUT : 0u), p.id * 2);
}

void RecordProxy::finish_probe(uint64_t id, const std::string& alpn) {
  auto it = probes_.find(id);
  if (it == probes_.end()) return;
  const std::string origin = it->second->origin;
  epoll_.remove(it->second->stream.fd());
  probes_.erase(it);  // closes the probe's connection
  probing_.erase(origin);
  origin_alpn_[origin] = alpn;
  auto held = held_.find(origin);
  if (held == held_.end()) return;
  std::vector<RecordedPair> pairs = std::move(held->second);
  held_.erase(held);
  for (RecordedPair& pair : pairs) write_pair(origin, std::move(pair));
}

void RecordProxy::write_pair(const std::string& origin, RecordedPair&& pair) {
  if (!origin.empty()) {
    if (probing_.count(origin)) {
      held_[origin].push_back(std::move(pair));
      return;
    }
    // The protocol the origin offers a browser: h2 where its probe chose it.
    if (auto known = origin_alpn_.find(origin); known != origin_alpn_.end() && known->second == "h2")
      pair.protocol = "h2";
  }
  writer_.write(std::move(pair));
}

uint64_t RecordProxy::expire_probes() {
  uint64_t next = 0;
  const uint64_t now = monotonic_us();
  std::vector<uint64_t> expired;
  for (const auto& [id, p] : probes_) {
    if (p->deadline_us <= now) {
      expired.push_back(id);
    } else if (next == 0 || p->deadline_us < next) {
      next = p->deadline_us;
    }
  }
  for (uint64_t id : expired) finish_probe(id, "");
  return next;
}

std::vector<Ipv4Net> parse_refused_upstream(std::string_view list) {
  // RFC 6890's special-purpose space that a machine's own network may hold (and 0/8, 224/3).
  static constexpr std::string_view kPrivate[] = {"0.0.0.0/8",      "10.0.0.0/8",    "100.64.0.0/10", "127.0.0.0/8",
                                                  "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",  "192.168.0.0/16",
                                                  "198.18.0.0/15",  "224.0.0.0/3"};
  std::vector<Ipv4Net> nets;
  for (std::string_view rest = list; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item == "private") {
      for (const std::string_view net : kPrivate) nets.push_back(*Ipv4Net::parse(net));
    } else if (const std::optional<Ipv4Net> net = Ipv4Net::parse(item)) {
      nets.push_back(*net);
    } else {
      throw UsageError("--refuse-upstream: \"" + printable(item, 60) +
                       "\" is not ADDRESS[/BITS] (host bits zero) or \"private\"");
    }
    if (nets.size() > 4096) throw UsageError("--refuse-upstream names more than 4096 networks");
  }
  return nets;
}
