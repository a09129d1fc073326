// SPDX-License-Identifier: GPL-3.0-or-later
// TlsStream over a socket pair: plain bytes, buffering of what the socket does not take,
// half-close, and TLS with a certificate from a temporary local CA (handshake, a paused client
// hello, an untrusted certificate, close_notify). No network.
#include <fcntl.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "expect.hh"
#include "tls/certificate_authority.hh"
#include "tls/tls_stream.hh"

namespace fs = std::filesystem;

namespace {
// Two connected non-blocking stream sockets.
std::pair<TlsStream, TlsStream> stream_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::runtime_error("socketpair");
  return {TlsStream(FileDescriptor(fds[0])), TlsStream(FileDescriptor(fds[1]))};
}

// Reads what is there now (until kWouldBlock or the end).
std::string read_available(TlsStream& stream) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = stream.read(buffer, sizeof buffer);
    if (n <= 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

// A CA in a fresh directory under /tmp, removed afterwards.
class TemporaryCa {
 public:
  TemporaryCa() {
    char name[] = "/tmp/mm-tls-stream-test-XXXXXX";
    if (!::mkdtemp(name)) throw std::runtime_error("mkdtemp failed");
    directory_ = name;
    ca_ = std::make_unique<CertificateAuthority>(CertificateAuthority::load_or_create(directory_ / "ca"));
  }
  ~TemporaryCa() {
    std::error_code ignored;
    fs::remove_all(directory_, ignored);
  }
  CertificateAuthority& ca() { return *ca_; }

 private:
  fs::path directory_;
  std::unique_ptr<CertificateAuthority> ca_;
};

struct ContextFree {
  void operator()(SSL_CTX* context) const { SSL_CTX_free(context); }
};
using ContextPtr = std::unique_ptr<SSL_CTX, ContextFree>;

// A client context that trusts `ca` (or nothing, if null) and checks the server's name.
ContextPtr client_context(const CertificateAuthority* ca) {
  ContextPtr context(SSL_CTX_new(TLS_client_method()));
  if (ca) {
    EXPECT_EQ(SSL_CTX_load_verify_locations(context.get(), ca->certificate_path().c_str(), nullptr), 1);
  }
  SSL_CTX_set_verify(context.get(), SSL_VERIFY_PEER, nullptr);
  return context;
}

void start_client(TlsStream& client, SSL_CTX* context) {
  SSL* ssl = SSL_new(context);
  client.start_tls(ssl);
  SSL_set_tlsext_host_name(ssl, "localhost");
  SSL_set1_host(ssl, "localhost");
  SSL_set_connect_state(ssl);
}

void start_server(TlsStream& server, SSL_CTX* context) {
  SSL* ssl = SSL_new(context);
  server.start_tls(ssl);
  SSL_set_accept_state(ssl);
}

// Drives both handshakes in turn until neither is blocked; returns their last states.
std::pair<TlsStream::Handshake, TlsStream::Handshake> handshake(TlsStream& client, TlsStream& server,
                                                                bool* server_paused = nullptr) {
  using Handshake = TlsStream::Handshake;
  Handshake c = Handshake::Blocked, s = Handshake::Blocked;
  for (int round = 0; round < 100; round++) {
    if (c == Handshake::Blocked) c = client.handshake();
    if (s == Handshake::Blocked || s == Handshake::HelloPaused) {
      s = server.handshake();
      if (s == Handshake::HelloPaused && server_paused) *server_paused = true;
    }
    if (c != Handshake::Blocked && s != Handshake::Blocked && s != Handshake::HelloPaused) break;
    if (c == Handshake::Failed || s == Handshake::Failed) break;
  }
  return {c, s};
}
}  // namespace

TEST(TlsStream, plain_bytes_pass_and_shut_write_ends_the_stream) {
  auto [a, b] = stream_pair();
  char byte;
  EXPECT_EQ(b.read(&byte, 1), TlsStream::kWouldBlock);
  ASSERT_TRUE(a.send("hello, "));
  ASSERT_TRUE(a.send("world"));
  EXPECT_EQ(a.pending(), 0u);
  EXPECT_EQ(read_available(b), "hello, world");
  EXPECT_FALSE(b.read_closed());
  a.shut_write();
  EXPECT_TRUE(a.write_shut());
  EXPECT_EQ(b.read(&byte, 1), 0);
  EXPECT_TRUE(b.read_closed());
  ASSERT_TRUE(b.send("still open this way"));
  EXPECT_EQ(read_available(a), "still open this way");
}

TEST(TlsStream, plain_send_keeps_what_the_socket_does_not_take_until_flushed) {
  auto [a, b] = stream_pair();
  const std::string big(4 << 20, 'x');
  ASSERT_TRUE(a.send(big));
  ASSERT_GT(a.pending(), 0u);
  ASSERT_TRUE(a.send("end"));
  std::string received;
  for (int round = 0; round < 100000 && received.size() < big.size() + 3; round++) {
    received += read_available(b);
    ASSERT_TRUE(a.flush());
  }
  EXPECT_EQ(a.pending(), 0u);
  EXPECT_EQ(received, big + "end");
}

