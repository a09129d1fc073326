// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The HTTP/3 server's own parts, shared by its files (http3_server.cc: the loop and the
// endpoints; http3_connection.cc: a connection; http3_callbacks.cc: ngtcp2's and nghttp3's
// callbacks): its bounds, an endpoint, a request's stream, the server's state, and one QUIC
// connection with its HTTP/3 session (class http3::Connection: its set-up, reads, writes, timers
// and closing in http3_connection.cc; the libraries' callbacks, which reach its state, in
// http3_callbacks.cc). One header for all: the server's state holds the connections, and each
// connection reaches the server's state. Only quic/ sees this header, so the libraries' types
// may show here.
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <array>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "quic/http3_server.hh"
#include "util/clock.hh"
#include "util/epoll.hh"
#include "util/file_descriptor.hh"

namespace http3 {
constexpr size_t kCidLength = 18;
constexpr uint64_t kMaxStreamsBidi = 100;
constexpr size_t kMaxHeaderBytes = 64 * 1024;  // per request: beyond, a 431
constexpr size_t kMaxServiceSamples = 1 << 20;
constexpr size_t kMaxPacketsPerWrite = 64;  // then the loop turns to the others
constexpr size_t kMaxDatagramsPerRead = 64;
constexpr Nanos kHandshakeTimeout = 10 * kNanosPerSec;
constexpr Nanos kIdleTimeout = 30 * kNanosPerSec;
// TLS 1.3 only, the AEADs QUIC defines, the usual groups (ngtcp2's own example uses the same set).
constexpr const char* kPriorities =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1";

inline ngtcp2_tstamp stamp(Nanos now) { return static_cast<ngtcp2_tstamp>(now); }

inline std::string cid_key(const uint8_t* data, size_t length) {
  return std::string(reinterpret_cast<const char*>(data), length);
}

struct Endpoint {
  FileDescriptor socket;
  sockaddr_in address{};
  std::string name;  // "ip:port"
  gnutls_certificate_credentials_t credentials = nullptr;
  ~Endpoint() {
    if (credentials) gnutls_certificate_free_credentials(credentials);
  }
};

struct Stream {
  int64_t id = 0;
  Http3Request request;
  size_t header_bytes = 0;
  bool too_large = false;
  Http3Response response;
  bool body_handed = false;
  uint64_t unacked = 0;  // bytes handed to QUIC and not yet acknowledged
};

class Connection;

// Whether anything in a new connection's first datagram decrypted (see on_decrypt).
extern thread_local bool g_decrypted;
}  // namespace http3

// The server: its endpoints, its connections by ID, its statistics (guarded by stats_mutex).
struct Http3Server::Impl {
  Impl(Handler h, Http3ServerOptions o) : handler(std::move(h)), options(std::move(o)) {}
  ~Impl();

  void run();
  void after_reads(Nanos now);  // expired timers, then the writes of the connections that read
  void on_datagram(http3::Endpoint& endpoint, const sockaddr_in& from, const uint8_t* data, size_t length, Nanos now);
  void send_version_negotiation(http3::Endpoint& endpoint, const sockaddr_in& to, const ngtcp2_version_cid& vc);
  void remove(http3::Connection* connection);
  void send(http3::Endpoint& endpoint, const ngtcp2_addr& to, const uint8_t* data, size_t length);
  void random_bytes(uint8_t* out, size_t length) {
    for (size_t i = 0; i < length; i++) out[i] = static_cast<uint8_t>(rng());
  }

  Handler handler;
  Http3ServerOptions options;
  std::vector<std::unique_ptr<http3::Endpoint>> endpoints;
  Epoll epoll;
  FileDescriptor stop_fd;
  std::thread thread;
  std::mutex lifecycle;
  bool started = false, stopped = false;

  std::mt19937_64 rng{std::random_device{}()};
  std::array<uint8_t, 32> reset_secret{};
  std::unordered_map<std::string, http3::Connection*> by_cid;
  std::unordered_map<http3::Connection*, std::unique_ptr<http3::Connection>> connections;
  std::vector<http3::Connection*> touched;  // read something since the last writes

  mutable std::mutex stats_mutex;
  Http3Stats stats;
};

namespace http3 {
class Connection {
 public:
  enum class State { kActive, kClosing, kDraining };

