#include "record/record_proxy.hh"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
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

#include "http/http_parser.hh"
#include "http/start_line.hh"
#include "util/host_name.hh"
#include "util/text.hh"

namespace {

constexpr uint64_t kListenerKey = 0;
constexpr uint64_t kStopKey = 1;
constexpr size_t kReadSize = 64 * 1024;
// Stop reading a side while this much is waiting to be written to the other: memory stays
// bounded and the sender feels the receiver's pace, as it would without the proxy.
constexpr size_t kHighWater = 256 * 1024;

uint64_t now_us() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

std::string openssl_errors() {
  std::string text;
  while (const unsigned long e = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(e, line, sizeof line);
    if (!text.empty()) text += "; ";
    // "error:0A000086:SSL routines::certificate verify failed" -> the reason only
    std::string_view l(line);
    const size_t colon = l.rfind(':');
    text += colon == std::string_view::npos ? l : l.substr(colon + 1);
  }
  return text;
}

constexpr ssize_t kWouldBlock = -1;
constexpr ssize_t kFailed = -2;

void reset_on_close(int fd) {
  const linger l{1, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

}  // namespace

// One side of a proxied connection: a socket, with TLS once it has been ended there.
struct Endpoint {
  FileDescriptor fd;
  std::unique_ptr<SSL, void (*)(SSL*)> ssl{nullptr, SSL_free};  // destroyed before fd
  std::string out;                                              // bytes waiting for the socket to accept them
  size_t out_offset = 0;
  bool read_closed = false;  // the peer has finished sending (FIN or close_notify)
  bool write_shut = false;   // we have finished sending to the peer
  bool tls_wants_read = false, tls_wants_write = false;
  uint32_t interest = 0;
  std::string error;

  size_t pending() const { return out.size() - out_offset; }

  void note_tls(int err) {
    tls_wants_read = err == SSL_ERROR_WANT_READ;
    tls_wants_write = err == SSL_ERROR_WANT_WRITE;
  }

  // > 0 bytes read, 0 end of stream, kWouldBlock, kFailed (error set).
  ssize_t read(char* buffer, size_t size) {
    if (ssl) {
      ERR_clear_error();
      const int n = SSL_read(ssl.get(), buffer, static_cast<int>(size));
      if (n > 0) {
        tls_wants_read = tls_wants_write = false;
        return n;
      }
      const int err = SSL_get_error(ssl.get(), n);
      note_tls(err);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return kWouldBlock;
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      error = err == SSL_ERROR_SYSCALL ? std::string(std::strerror(errno)) : openssl_errors();
      return kFailed;
    }
    for (;;) {
      const ssize_t n = ::read(fd.get(), buffer, size);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return kWouldBlock;
      error = std::strerror(errno);
      return kFailed;
    }
  }

  // Bytes written (>= 0), kWouldBlock, kFailed.
  ssize_t write(const char* data, size_t size) {
    if (size == 0) return 0;
    if (ssl) {
      ERR_clear_error();
      const int n = SSL_write(ssl.get(), data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      if (n > 0) {
        tls_wants_read = tls_wants_write = false;
        return n;
      }
      const int err = SSL_get_error(ssl.get(), n);
      note_tls(err);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return kWouldBlock;
      error = err == SSL_ERROR_SYSCALL ? std::string(std::strerror(errno)) : openssl_errors();
      return kFailed;
    }
    for (;;) {
      const ssize_t n = ::send(fd.get(), data, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return kWouldBlock;
      error = std::strerror(errno);
      return kFailed;
    }
  }

  // Writes what is pending; false on error.
  bool flush() {
    while (pending() > 0) {
      const ssize_t n = write(out.data() + out_offset, pending());
      if (n == kFailed) return false;
      if (n == kWouldBlock) return true;
      out_offset += static_cast<size_t>(n);
    }
    out.clear();
    out_offset = 0;
    return true;
  }

  // Sends data after what is pending (straight to the socket when nothing is); false on error.
  bool send(std::string_view data) {
    if (pending() == 0) {
      while (!data.empty()) {
        const ssize_t n = write(data.data(), data.size());
        if (n == kFailed) return false;
        if (n == kWouldBlock) break;
        data.remove_prefix(static_cast<size_t>(n));
      }
    }
    out.append(data);
    return true;
  }

  void shut_write() {
    if (write_shut) return;
    write_shut = true;
    if (ssl) {
      ERR_clear_error();
      (void)SSL_shutdown(ssl.get());  // close_notify; the peer's is not waited for
    }
    (void)::shutdown(fd.get(), SHUT_WR);
  }
};

struct RecordProxy::Connection {
  enum class Phase { Connecting, Sniffing, ClientHello, UpstreamTls, ClientTls, Relaying };
  struct PendingRequest {
    HttpMessage request;
    uint64_t start_us, end_us;
  };

  uint64_t id = 0;
  Endpoint client, server;
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
  uint64_t request_start_us = 0, response_start_us = 0;
  uint64_t pairs = 0;

  std::string where() const {
    return ip + ":" + std::to_string(port) + (server_name.empty() ? "" : " (" + server_name + ")");
  }
};

RecordProxy::RecordProxy(FileDescriptor listener, CertificateAuthority& ca, RecordWriter& writer,
                         RecordProxyOptions options)
    : listener_(std::move(listener)),
      stop_(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))),
      ca_(ca),
      writer_(writer),
      options_(options),
      hello_context_(SSL_CTX_new(TLS_server_method()), SSL_CTX_free),
      upstream_context_(SSL_CTX_new(TLS_client_method()), SSL_CTX_free) {
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
  if (!hello_context_ || !upstream_context_) throw std::runtime_error("OpenSSL: " + openssl_errors());

  SSL_CTX* hello = hello_context_.get();
  SSL_CTX_set_options(hello, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(hello, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_client_hello_cb(hello, &RecordProxy::client_hello, this);

  SSL_CTX* up = upstream_context_.get();
  SSL_CTX_set_options(up, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(up, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (options_.verify_upstream) {
    // The system's CAs (or SSL_CERT_FILE / SSL_CERT_DIR): the program being recorded trusts
    // us only because we checked the server for it.
    if (!options_.upstream_ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(up, options_.upstream_ca_file.c_str(), nullptr) != 1)
        throw UserError("cannot use " + options_.upstream_ca_file + " as the servers' CA bundle: " + openssl_errors() +
                        " (it must be readable PEM certificates)");
    } else if (SSL_CTX_set_default_verify_paths(up) != 1) {
      throw std::runtime_error("OpenSSL: " + openssl_errors());
    }
    SSL_CTX_set_verify(up, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(up, SSL_VERIFY_NONE, nullptr);
  }
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(up, kHttp11, sizeof kHttp11);

  buffer_.resize(kReadSize);
  epoll_.add(listener_.get(), EPOLLIN, kListenerKey);
  epoll_.add(stop_.get(), EPOLLIN, kStopKey);
}

RecordProxy::~RecordProxy() = default;

void RecordProxy::stop() {
  const uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
}

RecordProxyStats RecordProxy::stats() const {
  return {stats_.connections.load(), stats_.tls.load(), stats_.tunnelled.load(), stats_.failed.load(),
          stats_.pairs.load()};
}

void RecordProxy::run() {
  epoll_event events[256];
  for (;;) {
    const int n = epoll_.wait(events, 256, kNever);
    for (int i = 0; i < n; i++) {
      const uint64_t key = events[i].data.u64;
      if (key == kStopKey) {
        for (auto& [id, c] : connections_) close(*c, false);
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
    stats_.connections++;
    sockaddr_in original{};
    socklen_t length = sizeof original;
    if (::getsockopt(client.get(), SOL_IP, SO_ORIGINAL_DST, &original, &length) < 0) continue;  // not redirected
    if (original.sin_addr.s_addr == listener_address_.sin_addr.s_addr &&
        original.sin_port == listener_address_.sin_port) {
      reset_on_close(client.get());  // to the proxy itself: it would loop
      continue;
    }
    auto c = std::make_unique<Connection>();
    c->id = next_id_++;
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &original.sin_addr, text, sizeof text);
    c->ip = text;
    c->port = ntohs(original.sin_port);
    c->client.fd = std::move(client);
    c->server.fd = FileDescriptor(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!c->server.fd.valid()) {
      std::cerr << "mm-record: cannot make a socket: " << std::strerror(errno) << std::endl;
      reset_on_close(c->client.fd.get());
      continue;
    }
    const int one = 1;
    (void)::setsockopt(c->client.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    (void)::setsockopt(c->server.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Connection& conn = *c;
    connections_.emplace(conn.id, std::move(c));
    epoll_.add(conn.client.fd.get(), 0, conn.id * 2);
    epoll_.add(conn.server.fd.get(), EPOLLOUT, conn.id * 2 + 1);
    conn.server.interest = EPOLLOUT;
    if (::connect(conn.server.fd.get(), reinterpret_cast<const sockaddr*>(&original), sizeof original) == 0) {
      conn.phase = Connection::Phase::Sniffing;
      pump(conn);
    } else if (errno != EINPROGRESS) {
      fail(conn, "cannot connect to " + conn.where() + ": " + std::strerror(errno));
    }
    if (conn.dead) connections_.erase(conn.id);
  }
}

void RecordProxy::handle(uint64_t key, uint32_t events) {
  auto it = connections_.find(key / 2);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  const bool server_side = key % 2 == 1;
  if (c.phase == Connection::Phase::Connecting) {
    if (server_side) {
      int err = 0;
      socklen_t length = sizeof err;
      (void)::getsockopt(c.server.fd.get(), SOL_SOCKET, SO_ERROR, &err, &length);
      if (err != 0) {
        fail(c, "cannot connect to " + c.where() + ": " + std::strerror(err));
      } else {
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
      case Phase::Sniffing: {
        // Peeked, not read: TLS bytes must stay in the socket for OpenSSL.
        char first;
        const ssize_t n = ::recv(c.client.fd.get(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 1 && first == 0x16) {
          c.client.ssl.reset(SSL_new(hello_context_.get()));
          if (!c.client.ssl) {
            fail(c, "OpenSSL: " + openssl_errors());
            break;
          }
          SSL_set_fd(c.client.ssl.get(), c.client.fd.get());
          SSL_set_accept_state(c.client.ssl.get());
          SSL_set_app_data(c.client.ssl.get(), &c);
          c.phase = Phase::ClientHello;
          stats_.tls++;
          progress = true;
        } else if (n == 1) {
          c.phase = Phase::Relaying;
          c.parsing_requests = c.parsing_responses = first >= 'A' && first <= 'Z';
          if (!c.parsing_requests) stats_.tunnelled++;
          progress = true;
        } else if (n == 0 || (n < 0 && errno != EAGAIN)) {
          c.phase = Phase::Relaying;  // the client closed without a word: relay the close
          progress = true;
        } else {
          char b;
          if (::recv(c.server.fd.get(), &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) {
            c.phase = Phase::Relaying;  // the server speaks first (or closed): not HTTP
            stats_.tunnelled++;
            progress = true;
          }
        }
        break;
      }
      case Phase::ClientHello:
      case Phase::UpstreamTls:
      case Phase::ClientTls:
        progress = drive_tls(c);
        break;
      case Phase::Relaying:
        progress = relay(c);
        break;
    }
    if (!progress) break;
  }
  if (!c.dead) update_interest(c);
}

int RecordProxy::client_hello(SSL* ssl, int* alert, void* arg) {
  auto* proxy = static_cast<RecordProxy*>(arg);
  auto* c = static_cast<Connection*>(SSL_get_app_data(ssl));
  if (!c->upstream_ready) {
    // First call: learn the name, then pause this handshake until the server's is done, so
    // that a server we cannot reach or verify is never impersonated.
    const unsigned char* p;
    size_t length;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &length) && length > 5 && p[2] == 0) {
      const size_t name_length = (static_cast<size_t>(p[3]) << 8) | p[4];
      if (5 + name_length <= length)
        c->server_name = ascii_lowercase(std::string(reinterpret_cast<const char*>(p + 5), name_length));
    }
    return SSL_CLIENT_HELLO_RETRY;
  }
  try {
    SSL_CTX* context = proxy->ca_.server_context(c->server_name.empty() ? c->ip : c->server_name);
    if (SSL_set_SSL_CTX(ssl, context) == nullptr) throw std::runtime_error("cannot use the minted certificate");
    return SSL_CLIENT_HELLO_SUCCESS;
  } catch (const std::exception& e) {
    std::cerr << "mm-record: minting a certificate for " << c->where() << ": " << e.what() << std::endl;
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
}

bool RecordProxy::start_server_tls(Connection& c) {
  c.server.ssl.reset(SSL_new(upstream_context_.get()));
  SSL* ssl = c.server.ssl.get();
  if (!ssl) {
    fail(c, "OpenSSL: " + openssl_errors());
    return false;
  }
  if (!c.server_name.empty() && !is_ip_literal(c.server_name)) {
    SSL_set_tlsext_host_name(ssl, c.server_name.c_str());
    SSL_set1_host(ssl, c.server_name.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), c.server_name.empty() ? c.ip.c_str() : c.server_name.c_str());
  }
  SSL_set_fd(ssl, c.server.fd.get());
  SSL_set_connect_state(ssl);
  return true;
}

bool RecordProxy::drive_tls(Connection& c) {
  using Phase = Connection::Phase;
  if (c.phase == Phase::ClientHello || c.phase == Phase::ClientTls) {
    SSL* ssl = c.client.ssl.get();
    ERR_clear_error();
    const int r = SSL_do_handshake(ssl);
    if (r == 1) {
      const unsigned char* protocol;
      unsigned int length;
      SSL_get0_alpn_selected(ssl, &protocol, &length);
      c.alpn.assign(reinterpret_cast<const char*>(protocol), length);
      c.https = true;
      c.phase = Phase::Relaying;
      c.parsing_requests = c.parsing_responses = true;
      c.client.tls_wants_read = c.client.tls_wants_write = false;
      return true;
    }
    const int err = SSL_get_error(ssl, r);
    if (err == SSL_ERROR_WANT_CLIENT_HELLO_CB && c.phase == Phase::ClientHello) {
      c.client.tls_wants_read = c.client.tls_wants_write = false;
      if (!start_server_tls(c)) return false;
      c.phase = Phase::UpstreamTls;
      return true;
    }
    c.client.note_tls(err);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return false;
    const std::string why = err == SSL_ERROR_SYSCALL ? "the client closed the connection" : openssl_errors();
    if (c.phase == Phase::ClientTls) {
      fail(c, "TLS with the client for " + c.where() + " failed: " + why +
                  " (does the program trust the local CA? see mm-ca trust, or mm-ca spki for Chromium's "
                  "--ignore-certificate-errors-spki-list)");
    } else {
      fail(c, "TLS with the client for " + c.where() + " failed: " + why);
    }
    return false;
  }
  // Upstream handshake.
  SSL* ssl = c.server.ssl.get();
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl);
  if (r == 1) {
    c.server.tls_wants_read = c.server.tls_wants_write = false;
    c.upstream_ready = true;
    c.phase = Phase::ClientTls;
    return true;
  }
  const int err = SSL_get_error(ssl, r);
  c.server.note_tls(err);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return false;
  std::string why;
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    why = std::string("the server's certificate is not trusted: ") + X509_verify_cert_error_string(verify) +
          " (give a CA bundle with its issuer by --upstream-ca=FILE or SSL_CERT_FILE, or use --insecure-upstream)";
  } else if (err == SSL_ERROR_SYSCALL) {
    why = ERR_peek_error() ? openssl_errors() : "the server closed the connection during the handshake";
  } else {
    why = openssl_errors();
  }
  fail(c, "TLS to " + c.where() + " failed: " + why + "; the client's connection was reset");
  return false;
}

bool RecordProxy::relay(Connection& c) {
  bool progress = false;
  if (!c.client.flush() || !c.server.flush()) {
    if (options_.verbose)
      std::cerr << "mm-record: " << c.where() << ": " << c.client.error << c.server.error << std::endl;
    close(c, true);
    return false;
  }
  // Client to server.
  if (!c.client.read_closed && c.server.pending() < kHighWater) {
    const ssize_t n = c.client.read(buffer_.data(), buffer_.size());
    if (n > 0) {
      on_client_bytes(c, std::string_view(buffer_.data(), static_cast<size_t>(n)));
      progress = true;
    } else if (n == 0) {
      c.client.read_closed = true;
      progress = true;
    } else if (n == kFailed) {
      close(c, true);
      return false;
    }
  }
  if (c.dead) return false;
  // Server to client.
  if (!c.server.read_closed && c.client.pending() < kHighWater) {
    const ssize_t n = c.server.read(buffer_.data(), buffer_.size());
    if (n > 0) {
      on_server_bytes(c, std::string_view(buffer_.data(), static_cast<size_t>(n)));
      progress = true;
    } else if (n == 0 || n == kFailed) {
      c.server.read_closed = true;
      if (c.parsing_responses) {
        const bool clean = c.responses.finish();  // ends a close-delimited body
        take_responses(c, now_us(), false);
        if (!clean && options_.verbose)
          std::cerr << "mm-record: " << c.where() << ": the server closed in the middle of a response" << std::endl;
        c.parsing_responses = false;
      }
      if (n == kFailed) {
        close(c, true);  // reset: pass it on
        return false;
      }
      progress = true;
    }
  }
  if (c.dead) return false;
  if (c.client.read_closed && c.server.pending() == 0 && !c.server.write_shut) {
    c.server.shut_write();
    progress = true;
  }
  if (c.server.read_closed && c.client.pending() == 0 && !c.client.write_shut) {
    c.client.shut_write();
    progress = true;
  }
  if (c.client.read_closed && c.server.read_closed && c.client.pending() == 0 && c.server.pending() == 0) {
    close(c, false);
    return false;
  }
  return progress;
}

void RecordProxy::on_client_bytes(Connection& c, std::string_view data) {
  if (c.parsing_requests) {
    const uint64_t now = now_us();
    const bool was_idle = !c.requests.in_message();
    c.requests.feed(data);
    take_requests(c, now, was_idle);
    if (c.requests.state() != HttpParser::State::Http) {
      c.parsing_requests = false;
      if (c.pending.empty()) c.parsing_responses = false;
      stats_.tunnelled++;
      if (options_.verbose && c.requests.state() == HttpParser::State::Error)
        std::cerr << "mm-record: " << c.where() << ": not HTTP from the client (" << c.requests.error()
                  << "); relaying unrecorded" << std::endl;
    }
  }
  if (!c.server.send(data)) close(c, true);
}

void RecordProxy::on_server_bytes(Connection& c, std::string_view data) {
  if (c.parsing_responses) {
    const uint64_t now = now_us();
    const bool was_idle = !c.responses.in_message();
    c.responses.feed(data);
    take_responses(c, now, was_idle);
    if (c.responses.state() != HttpParser::State::Http) {
      c.parsing_requests = c.parsing_responses = false;
      if (c.responses.state() == HttpParser::State::Error) {
        stats_.tunnelled++;
        if (options_.verbose)
          std::cerr << "mm-record: " << c.where() << ": not HTTP from the server (" << c.responses.error()
                    << "); relaying unrecorded" << std::endl;
      }
    } else if (!c.parsing_requests && c.pending.empty() && !c.responses.in_message()) {
      c.parsing_responses = false;  // the requests stopped being HTTP: nothing more to pair
    }
  }
  if (!c.client.send(data)) close(c, true);
}

void RecordProxy::take_requests(Connection& c, uint64_t now, bool was_idle) {
  bool completed = false;
  while (c.requests.has_completed()) {
    HttpParser::Completed done = c.requests.pop_completed();
    const uint64_t start = (!completed && !was_idle) ? c.request_start_us : now;
    completed = true;
    c.responses.expect_response_to(split_request_line(done.message.first_line).method);
    c.pending.push_back({std::move(done.message), start, now});
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
    if (!c.alpn.empty()) {
      pair.protocol = c.alpn;
    } else {
      pair.protocol = ascii_lowercase(split_request_line(pair.request.first_line).version);
    }
    writer_.write(std::move(pair));
    c.pairs++;
    stats_.pairs++;
  }
  if (c.responses.in_message() && (was_idle || completed)) c.response_start_us = now;
}

void RecordProxy::update_interest(Connection& c) {
  using Phase = Connection::Phase;
  uint32_t client = 0, server = 0;
  const auto tls = [](const Endpoint& e) {
    return (e.tls_wants_read ? EPOLLIN : 0u) | (e.tls_wants_write ? EPOLLOUT : 0u);
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
        if (!from->read_closed && to->pending() < kHighWater) *events |= EPOLLIN;
        if (from->pending() > 0) *events |= EPOLLOUT;
        *events |= tls(*from);
      }
      break;
  }
  if (client != c.client.interest) {
    epoll_.modify(c.client.fd.get(), client, c.id * 2);
    c.client.interest = client;
  }
  if (server != c.server.interest) {
    epoll_.modify(c.server.fd.get(), server, c.id * 2 + 1);
    c.server.interest = server;
  }
}

void RecordProxy::close(Connection& c, bool reset) {
  if (c.dead) return;
  c.dead = true;
  if (reset) {
    reset_on_close(c.client.fd.get());
    reset_on_close(c.server.fd.get());
  }
  epoll_.remove(c.client.fd.get());
  epoll_.remove(c.server.fd.get());
  if (options_.verbose)
    std::cerr << "mm-record: " << c.where() << (c.https ? " https" : "") << ": " << c.pairs << " pairs" << std::endl;
}

void RecordProxy::fail(Connection& c, const std::string& why) {
  stats_.failed++;
  std::cerr << "mm-record: " << why << std::endl;
  close(c, true);
}
