// SPDX-License-Identifier: GPL-3.0-or-later
#include "record/record_proxy.hh"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <deque>
#include <iostream>

#include "http/chunked.hh"
#include "http/deterministic_page.hh"
#include "http/http_parser.hh"
#include "http/start_line.hh"
#include "tls/client_hello.hh"
#include "tls/openssl_error.hh"
#include "tls/proxy_tls.hh"
#include "tls/tls_stream.hh"
#include "util/clock.hh"
#include "util/exception.hh"
#include "util/host_name.hh"
#include "util/tcp_info.hh"
#include "util/text.hh"

namespace {
// What to do when a client does not finish TLS with the proxy: trust the local CA.
const std::string kTrustHint =
    " (does the program trust the local CA? curl: --cacert \"$(mm-ca path)\"; Chromium: mm-ca trust, or "
    "--ignore-certificate-errors-spki-list=\"$(mm-ca spki)\")";
}  // namespace

namespace {

constexpr uint64_t kListenerKey = 0;
constexpr uint64_t kStopKey = 1;
// A probe of an origin's protocols: how long it may take, and how many at once.
constexpr uint64_t kProbeTimeoutUs = 3'000'000;
constexpr size_t kMaxProbes = 64;
constexpr size_t kReadSize = 64 * 1024;
// Stop reading a side while this much is waiting to be written to the other: memory stays
// bounded and the sender feels the receiver's pace, as it would without the proxy.
constexpr size_t kHighWater = 256 * 1024;

uint64_t now_us() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

// The DNS names (subjectAltName) of the certificate the server presented, as many as a pair
// keeps and only those that are host names.
std::vector<std::string> certificate_dns_names(SSL* ssl) {
  std::vector<std::string> names;
  X509* certificate = SSL_get0_peer_certificate(ssl);
  if (!certificate) return names;
  auto* general = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  if (!general) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(general) && names.size() < kMaxCertificateNames; i++) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(general, i);
    if (g->type != GEN_DNS) continue;
    const std::string name(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                           static_cast<size_t>(ASN1_STRING_length(g->d.dNSName)));
    if (is_certificate_name(name)) names.push_back(ascii_lowercase(name));
  }
  GENERAL_NAMES_free(general);
  return names;
}

// For durations (the wall clock may step): util/clock.hh's monotonic clock, in microseconds.
uint64_t monotonic_us() { return static_cast<uint64_t>(monotonic_now()) / 1000; }

}  // namespace

struct RecordProxy::Connection {
  enum class Phase { Connecting, Sniffing, ClientHello, UpstreamTls, ClientTls, Relaying };
  struct PendingRequest {
    HttpMessage request;
    uint64_t start_us, end_us;
    uint64_t dropped_body_bytes;  // its body passed --max-body: the pair is not recorded
  };

  uint64_t id = 0;
  TlsStream client, server;                           // the program's end, and the server's
  uint32_t client_interest = 0, server_interest = 0;  // the epoll events asked for
  Phase phase = Phase::Connecting;
  std::string ip;
  uint16_t port = 0;
  std::string server_name;  // SNI
  std::string alpn;
  bool https = false;
  bool upstream_ready = false;
  bool parsing_requests = false, parsing_responses = false;
  bool dead = false;
  HttpParser requests{HttpParser::Direction::Request};
  HttpParser responses{HttpParser::Direction::Response};
  std::deque<PendingRequest> pending;
  // --deterministic: the server's bytes of the response being parsed, held back from the client
  // until its header section shows whether it is an HTML page (Head), and then for a page until
  // it is whole (Page), when it goes to the client with the script in it.
  enum class Hold { None, Head, Page };
  Hold hold = Hold::None;
  std::string held;
  uint64_t page_start_ms = 0;  // the page's request's time: its clock starts there
  uint64_t request_start_us = 0, response_start_us = 0;
  uint64_t pairs = 0;
  std::vector<std::string> certificate_names;  // the server certificate's DNS names
  std::string tls_version;                     // the TLS version the server chose
  uint64_t connect_started_us = 0;             // monotonic
  std::optional<uint64_t> connect_us;          // the TCP handshake with the server took this long