  Connection(Http3Server::Impl& server, Endpoint& endpoint) : server_(server), endpoint_(endpoint) {
    reference_.get_conn = [](ngtcp2_crypto_conn_ref* ref) { return static_cast<Connection*>(ref->user_data)->conn_; };
    reference_.user_data = this;
    ngtcp2_connection_close_error_default(&close_error_);
  }
  ~Connection() {
    if (h3_) nghttp3_conn_del(h3_);
    if (conn_) ngtcp2_conn_del(conn_);
    if (tls_) gnutls_deinit(tls_);
    if (qlog_) std::fclose(qlog_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sets up the QUIC connection for the client's first Initial (header `hd`). False: drop it.
  // (write() marks the connection touched again when it stopped at its packet budget.)
  bool accept(const ngtcp2_pkt_hd& hd, const sockaddr_in& from, Nanos now);
  void read(const sockaddr_in& from, const uint8_t* data, size_t length, Nanos now);
  void write(Nanos now);
  // Its next deadline (kNever if none): the library's timers, or the end of closing/draining.
  Nanos expiry() const;
  void on_expiry(Nanos now);  // may remove this connection
  void count_sent(int64_t stream_id, ngtcp2_ssize accepted);
  void rearm_loss_detection();
  State state() const { return state_; }
  std::vector<std::string>& keys() { return keys_; }

 private:
  static Connection& of(void* user_data) { return *static_cast<Connection*>(user_data); }
  bool setup_tls();
  int setup_h3();
  void start_closing(Nanos now);
  void start_draining(Nanos now);
  void fail(int liberr);  // records the error the CONNECTION_CLOSE will carry
  void answer(Stream& stream);
  void submit(Stream& stream);
  void add_key(const uint8_t* data, size_t length);

  // ngtcp2's callbacks
  static int on_recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t, const uint8_t* data,
                                 size_t length, void* user, void*);
  static int on_acked_stream_data_offset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t length, void* user, void*);
  static int on_stream_close(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t code, void* user, void*);
  static int on_stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t, void* user, void*);
  static int on_stream_stop_sending(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*);
  static int on_extend_max_remote_streams_bidi(ngtcp2_conn*, uint64_t max, void* user);
  static int on_extend_max_stream_data(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*);
  static void on_rand(uint8_t* out, size_t length, const ngtcp2_rand_ctx* ctx);
  static int on_decrypt(uint8_t* dest, const ngtcp2_crypto_aead* aead, const ngtcp2_crypto_aead_ctx* aead_ctx,
                        const uint8_t* ciphertext, size_t length, const uint8_t* nonce, size_t nonce_length,
                        const uint8_t* aad, size_t aad_length);
  static int on_get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t length, void* user);
  static int on_remove_connection_id(ngtcp2_conn*, const ngtcp2_cid* cid, void* user);
  static int on_handshake_completed(ngtcp2_conn*, void* user);
  static void on_qlog(void* user, uint32_t flags, const void* data, size_t length);
  // nghttp3's callbacks
  static int on_h3_stream_close(nghttp3_conn*, int64_t stream_id, uint64_t, void* user, void*);
  static int on_h3_recv_data(nghttp3_conn*, int64_t stream_id, const uint8_t*, size_t length, void* user, void*);
  static int on_h3_deferred_consume(nghttp3_conn*, int64_t stream_id, size_t consumed, void* user, void*);
  static int on_h3_begin_headers(nghttp3_conn*, int64_t stream_id, void* user, void*);
  static int on_h3_recv_header(nghttp3_conn*, int64_t, int32_t token, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                               uint8_t, void*, void* stream);
  static int on_h3_end_stream(nghttp3_conn*, int64_t, void* user, void* stream);
  static int on_h3_stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t code, void* user, void*);
  static int on_h3_reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t code, void* user, void*);
  static nghttp3_ssize on_h3_read_data(nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t count, uint32_t* flags, void*,
                                       void* stream);

  Http3Server::Impl& server_;
  Endpoint& endpoint_;
  ngtcp2_conn* conn_ = nullptr;
  nghttp3_conn* h3_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  ngtcp2_crypto_conn_ref reference_{};
  ngtcp2_connection_close_error close_error_{};
  bool error_set_ = false;
  bool handshake_counted_ = false;
  bool pinging_ = false;  // a PING is asked for (see rearm_loss_detection)
  // Bytes handed to QUIC and not yet acknowledged: on all streams, and on those that are not a
  // request's (the control and QPACK streams: a lost QPACK instruction blocks every response).
  uint64_t unacked_ = 0, unacked_other_ = 0;
  std::FILE* qlog_ = nullptr;
  State state_ = State::kActive;
  Nanos close_deadline_ = kNever;
  std::vector<uint8_t> close_packet_;
  sockaddr_in close_to_{};
  uint64_t datagrams_while_closing_ = 0;
  std::vector<std::string> keys_;  // this connection's keys in server_.by_cid
  std::unordered_map<int64_t, std::unique_ptr<Stream>> streams_;
  // Responses waiting for their delay (Http3Response::delay_ns): when, and the stream's id (a
  // stream the client closed meanwhile is gone from streams_, and its response with it).
  std::vector<std::pair<Nanos, int64_t>> delayed_;
  std::array<uint8_t, 65536> buffer_{};
};
}  // namespace http3