TEST(TlsStream, plain_failures_say_why) {
  TlsStream directory(FileDescriptor(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
  char buffer[16];
  EXPECT_EQ(directory.read(buffer, sizeof buffer), TlsStream::kFailed);
  EXPECT_EQ(directory.error(), std::strerror(EISDIR));

  auto [a, b] = stream_pair();
  { TlsStream gone = std::move(b); }
  EXPECT_FALSE(a.send("to nobody"));
  EXPECT_EQ(a.error(), std::strerror(EPIPE));
}

TEST(TlsStream, reset_on_close_sets_a_zero_linger) {
  auto [a, b] = stream_pair();
  a.reset_on_close();
  linger value{};
  socklen_t length = sizeof value;
  ASSERT_EQ(::getsockopt(a.fd(), SOL_SOCKET, SO_LINGER, &value, &length), 0);
  EXPECT_EQ(value.l_onoff, 1);
  EXPECT_EQ(value.l_linger, 0);
}

TEST(TlsStream, tls_handshake_then_bytes_both_ways_then_close_notify) {
  TemporaryCa temporary;
  const ContextPtr trusting = client_context(&temporary.ca());
  auto [client, server] = stream_pair();
  start_client(client, trusting.get());
  start_server(server, temporary.ca().server_context("localhost"));
  const auto [c, s] = handshake(client, server);
  ASSERT_EQ(c, TlsStream::Handshake::Done) << client.error();
  ASSERT_EQ(s, TlsStream::Handshake::Done) << server.error();
  EXPECT_FALSE(client.tls_wants_read() || client.tls_wants_write());

  ASSERT_TRUE(client.send("GET / HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(read_available(server), "GET / HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(server.tls_wants_read());  // read until nothing was left
  ASSERT_TRUE(server.send("HTTP/1.1 204 No Content\r\n\r\n"));
  EXPECT_EQ(read_available(client), "HTTP/1.1 204 No Content\r\n\r\n");

  server.shut_write();
  char byte;
  EXPECT_EQ(client.read(&byte, 1), 0);
  EXPECT_TRUE(client.read_closed());
}

TEST(TlsStream, tls_client_hello_callback_pauses_the_handshake) {
  TemporaryCa temporary;
  // The record proxy's pattern: answer with a certificate only on the second call.
  ContextPtr hello(SSL_CTX_new(TLS_server_method()));
  struct State {
    CertificateAuthority* ca;
    int calls = 0;
  } state{&temporary.ca()};
  SSL_CTX_set_client_hello_cb(
      hello.get(),
      [](SSL* ssl, int*, void* arg) {
        auto* st = static_cast<State*>(arg);
        if (st->calls++ == 0) return SSL_CLIENT_HELLO_RETRY;
        SSL_set_SSL_CTX(ssl, st->ca->server_context("localhost"));
        return SSL_CLIENT_HELLO_SUCCESS;
      },
      &state);
  const ContextPtr trusting = client_context(&temporary.ca());
  auto [client, server] = stream_pair();
  start_client(client, trusting.get());
  start_server(server, hello.get());
  bool paused = false;
  const auto [c, s] = handshake(client, server, &paused);
  EXPECT_TRUE(paused);
  EXPECT_EQ(c, TlsStream::Handshake::Done) << client.error();
  EXPECT_EQ(s, TlsStream::Handshake::Done) << server.error();
  EXPECT_EQ(state.calls, 2);
}

TEST(TlsStream, tls_untrusted_certificate_fails_with_openssls_reason) {
  TemporaryCa temporary;
  const ContextPtr trusting_nothing = client_context(nullptr);
  auto [client, server] = stream_pair();
  start_client(client, trusting_nothing.get());
  start_server(server, temporary.ca().server_context("localhost"));
  const auto [c, s] = handshake(client, server);
  ASSERT_EQ(c, TlsStream::Handshake::Failed);
  EXPECT_FALSE(client.peer_closed());
  EXPECT_NE(client.error().find("certificate verify failed"), std::string::npos) << client.error();
  EXPECT_NE(SSL_get_verify_result(client.ssl()), X509_V_OK);
}

TEST(TlsStream, tls_peer_hanging_up_during_the_handshake_fails) {
  TemporaryCa temporary;
  const ContextPtr trusting = client_context(&temporary.ca());
  auto [client, server] = stream_pair();
  start_client(client, trusting.get());
  ASSERT_EQ(client.handshake(), TlsStream::Handshake::Blocked);
  EXPECT_TRUE(client.tls_wants_read());
  { TlsStream gone = std::move(server); }
  EXPECT_EQ(client.handshake(), TlsStream::Handshake::Failed);
  EXPECT_TRUE(client.peer_closed() || !client.error().empty());
}