  std::string where() const {
    return ip + ":" + std::to_string(port) + (server_name.empty() ? "" : " (" + server_name + ")");
  }
};

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
  SSL_CTX_set_alpn_protos(probe_context_.get(), kH2AndHttp11, sizeof kH2AndHttp11);

  configure_interception_context(hello_context_.get(), &RecordProxy::client_hello, this);
  // The system's CAs (or SSL_CERT_FILE / SSL_CERT_DIR), or --upstream-ca instead: the program
  // being recorded trusts us only because we checked the server for it.
  configure_upstream_context(upstream_context_.get(), options_.verify_upstream, options_.upstream_ca_file.empty(),
                             {options_.upstream_ca_file});

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
    const Nanos timeout = next == 0 ? kNever : static_cast<Nanos>(next > now ? next - now : 0) * 1000;
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
  for (int round = 0; round < 32 && !c.dead; round++) {
    bool progress = false;
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
  if (!c.dead) update_interest(c);
}

// Decides from the client's first byte what the connection carries: TLS, HTTP (a request line
// starts with an upper-case method) or something else.
bool RecordProxy::sniff(Connection& c) {
  using Phase = Connection::Phase;
  const FirstByte first = peek_first_byte(c.client.fd());
  switch (first) {
    case FirstByte::Tls:
      if (!start_client_tls(c.client, hello_context_.get(), &c)) {
        fail(c, openssl_failure("SSL_new").what());
        return false;
      }
      c.phase = Phase::ClientHello;
      return true;
    case FirstByte::Http:
    case FirstByte::Other:
      c.phase = Phase::Relaying;
      c.parsing_requests = c.parsing_responses = first == FirstByte::Http;
      return true;
    case FirstByte::Closed:
      c.phase = Phase::Relaying;  // the client closed without a word: relay the close
      return true;
    case FirstByte::None:
      break;
  }
  char b;
  if (::recv(c.server.fd(), &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) {
    c.phase = Phase::Relaying;  // the server speaks first (or closed): not HTTP
    return true;
  }
  return false;
}

int RecordProxy::client_hello(SSL* ssl, int* alert, void* arg) {
  auto* proxy = static_cast<RecordProxy*>(arg);
  auto* c = static_cast<Connection*>(SSL_get_app_data(ssl));
  if (!c->upstream_ready) {
    // First call: learn the name, then pause this handshake until the server's is done, so
    // that a server we cannot reach or verify is never impersonated.
    c->server_name = client_hello_server_name(ssl);
    return SSL_CLIENT_HELLO_RETRY;
  }
  std::string why;
  const int answer = use_minted_certificate(ssl, proxy->ca_, c->server_name, c->ip, alert, &why);
  if (answer == SSL_CLIENT_HELLO_ERROR)
    std::cerr << "mm-record: minting a certificate for " << c->where() << ": " << why << std::endl;
  return answer;
}

bool RecordProxy::start_server_tls(Connection& c) {
  SSL* ssl = SSL_new(upstream_context_.get());
  if (!ssl) {
    fail(c, openssl_failure("SSL_new").what());
    return false;
  }
  c.server.start_tls(ssl);
  start_probe(c);
  set_upstream_identity(ssl, c.server_name, c.ip);
  SSL_set_connect_state(ssl);
  return true;
}

// The client's handshake: paused after its hello (phase ClientHello) until the server's is done,
// then completed (phase ClientTls) with a certificate for the name it asked for.
bool RecordProxy::client_handshake(Connection& c) {
  using Phase = Connection::Phase;
  const TlsStream::Handshake state = c.client.handshake();
  if (state == TlsStream::Handshake::Done) {
    const unsigned char* protocol;
    unsigned int length;
    SSL_get0_alpn_selected(c.client.ssl(), &protocol, &length);
    c.alpn.assign(reinterpret_cast<const char*>(protocol), length);
    c.https = true;
    c.phase = Phase::Relaying;
    c.parsing_requests = c.parsing_responses = true;
    return true;
  }
  if (state == TlsStream::Handshake::HelloPaused && c.phase == Phase::ClientHello) {
    if (!start_server_tls(c)) return false;
    c.phase = Phase::UpstreamTls;
    return true;
  }
  if (state == TlsStream::Handshake::Blocked) return false;
  const std::string why = c.client.peer_closed() ? "the client closed the connection" : c.client.error();
  if (c.phase == Phase::ClientTls) {
    fail(c, "TLS with the client for " + c.where() + " failed: " + why + kTrustHint);
  } else {
    fail(c, "TLS with the client for " + c.where() + " failed: " + why);
  }
  return false;
}

// The server's handshake, verified (unless --insecure-upstream) before the client's goes on.
bool RecordProxy::upstream_handshake(Connection& c) {
  const TlsStream::Handshake state = c.server.handshake();
  if (state == TlsStream::Handshake::Done) {
    c.upstream_ready = true;
    c.phase = Connection::Phase::ClientTls;
    c.certificate_names = certificate_dns_names(c.server.ssl());
    c.tls_version = SSL_get_version(c.server.ssl());
    return true;
  }
  if (state == TlsStream::Handshake::Blocked) return false;
  std::string why;
  const long verify = SSL_get_verify_result(c.server.ssl());
  if (verify != X509_V_OK) {
    why = std::string("the server's certificate is not trusted: ") + X509_verify_cert_error_string(verify) +
          " (give a CA bundle with its issuer by --upstream-ca=FILE or SSL_CERT_FILE, or use --insecure-upstream)";
  } else if (c.server.peer_closed() && c.server.error().empty()) {
    why = "the server closed the connection during the handshake";
  } else {
    why = c.server.error();
  }
  fail(c, "TLS to " + c.where() + " failed: " + why + "; the client's connection was reset");
  return false;
}

bool RecordProxy::relay(Connection& c) {
  bool progress = false;
  if (!c.client.flush() || !c.server.flush()) {
    if (options_.verbose)
      std::cerr << "mm-record: " << c.where() << ": " << c.client.error() << c.server.error() << std::endl;
    close(c, true);
    return false;
  }
  // Client to server.
  if (!c.client.read_closed() && c.server.pending() < kHighWater) {
    const ssize_t n = c.client.read(buffer_.data(), buffer_.size());
    if (n > 0) {
      on_client_bytes(c, std::string_view(buffer_.data(), static_cast<size_t>(n)));
      progress = true;
    } else if (n == 0) {
      progress = true;
    } else if (n == TlsStream::kFailed) {
      close(c, true);
      return false;
    }
  }
  if (c.dead) return false;
  // Server to client.
  if (!c.server.read_closed() && c.client.pending() < kHighWater) {
    const ssize_t n = c.server.read(buffer_.data(), buffer_.size());
    if (n > 0) {
      on_server_bytes(c, std::string_view(buffer_.data(), static_cast<size_t>(n)));
      progress = true;
    } else if (n == 0 || n == TlsStream::kFailed) {
      if (c.parsing_responses) {
        const bool clean = c.responses.finish();  // ends a close-delimited body
        if (c.hold != Connection::Hold::None && !release_held(c)) {
          close(c, true);
          return false;
        }
        take_responses(c, now_us(), false);
        if (!clean && options_.verbose)
          std::cerr << "mm-record: " << c.where() << ": the server closed in the middle of a response" << std::endl;
        c.parsing_responses = false;
      }
      if (n == TlsStream::kFailed) {
        close(c, true);  // reset: pass it on
        return false;
      }
      progress = true;
    }
  }
  if (c.dead) return false;
  if (c.client.read_closed() && c.server.pending() == 0 && !c.server.write_shut()) {
    c.server.shut_write();
    progress = true;
  }
  if (c.server.read_closed() && c.client.pending() == 0 && !c.client.write_shut()) {
    c.client.shut_write();
    progress = true;
  }
  if (c.client.read_closed() && c.server.read_closed() && c.client.pending() == 0 && c.server.pending() == 0) {
    close(c, false);
    return false;
  }
  return progress;
}

// Each side's bytes go on toward the other before they are parsed for the recording: the parse
// never changes what is relayed, so it need not delay it (and a pair whose response was read
// whole is recorded even if the client has gone).
void RecordProxy::on_client_bytes(Connection& c, std::string_view data) {
  const bool sent = c.server.send(data);
  if (c.parsing_requests) {
    const uint64_t now = now_us();
    const bool was_idle = !c.requests.in_message();
    c.requests.feed(data);
    take_requests(c, now, was_idle);
    if (c.requests.state() != HttpParser::State::Http) {
      c.parsing_requests = false;
      if (c.pending.empty()) c.parsing_responses = false;
      if (options_.verbose && c.requests.state() == HttpParser::State::Error)
        std::cerr << "mm-record: " << c.where() << ": not HTTP from the client (" << c.requests.error()
                  << "); relaying unrecorded" << std::endl;
    }
  }
  if (!sent) close(c, true);
}

void RecordProxy::on_server_bytes(Connection& c, std::string_view data) {
  if (options_.deterministic && c.parsing_responses) {
    if (!relay_deterministic(c, data)) close(c, true);
    return;
  }
  const bool sent = c.client.send(data);
  if (c.parsing_responses) {
    const uint64_t now = now_us();
    const bool was_idle = !c.responses.in_message();
    c.responses.feed(data);
    take_responses(c, now, was_idle);
    if (c.responses.state() != HttpParser::State::Http) {
      c.parsing_requests = c.parsing_responses = false;
      if (options_.verbose && c.responses.state() == HttpParser::State::Error)
        std::cerr << "mm-record: " << c.where() << ": not HTTP from the server (" << c.responses.error()
                  << "); relaying unrecorded" << std::endl;
    } else if (!c.parsing_requests && c.pending.empty() && !c.responses.in_message()) {
      c.parsing_responses = false;  // the requests stopped being HTTP: nothing more to pair
    }
  }
  if (!sent) close(c, true);
}

// One response at a time (HttpParser::feed_step): its bytes go to the client as they come, but
// for the header section (held until it says what the response is) and an HTML page (held
// whole, then sent changed). The recording gets what the server sent.
bool RecordProxy::relay_deterministic(Connection& c, std::string_view data) {
  using Hold = Connection::Hold;
  bool sent = true;
  while (!data.empty()) {
    if (!c.parsing_responses) {  // not HTTP any more: the rest goes as it is
      sent = release_held(c) && sent;
      return c.client.send(data) && sent;
    }
    const uint64_t now = now_us();
    const bool was_idle = !c.responses.in_message();
    const size_t n = c.responses.feed_step(data);
    const std::string_view piece = data.substr(0, n);
    data.remove_prefix(n);
    if (c.hold == Hold::None && was_idle) c.hold = Hold::Head;
    if (c.hold == Hold::None) {
      sent = c.client.send(piece) && sent;
    } else {
      c.held.append(piece);
    }
    if (c.responses.state() != HttpParser::State::Http) {
      sent = release_held(c) && sent;  // a tunnel's start, or what was not HTTP: as it came
      sent = c.client.send(data) && sent;
      data = {};
    } else if (c.responses.has_completed()) {
      sent = release_held(c) && sent;
    } else if (const HttpMessage* head = c.responses.head(); head && c.hold == Hold::Head) {
      const auto status = three_digit_status(split_status_line(head->first_line).code);
      const bool head_request =
          !c.pending.empty() && split_request_line(c.pending.front().request.first_line).method == "HEAD";
      if (status && *status >= 200 && *status != 206 && !head_request && is_html_response(head->headers)) {
        c.hold = Hold::Page;
        c.page_start_ms = (c.pending.empty() ? now : c.pending.front().start_us) / 1000;
      } else {
        sent = release_held(c) && sent;
      }
    } else if (c.hold == Hold::Page && c.held.size() > kMaxDeterministicPage) {
      if (options_.verbose)
        std::cerr << "mm-record: " << c.where() << ": an HTML page of over " << kMaxDeterministicPage
                  << " bytes goes to the client without the deterministic script" << std::endl;
      sent = release_held(c) && sent;
    } else if (c.hold == Hold::Head && !c.responses.in_message()) {
      sent = release_held(c) && sent;  // blank lines between responses
    }
    take_responses(c, now, was_idle);
    if (c.responses.state() != HttpParser::State::Http) {
      c.parsing_requests = c.parsing_responses = false;
    } else if (!c.parsing_requests && c.pending.empty() && !c.responses.in_message()) {
      c.parsing_responses = false;
    }
  }
  return sent;
}

// Sends what is held: an HTML page just completed goes with the script in it (as the server
// sent it if the script cannot go in); anything else as it came. Nothing is held after it.
bool RecordProxy::release_held(Connection& c) {
  using Hold = Connection::Hold;
  std::string out;
  if (c.hold == Hold::Page && c.responses.has_completed() && c.responses.front_completed().dropped_body_bytes == 0) {
    HttpMessage page = c.responses.front_completed().message;
    if (is_chunked(page)) {
      page.body = decoded_body(page);
      std::erase_if(page.headers, [](const HttpHeader& h) {
        return equals_ignoring_case(h.key, "Transfer-Encoding") || equals_ignoring_case(h.key, "Trailer");
      });
    }
    std::string why;
    if (add_deterministic_script(page.headers, page.body, c.page_start_ms, &why)) {
      out = page.serialize();
    } else if (!why.empty() && options_.verbose) {
      std::cerr << "mm-record: " << c.where() << ": a page goes without the deterministic script: " << why << std::endl;
    }
  }
  if (out.empty()) out = std::move(c.held);
  c.held.clear();
  c.hold = Hold::None;
  return out.empty() || c.client.send(out);
}

void RecordProxy::take_requests(Connection& c, uint64_t now, bool was_idle) {
  bool completed = false;
  while (c.requests.has_completed()) {
    HttpParser::Completed done = c.requests.pop_completed();
    const uint64_t start = (!completed && !was_idle) ? c.request_start_us : now;
    completed = true;
    c.responses.expect_response_to(split_request_line(done.message.first_line).method);
    c.pending.push_back({std::move(done.message), start, now, done.dropped_body_bytes});
  }
  if (c.requests.in_message() && (was_idle || completed)) c.request_start_us = now;
}

void RecordProxy::take_responses(Connection& c, uint64_t now, bool was_idle) {
  bool completed = false;
  while (c.responses.has_completed()) {
    HttpParser::Completed done = c.responses.pop_completed();
    const uint64_t start = (!completed && !was_idle) ? c.response_start_us : now;
    completed = true;
    if (done.interim) continue;       // 100 Continue, 103 Early Hints: relayed, the final one follows
    if (c.pending.empty()) continue;  // a response nobody asked for: relayed, nothing to pair
    Connection::PendingRequest request = std::move(c.pending.front());
    c.pending.pop_front();
    if (c.responses.upgraded()) continue;  // 101 / CONNECT: the connection is a tunnel now
    if (request.dropped_body_bytes > 0 || done.dropped_body_bytes > 0) {
      // Relayed whole, but not kept: a line for the first few, and the closing line counts them.
      if (++not_recorded_ <= 10)
        std::cerr << "mm-record: " << c.where() << ": " << printable(request.request.first_line, 200) << ": a "
                  << (request.dropped_body_bytes > 0 ? "request" : "response") << " body of "
                  << std::max(request.dropped_body_bytes, done.dropped_body_bytes) << " bytes, over --max-body ("
                  << options_.max_body_bytes << "): relayed, not recorded" << std::endl;
      continue;
    }
    RecordedPair pair;
    pair.ip = c.ip;
    pair.port = c.port;
    pair.https = c.https;
    pair.request = std::move(request.request);
    pair.response = std::move(done.message);
    pair.request_start_us = request.start_us;
    pair.request_end_us = request.end_us;
    pair.response_first_byte_us = start;
    pair.response_last_byte_us = now;
    pair.server_name = c.server_name;
    // The server's timing, from this side of the proxy only: the request's last byte went to
    // the server as it was read (before the timestamp), and the response's first byte is
    // stamped as it is read, so the proxy's work toward the client is not in them.
    pair.server_connect_us = c.connect_us;
    pair.server_certificate_names = c.certificate_names;
    pair.server_tls_version = c.tls_version;
    pair.server_rtt_us = tcp_min_rtt_us(c.server.fd());
    if (!pair.server_rtt_us) pair.server_rtt_us = c.connect_us;
    if (pair.server_rtt_us && start >= request.end_us) {
      const uint64_t wait = start - request.end_us;
      pair.server_think_us = wait > *pair.server_rtt_us ? wait - *pair.server_rtt_us : 0;
    }
    if (!c.alpn.empty()) {
      pair.protocol = c.alpn;
    } else {
      pair.protocol = ascii_lowercase(split_request_line(pair.request.first_line).version);
    }
    write_pair(c.https ? c.ip + ":" + std::to_string(c.port) + "|" + c.server_name : std::string(), std::move(pair));
    c.pairs++;
  }
  if (c.responses.in_message() && (was_idle || completed)) c.response_start_us = now;
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
  if (options_.verbose)
    std::cerr << "mm-record: " << c.where() << (c.https ? " https" : "") << ": " << count_of(c.pairs, "pair")
              << std::endl;
}

void RecordProxy::fail(Connection& c, const std::string& why) {
  failed_++;
  std::cerr << "mm-record: " << why << std::endl;
  close(c, true);
}

// ---- Probes of the origins' protocols ----

void RecordProxy::start_probe(const Connection& c) {
  const std::string origin = c.ip + ":" + std::to_string(c.port) + "|" + c.server_name;
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
