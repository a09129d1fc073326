// SPDX-License-Identifier: GPL-3.0-or-later
// The HTTP/3 server: ngtcp2 (QUIC), nghttp3 (HTTP/3, QPACK), GnuTLS (TLS 1.3), one thread.
//
// The loop: epoll over the endpoints' UDP sockets and a stop eventfd, with a timeout at the
// earliest connection expiry. A datagram is routed by its Destination Connection ID to a
// connection (every ID the server issued, and the client's original one while the handshake
// lasts, are keys of one map); an unknown ID carrying a valid Initial makes a new connection.
// Each connection that read something, or whose timer expired, then writes what it can. Every
// library call takes the same `now`, read once per wake-up.
#include "quic/http3_server.hh"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "util/address.hh"
#include "util/clock.hh"
#include "util/epoll.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
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

ngtcp2_tstamp stamp(Nanos now) { return static_cast<ngtcp2_tstamp>(now); }

std::string cid_key(const uint8_t* data, size_t length) {
  return std::string(reinterpret_cast<const char*>(data), length);
}

bool is_connection_specific(std::string_view name) {
  for (const char* n : {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"}) {
    if (equals_ignoring_case(name, n)) return true;
  }
  return false;
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
}  // namespace

struct Http3Server::Impl {
  Impl(Handler h, Http3ServerOptions o) : handler(std::move(h)), options(std::move(o)) {}
  ~Impl();

  void run();
  void after_reads(Nanos now);  // expired timers, then the writes of the connections that read
  void on_datagram(Endpoint& endpoint, const sockaddr_in& from, const uint8_t* data, size_t length, Nanos now);
  void send_version_negotiation(Endpoint& endpoint, const sockaddr_in& to, const ngtcp2_version_cid& vc);
  void remove(Connection* connection);
  void send(Endpoint& endpoint, const ngtcp2_addr& to, const uint8_t* data, size_t length);
  void random_bytes(uint8_t* out, size_t length) {
    for (size_t i = 0; i < length; i++) out[i] = static_cast<uint8_t>(rng());
  }

  Handler handler;
  Http3ServerOptions options;
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  Epoll epoll;
  FileDescriptor stop_fd;
  std::thread thread;
  std::mutex lifecycle;
  bool started = false, stopped = false;

  std::mt19937_64 rng{std::random_device{}()};
  std::array<uint8_t, 32> reset_secret{};
  std::unordered_map<std::string, Connection*> by_cid;
  std::unordered_map<Connection*, std::unique_ptr<Connection>> connections;
  std::vector<Connection*> touched;  // read something since the last writes

  mutable std::mutex stats_mutex;
  Http3Stats stats;
};

namespace {
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

void Connection::add_key(const uint8_t* data, size_t length) {
  std::string key = cid_key(data, length);
  if (server_.by_cid.emplace(key, this).second) keys_.push_back(std::move(key));
}

bool Connection::accept(const ngtcp2_pkt_hd& hd, const sockaddr_in& from, Nanos now) {
  ngtcp2_cid scid;
  scid.datalen = kCidLength;
  server_.random_bytes(scid.data, scid.datalen);

  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = stamp(now);
  settings.cc_algo = NGTCP2_CC_ALGO_CUBIC;
  settings.handshake_timeout = static_cast<ngtcp2_duration>(kHandshakeTimeout);
  if (!server_.options.qlog_dir.empty()) {
    const fs::path file = server_.options.qlog_dir / (hex_bytes(hd.dcid.data, hd.dcid.datalen) + ".sqlog");
    qlog_ = std::fopen(file.c_str(), "wxe");
    if (qlog_) {
      settings.qlog.odcid = hd.dcid;
      settings.qlog.write = on_qlog;
    }
  }

  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = 256 * 1024;
  params.initial_max_stream_data_bidi_remote = 256 * 1024;
  params.initial_max_stream_data_uni = 256 * 1024;
  params.initial_max_data = 1024 * 1024;
  params.initial_max_streams_bidi = kMaxStreamsBidi;
  params.initial_max_streams_uni = 3;  // the client's control and QPACK streams
  params.max_idle_timeout = static_cast<ngtcp2_duration>(kIdleTimeout);
  params.active_connection_id_limit = 7;
  params.original_dcid = hd.dcid;
  params.stateless_reset_token_present = 1;
  ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token, server_.reset_secret.data(),
                                               server_.reset_secret.size(), &scid);

  ngtcp2_callbacks callbacks{};
  callbacks.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
  callbacks.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  callbacks.encrypt = ngtcp2_crypto_encrypt_cb;
  callbacks.decrypt = on_decrypt;
  callbacks.hp_mask = ngtcp2_crypto_hp_mask_cb;
  callbacks.update_key = ngtcp2_crypto_update_key_cb;
  callbacks.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  callbacks.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  callbacks.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  callbacks.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  callbacks.recv_stream_data = on_recv_stream_data;
  callbacks.acked_stream_data_offset = on_acked_stream_data_offset;
  callbacks.stream_close = on_stream_close;
  callbacks.stream_reset = on_stream_reset;
  callbacks.stream_stop_sending = on_stream_stop_sending;
  callbacks.extend_max_remote_streams_bidi = on_extend_max_remote_streams_bidi;
  callbacks.extend_max_stream_data = on_extend_max_stream_data;
  callbacks.rand = on_rand;
  callbacks.get_new_connection_id = on_get_new_connection_id;
  callbacks.remove_connection_id = on_remove_connection_id;
  callbacks.handshake_completed = on_handshake_completed;
  settings.rand_ctx.native_handle = &server_;

  sockaddr_in remote = from;
  ngtcp2_path path{{reinterpret_cast<ngtcp2_sockaddr*>(&endpoint_.address), sizeof endpoint_.address},
                   {reinterpret_cast<ngtcp2_sockaddr*>(&remote), sizeof remote},
                   nullptr};
  if (ngtcp2_conn_server_new(&conn_, &hd.scid, &scid, &path, hd.version, &callbacks, &settings, &params, nullptr,
                             this) != 0) {
    return false;
  }
  if (!setup_tls()) return false;
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  add_key(hd.dcid.data, hd.dcid.datalen);  // the client's Initials until it learns ours
  add_key(scid.data, scid.datalen);
  return true;
}

bool Connection::setup_tls() {
  if (gnutls_init(&tls_, GNUTLS_SERVER | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA) != 0) return false;
  if (ngtcp2_crypto_gnutls_configure_server_session(tls_) != 0) return false;
  if (gnutls_priority_set_direct(tls_, kPriorities, nullptr) != 0) return false;
  if (gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, endpoint_.credentials) != 0) return false;
  static const char kAlpn[] = "h3";
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>(kAlpn)), 2};
  if (gnutls_alpn_set_protocols(tls_, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0) return false;
  gnutls_session_set_ptr(tls_, &reference_);
  return true;
}

int Connection::setup_h3() {
  if (h3_) return 0;
  if (ngtcp2_conn_get_streams_uni_left(conn_) < 3) return NGTCP2_ERR_CALLBACK_FAILURE;
  nghttp3_callbacks callbacks{};
  callbacks.stream_close = on_h3_stream_close;
  callbacks.recv_data = on_h3_recv_data;
  callbacks.deferred_consume = on_h3_deferred_consume;
  callbacks.begin_headers = on_h3_begin_headers;
  callbacks.recv_header = on_h3_recv_header;
  callbacks.end_stream = on_h3_end_stream;
  callbacks.stop_sending = on_h3_stop_sending;
  callbacks.reset_stream = on_h3_reset_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.max_field_section_size = kMaxHeaderBytes;
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  if (nghttp3_conn_server_new(&h3_, &callbacks, &settings, nghttp3_mem_default(), this) != 0) {
    h3_ = nullptr;
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  nghttp3_conn_set_max_client_streams_bidi(h3_, kMaxStreamsBidi);
  int64_t control, encoder, decoder;
  if (ngtcp2_conn_open_uni_stream(conn_, &control, nullptr) != 0 ||
      nghttp3_conn_bind_control_stream(h3_, control) != 0 ||
      ngtcp2_conn_open_uni_stream(conn_, &encoder, nullptr) != 0 ||
      ngtcp2_conn_open_uni_stream(conn_, &decoder, nullptr) != 0 ||
      nghttp3_conn_bind_qpack_streams(h3_, encoder, decoder) != 0) {
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

void Connection::fail(int liberr) {
  if (error_set_) return;
  error_set_ = true;
  if (liberr == NGTCP2_ERR_CRYPTO) {
    ngtcp2_connection_close_error_set_transport_error_tls_alert(&close_error_, ngtcp2_conn_get_tls_alert(conn_),
                                                                nullptr, 0);
  } else {
    ngtcp2_connection_close_error_set_transport_error_liberr(&close_error_, liberr, nullptr, 0);
  }
}

void Connection::read(const sockaddr_in& from, const uint8_t* data, size_t length, Nanos now) {
  if (state_ == State::kDraining) return;
  if (state_ == State::kClosing) {
    // Answer with the CONNECTION_CLOSE again, ever more rarely (1st, 2nd, 4th, 8th... datagram).
    const uint64_t n = ++datagrams_while_closing_;
    if ((n & (n - 1)) == 0) {
      ngtcp2_addr to{reinterpret_cast<ngtcp2_sockaddr*>(&close_to_), sizeof close_to_};
      server_.send(endpoint_, to, close_packet_.data(), close_packet_.size());
    }
    return;
  }
  sockaddr_in remote = from;
  ngtcp2_path path{{reinterpret_cast<ngtcp2_sockaddr*>(&endpoint_.address), sizeof endpoint_.address},
                   {reinterpret_cast<ngtcp2_sockaddr*>(&remote), sizeof remote},
                   nullptr};
  ngtcp2_pkt_info info{};
  const int rv = ngtcp2_conn_read_pkt(conn_, &path, &info, data, length, stamp(now));
  if (rv == 0) {
    if (std::find(server_.touched.begin(), server_.touched.end(), this) == server_.touched.end())
      server_.touched.push_back(this);
    return;
  }
  if (rv == NGTCP2_ERR_DRAINING) return start_draining(now);
  if (rv == NGTCP2_ERR_DROP_CONN || rv == NGTCP2_ERR_RETRY) return server_.remove(this);
  fail(rv);
  start_closing(now);
}

void Connection::count_sent(int64_t stream_id, ngtcp2_ssize accepted) {
  if (accepted <= 0) return;
  const auto n = static_cast<uint64_t>(accepted);
  unacked_ += n;
  if (auto it = streams_.find(stream_id); it != streams_.end())
    it->second->unacked += n;
  else
    unacked_other_ += n;
}

// ngtcp2 disarms its loss-detection timer when it validates a migrated path (it resets the
// congestion state), and arms it again only when it next sends an ack-eliciting packet or gets an
// ACK: stream bytes in flight then (a response's, a QPACK instruction's), their ACK lost, are never
// resent, while the client, having nothing to acknowledge, waits too (until the idle timeout: the
// migration test's 1 % loss caught it under ThreadSanitizer; 10 % loss shows it every run). Whenever stream bytes are
// unacknowledged and no timer is armed, a PING (ngtcp2's keep-alive, made due at once) asks for the ACK that settles
// them or shows them lost; sending it arms the timer again.
void Connection::rearm_loss_detection() {
  ngtcp2_conn_stat stat;
  ngtcp2_conn_get_conn_stat(conn_, &stat);
  const bool stalled = unacked_ > 0 && stat.loss_detection_timer == UINT64_MAX;
  if (stalled == pinging_) return;
  ngtcp2_conn_set_keep_alive_timeout(conn_, stalled ? 1 : 0);  // 0: no keep-alive
  pinging_ = stalled;
}

void Connection::write(Nanos now) {
  if (state_ != State::kActive) return;
  rearm_loss_detection();
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info info{};
  const size_t max_size = ngtcp2_conn_get_path_max_tx_udp_payload_size(conn_);
  for (size_t packets = 0; packets < kMaxPacketsPerWrite;) {
    int64_t stream_id = -1;
    int fin = 0;
    std::array<nghttp3_vec, 16> vec;
    nghttp3_ssize count = 0;
    if (h3_ && ngtcp2_conn_get_max_data_left(conn_) > 0) {
      count = nghttp3_conn_writev_stream(h3_, &stream_id, &fin, vec.data(), vec.size());
      if (count < 0) {
        ngtcp2_connection_close_error_set_application_error(
            &close_error_, nghttp3_err_infer_quic_app_error_code(static_cast<int>(count)), nullptr, 0);
        error_set_ = true;
        return start_closing(now);
      }
    }
    ngtcp2_ssize accepted = -1;
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
    if (fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
    const ngtcp2_ssize n = ngtcp2_conn_writev_stream(conn_, &ps.path, &info, buffer_.data(), max_size, &accepted, flags,
                                                     stream_id, reinterpret_cast<const ngtcp2_vec*>(vec.data()),
                                                     static_cast<size_t>(count), stamp(now));
    if (n < 0) {
      switch (n) {
        case NGTCP2_ERR_STREAM_DATA_BLOCKED:
          nghttp3_conn_block_stream(h3_, stream_id);
          continue;
        case NGTCP2_ERR_STREAM_SHUT_WR:
          nghttp3_conn_shutdown_stream_write(h3_, stream_id);
          continue;
        case NGTCP2_ERR_WRITE_MORE:
          count_sent(stream_id, accepted);
          if (nghttp3_conn_add_write_offset(h3_, stream_id, static_cast<size_t>(accepted)) != 0) {
            fail(NGTCP2_ERR_INTERNAL);
            return start_closing(now);
          }
          continue;
        default:
          fail(static_cast<int>(n));
          return start_closing(now);
      }
    }
    count_sent(stream_id, accepted);
    if (accepted >= 0 && nghttp3_conn_add_write_offset(h3_, stream_id, static_cast<size_t>(accepted)) != 0) {
      fail(NGTCP2_ERR_INTERNAL);
      return start_closing(now);
    }
    if (n == 0) {
      ngtcp2_conn_update_pkt_tx_time(conn_, stamp(now));
      return;
    }
    server_.send(endpoint_, ps.path.remote, buffer_.data(), static_cast<size_t>(n));
    packets++;
  }
  // The budget is spent and there may be more: the loop comes back to it after the others.
  ngtcp2_conn_update_pkt_tx_time(conn_, stamp(now));
  server_.touched.push_back(this);
}

void Connection::start_closing(Nanos now) {
  if (state_ != State::kActive) return;
  if (!error_set_) fail(NGTCP2_ERR_INTERNAL);
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info info{};
  const ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &info, buffer_.data(),
                                                            NGTCP2_MAX_UDP_PAYLOAD_SIZE, &close_error_, stamp(now));
  if (n <= 0) return server_.remove(this);
  close_packet_.assign(buffer_.data(), buffer_.data() + n);
  std::memcpy(&close_to_, ps.path.remote.addr, std::min<size_t>(sizeof close_to_, ps.path.remote.addrlen));
  server_.send(endpoint_, ps.path.remote, close_packet_.data(), close_packet_.size());
  state_ = State::kClosing;
  close_deadline_ = now + 3 * static_cast<Nanos>(ngtcp2_conn_get_pto(conn_));
}

void Connection::start_draining(Nanos now) {
  state_ = State::kDraining;
  close_deadline_ = now + 3 * static_cast<Nanos>(ngtcp2_conn_get_pto(conn_));
}

Nanos Connection::expiry() const {
  if (state_ != State::kActive) return close_deadline_;
  const ngtcp2_tstamp t = ngtcp2_conn_get_expiry(conn_);
  Nanos next = t >= static_cast<ngtcp2_tstamp>(kNever) ? kNever : static_cast<Nanos>(t);
  for (const auto& [due, id] : delayed_) next = std::min(next, due);
  return next;
}

void Connection::on_expiry(Nanos now) {
  if (state_ != State::kActive) return server_.remove(this);
  // Delayed responses that are due go out first (in the order they fell due).
  if (!delayed_.empty()) {
    std::sort(delayed_.begin(), delayed_.end());
    size_t due = 0;
    while (due < delayed_.size() && delayed_[due].first <= now) due++;
    std::vector<int64_t> ids;
    for (size_t i = 0; i < due; i++) ids.push_back(delayed_[i].second);
    delayed_.erase(delayed_.begin(), delayed_.begin() + static_cast<ptrdiff_t>(due));
    for (int64_t id : ids) {
      auto it = streams_.find(id);
      if (it != streams_.end()) submit(*it->second);
    }
  }
  const int rv = ngtcp2_conn_handle_expiry(conn_, stamp(now));
  if (rv == NGTCP2_ERR_IDLE_CLOSE) return server_.remove(this);
  if (rv != 0) {
    fail(rv);
    return start_closing(now);
  }
  write(now);
}

void Connection::answer(Stream& stream) {
  const Nanos start = monotonic_now();
  Http3Response& r = stream.response;
  if (stream.too_large) {
    r.status = 431;
    r.headers = {{"content-type", "text/plain; charset=utf-8"}};
    r.body = "request header fields larger than " + std::to_string(kMaxHeaderBytes) + " bytes\n";
  } else {
    try {
      r = server_.handler(stream.request);
    } catch (const std::exception& e) {
      r = Http3Response{500, {{"content-type", "text/plain; charset=utf-8"}}, std::string(e.what()) + "\n"};
    }
  }
  if (r.status < 100 || r.status > 999) r.status = 500;
  {
    std::lock_guard lock(server_.stats_mutex);
    auto& samples = server_.stats.service_ns;
    if (samples.size() < kMaxServiceSamples) samples.push_back(monotonic_now() - start);
  }
  if (r.delay_ns > 0) {
    delayed_.emplace_back(start + r.delay_ns, stream.id);
    return;
  }
  submit(stream);
}

void Connection::submit(Stream& stream) {
  Http3Response& r = stream.response;
  if (r.reset) {
    ngtcp2_conn_shutdown_stream(conn_, stream.id, NGHTTP3_H3_REQUEST_CANCELLED);
    return;
  }
  const std::string status = std::to_string(r.status);
  std::vector<std::string> names;  // lower-case copies, alive through the call
  names.reserve(r.headers.size());
  std::vector<nghttp3_nv> fields;
  fields.reserve(r.headers.size() + 1);
  auto add = [&](const std::string& name, const std::string& value) {
    fields.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                      NGHTTP3_NV_FLAG_NONE});
  };
  static const std::string kStatus = ":status";
  add(kStatus, status);
  for (const HttpHeader& h : r.headers) {
    if (h.key.empty() || h.key[0] == ':' || is_connection_specific(h.key)) continue;
    names.push_back(ascii_lowercase(h.key));
    add(names.back(), h.value);
  }
  const bool has_body = !r.omit_body && !r.body.empty();
  nghttp3_data_reader reader{on_h3_read_data};
  if (nghttp3_conn_submit_response(h3_, stream.id, fields.data(), fields.size(), has_body ? &reader : nullptr) != 0) {
    ngtcp2_conn_shutdown_stream(conn_, stream.id, NGHTTP3_H3_INTERNAL_ERROR);
    return;
  }
  std::lock_guard lock(server_.stats_mutex);
  server_.stats.requests++;
}

// ngtcp2's callbacks. A non-zero return closes the connection with the error recorded by fail().

int Connection::on_recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t, const uint8_t* data,
                                    size_t length, void* user, void*) {
  Connection& c = of(user);
  if (c.setup_h3() != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  const nghttp3_ssize consumed =
      nghttp3_conn_read_stream(c.h3_, stream_id, data, length, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
  if (consumed < 0) {
    ngtcp2_connection_close_error_set_application_error(
        &c.close_error_, nghttp3_err_infer_quic_app_error_code(static_cast<int>(consumed)), nullptr, 0);
    c.error_set_ = true;
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  ngtcp2_conn_extend_max_stream_offset(c.conn_, stream_id, static_cast<uint64_t>(consumed));
  ngtcp2_conn_extend_max_offset(c.conn_, static_cast<uint64_t>(consumed));
  return 0;
}

int Connection::on_acked_stream_data_offset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t length, void* user,
                                            void*) {
  Connection& c = of(user);
  uint64_t& unacked = [&]() -> uint64_t& {
    auto it = c.streams_.find(stream_id);
    return it != c.streams_.end() ? it->second->unacked : c.unacked_other_;
  }();
  const uint64_t acked = std::min(length, unacked);
  unacked -= acked;
  c.unacked_ -= acked;
  if (c.h3_ && nghttp3_conn_add_ack_offset(c.h3_, stream_id, length) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int Connection::on_stream_close(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t code, void* user, void*) {
  Connection& c = of(user);
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) code = NGHTTP3_H3_NO_ERROR;
  if (c.h3_) {
    const int rv = nghttp3_conn_close_stream(c.h3_, stream_id, code);
    if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  if (ngtcp2_is_bidi_stream(stream_id)) ngtcp2_conn_extend_max_streams_bidi(c.conn_, 1);
  return 0;
}

int Connection::on_stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t, void* user, void*) {
  Connection& c = of(user);
  if (c.h3_ && nghttp3_conn_shutdown_stream_read(c.h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int Connection::on_stream_stop_sending(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
  Connection& c = of(user);
  if (c.h3_ && nghttp3_conn_shutdown_stream_read(c.h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int Connection::on_extend_max_remote_streams_bidi(ngtcp2_conn*, uint64_t max, void* user) {
  Connection& c = of(user);
  if (c.h3_) nghttp3_conn_set_max_client_streams_bidi(c.h3_, max);
  return 0;
}

int Connection::on_extend_max_stream_data(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
  Connection& c = of(user);
  if (c.h3_ && nghttp3_conn_unblock_stream(c.h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

// Anyone can derive a client's Initial keys from its DCID, but a datagram that only looks like an
// Initial does not decrypt: the thread-local flag tells on_datagram whether anything in the new
// connection's first datagram did, so that such garbage costs no connection state.
thread_local bool g_decrypted = false;

int Connection::on_decrypt(uint8_t* dest, const ngtcp2_crypto_aead* aead, const ngtcp2_crypto_aead_ctx* aead_ctx,
                           const uint8_t* ciphertext, size_t length, const uint8_t* nonce, size_t nonce_length,
                           const uint8_t* aad, size_t aad_length) {
  const int rv =
      ngtcp2_crypto_decrypt_cb(dest, aead, aead_ctx, ciphertext, length, nonce, nonce_length, aad, aad_length);
  if (rv == 0) g_decrypted = true;
  return rv;
}

void Connection::on_rand(uint8_t* out, size_t length, const ngtcp2_rand_ctx* ctx) {
  static_cast<Http3Server::Impl*>(ctx->native_handle)->random_bytes(out, length);
}

int Connection::on_get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t length, void* user) {
  Connection& c = of(user);
  cid->datalen = length;
  do {
    c.server_.random_bytes(cid->data, length);
  } while (c.server_.by_cid.count(cid_key(cid->data, length)));
  if (ngtcp2_crypto_generate_stateless_reset_token(token, c.server_.reset_secret.data(), c.server_.reset_secret.size(),
                                                   cid) != 0) {
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  c.add_key(cid->data, cid->datalen);
  return 0;
}

int Connection::on_remove_connection_id(ngtcp2_conn*, const ngtcp2_cid* cid, void* user) {
  Connection& c = of(user);
  const std::string key = cid_key(cid->data, cid->datalen);
  auto it = c.server_.by_cid.find(key);
  if (it != c.server_.by_cid.end() && it->second == &c) c.server_.by_cid.erase(it);
  c.keys_.erase(std::remove(c.keys_.begin(), c.keys_.end(), key), c.keys_.end());
  return 0;
}

int Connection::on_handshake_completed(ngtcp2_conn*, void* user) {
  Connection& c = of(user);
  if (!c.handshake_counted_) {
    c.handshake_counted_ = true;
    std::lock_guard lock(c.server_.stats_mutex);
    c.server_.stats.handshakes++;
  }
  return c.setup_h3();
}

void Connection::on_qlog(void* user, uint32_t flags, const void* data, size_t length) {
  Connection& c = of(user);
  if (!c.qlog_) return;
  std::fwrite(data, 1, length, c.qlog_);
  if (flags & NGTCP2_QLOG_WRITE_FLAG_FIN) {
    std::fclose(c.qlog_);
    c.qlog_ = nullptr;
  }
}

// nghttp3's callbacks.

int Connection::on_h3_stream_close(nghttp3_conn*, int64_t stream_id, uint64_t, void* user, void*) {
  Connection& c = of(user);
  if (auto it = c.streams_.find(stream_id); it != c.streams_.end()) {
    c.unacked_ -= it->second->unacked;  // a reset stream's bytes are never acknowledged
    c.streams_.erase(it);
  }
  return 0;
}

int Connection::on_h3_recv_data(nghttp3_conn*, int64_t stream_id, const uint8_t* data, size_t length, void* user,
                                void* user_stream) {
  // Kept (bounded) for the handler, and consumed at once, so that the client may send the rest.
  if (user_stream) {
    Http3Request& r = static_cast<Stream*>(user_stream)->request;
    if (!r.body_truncated && r.body.size() + length <= kMaxHttp3RequestBody) {
      r.body.append(reinterpret_cast<const char*>(data), length);
    } else {
      r.body_truncated = true;
      std::string().swap(r.body);
    }
  }
  Connection& c = of(user);
  ngtcp2_conn_extend_max_stream_offset(c.conn_, stream_id, length);
  ngtcp2_conn_extend_max_offset(c.conn_, length);
  return 0;
}

int Connection::on_h3_deferred_consume(nghttp3_conn*, int64_t stream_id, size_t consumed, void* user, void*) {
  Connection& c = of(user);
  ngtcp2_conn_extend_max_stream_offset(c.conn_, stream_id, consumed);
  ngtcp2_conn_extend_max_offset(c.conn_, consumed);
  return 0;
}

int Connection::on_h3_begin_headers(nghttp3_conn* h3, int64_t stream_id, void* user, void*) {
  Connection& c = of(user);
  auto stream = std::make_unique<Stream>();
  stream->id = stream_id;
  if (nghttp3_conn_set_stream_user_data(h3, stream_id, stream.get()) != 0) return NGHTTP3_ERR_CALLBACK_FAILURE;
  c.streams_[stream_id] = std::move(stream);
  return 0;
}

int Connection::on_h3_recv_header(nghttp3_conn*, int64_t, int32_t token, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                                  uint8_t, void*, void* user_stream) {
  Stream& s = *static_cast<Stream*>(user_stream);
  const nghttp3_vec n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);
  s.header_bytes += n.len + v.len + 32;  // as RFC 9114 §4.2.2 counts a field
  if (s.too_large || s.header_bytes > kMaxHeaderBytes) {
    s.too_large = true;
    return 0;
  }
  std::string text(reinterpret_cast<const char*>(v.base), v.len);
  Http3Request& r = s.request;
  switch (token) {
    case NGHTTP3_QPACK_TOKEN__METHOD:
      r.method = std::move(text);
      break;
    case NGHTTP3_QPACK_TOKEN__PATH:
      r.path = std::move(text);
      break;
    case NGHTTP3_QPACK_TOKEN__AUTHORITY:
      r.authority = std::move(text);
      break;
    case NGHTTP3_QPACK_TOKEN__SCHEME:
      r.scheme = std::move(text);
      break;
    default:
      r.headers.push_back({std::string(reinterpret_cast<const char*>(n.base), n.len), std::move(text)});
  }
  return 0;
}

int Connection::on_h3_end_stream(nghttp3_conn*, int64_t, void* user, void* user_stream) {
  if (user_stream) of(user).answer(*static_cast<Stream*>(user_stream));
  return 0;
}

int Connection::on_h3_stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t code, void* user, void*) {
  Connection& c = of(user);
  if (ngtcp2_conn_shutdown_stream_read(c.conn_, stream_id, code) != 0) return NGHTTP3_ERR_CALLBACK_FAILURE;
  return 0;
}

int Connection::on_h3_reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t code, void* user, void*) {
  Connection& c = of(user);
  if (ngtcp2_conn_shutdown_stream_write(c.conn_, stream_id, code) != 0) return NGHTTP3_ERR_CALLBACK_FAILURE;
  return 0;
}

nghttp3_ssize Connection::on_h3_read_data(nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t count, uint32_t* flags,
                                          void*, void* user_stream) {
  Stream& s = *static_cast<Stream*>(user_stream);
  *flags |= NGHTTP3_DATA_FLAG_EOF;
  if (s.body_handed || count == 0) return 0;
  s.body_handed = true;
  vec[0].base = reinterpret_cast<uint8_t*>(s.response.body.data());
  vec[0].len = s.response.body.size();
  return 1;
}

FileDescriptor bind_udp(const sockaddr_in& address, const std::string& name) {
  FileDescriptor fd(check_syscall("socket(UDP)", ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
  const int buffer = 4 << 20;  // as much as net.core.[rw]mem_max lets an ordinary user have
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
  const int pmtu = IP_PMTUDISC_DO;  // QUIC's path MTU discovery needs unfragmented datagrams
  (void)::setsockopt(fd.get(), IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    throw UserError(
        "cannot serve HTTP/3 on UDP " + name + ": " + std::strerror(err) +
        (err == EADDRINUSE ? " (another program has that UDP port; stop it, or replay without --http3)" : ""));
  }
  return fd;
}
}  // namespace

const std::string* Http3Request::header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (h.key == name) return &h.value;
  }
  return nullptr;
}

Http3Server::Impl::~Impl() {
  connections.clear();  // before the endpoints whose credentials the sessions use
}

void Http3Server::Impl::send(Endpoint& endpoint, const ngtcp2_addr& to, const uint8_t* data, size_t length) {
  // A datagram the socket cannot take now is lost, as on any path: QUIC's recovery resends it.
  (void)::sendto(endpoint.socket.get(), data, length, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(to.addr),
                 to.addrlen);
}

void Http3Server::Impl::remove(Connection* connection) {
  for (const std::string& key : connection->keys()) {
    auto it = by_cid.find(key);
    if (it != by_cid.end() && it->second == connection) by_cid.erase(it);
  }
  touched.erase(std::remove(touched.begin(), touched.end(), connection), touched.end());
  connections.erase(connection);
}

void Http3Server::Impl::send_version_negotiation(Endpoint& endpoint, const sockaddr_in& to,
                                                 const ngtcp2_version_cid& vc) {
  std::array<uint8_t, NGTCP2_MAX_UDP_PAYLOAD_SIZE> packet;
  const uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
  const ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(packet.data(), packet.size(), static_cast<uint8_t>(rng()),
                                                              vc.scid, vc.scidlen, vc.dcid, vc.dcidlen, versions, 1);
  if (n <= 0) return;
  sockaddr_in remote = to;
  ngtcp2_addr address{reinterpret_cast<ngtcp2_sockaddr*>(&remote), sizeof remote};
  send(endpoint, address, packet.data(), static_cast<size_t>(n));
}

void Http3Server::Impl::on_datagram(Endpoint& endpoint, const sockaddr_in& from, const uint8_t* data, size_t length,
                                    Nanos now) {
  auto drop = [&] {
    std::lock_guard lock(stats_mutex);
    stats.dropped_datagrams++;
  };
  // An empty datagram is legal UDP, and ngtcp2 asserts on it (Debian builds keep assertions).
  if (length == 0) return drop();
  ngtcp2_version_cid vc;
  const int rv = ngtcp2_pkt_decode_version_cid(&vc, data, length, kCidLength);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    // Only to a datagram as large as a client's first one must be: never an amplifier.
    if (length >= NGTCP2_MAX_UDP_PAYLOAD_SIZE) send_version_negotiation(endpoint, from, vc);
    return;
  }
  if (rv != 0) return drop();
  auto it = by_cid.find(cid_key(vc.dcid, vc.dcidlen));
  if (it != by_cid.end()) return it->second->read(from, data, length, now);

  ngtcp2_pkt_hd hd;
  if (ngtcp2_accept(&hd, data, length) != 0) return drop();
  if (connections.size() >= options.max_connections) {
    std::lock_guard lock(stats_mutex);
    stats.refused++;
    return;
  }
  auto connection = std::make_unique<Connection>(*this, endpoint);
  Connection* c = connection.get();
  connections.emplace(c, std::move(connection));
  if (!c->accept(hd, from, now)) {
    remove(c);
    return drop();
  }
  g_decrypted = false;
  c->read(from, data, length, now);
  if (!connections.count(c)) return drop();  // its first datagram ended it
  if (!g_decrypted) {
    remove(c);
    return drop();
  }
  std::lock_guard lock(stats_mutex);
  stats.connections++;
}

void Http3Server::Impl::run() {
  std::array<epoll_event, 64> events;
  std::array<uint8_t, 65536> datagram;
  for (;;) {
    Nanos next = kNever;
    for (auto& [c, owned] : connections) next = std::min(next, c->expiry());
    const Nanos before = monotonic_now();
    Nanos timeout = next == kNever ? kNever : std::max<Nanos>(next - before, 0);
    if (!touched.empty()) timeout = 0;  // connections with more to write
    const int n = epoll.wait(events.data(), events.size(), timeout);
    const Nanos now = monotonic_now();
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == UINT64_MAX) return;  // stop
      Endpoint& endpoint = *endpoints[events[i].data.u64];
      for (size_t k = 0; k < kMaxDatagramsPerRead; k++) {
        sockaddr_in from{};
        socklen_t from_length = sizeof from;
        const ssize_t got = ::recvfrom(endpoint.socket.get(), datagram.data(), datagram.size(), MSG_DONTWAIT,
                                       reinterpret_cast<sockaddr*>(&from), &from_length);
        if (got < 0) break;  // EAGAIN, or an ICMP error reported on the socket: nothing to do with it
        if (from.sin_family != AF_INET) continue;
        on_datagram(endpoint, from, datagram.data(), static_cast<size_t>(got), now);
      }
    }
    after_reads(now);
  }
}

void Http3Server::Impl::after_reads(Nanos now) {
  // Expired timers first (they may remove connections), then everyone that read something writes.
  std::vector<Connection*> expired;
  for (auto& [c, owned] : connections) {
    if (c->expiry() <= now) expired.push_back(c);
  }
  for (Connection* c : expired) {
    if (connections.count(c)) c->on_expiry(now);
  }
  std::vector<Connection*> writers;
  writers.swap(touched);
  for (Connection* c : writers) {
    if (connections.count(c)) c->write(now);
  }
}

Http3Server::Http3Server(const std::vector<Http3Endpoint>& endpoints, Handler handler,
                         const Http3ServerOptions& options)
    : impl_(std::make_unique<Impl>(std::move(handler), options)) {
  Impl& s = *impl_;
  for (uint8_t& b : s.reset_secret) b = static_cast<uint8_t>(s.rng());
  s.stop_fd = FileDescriptor(check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)));
  s.epoll.add(s.stop_fd.get(), EPOLLIN, UINT64_MAX);
  for (const Http3Endpoint& e : endpoints) {
    auto endpoint = std::make_unique<Endpoint>();
    endpoint->name = e.ip + ":" + std::to_string(e.port);
    const auto ip = Ipv4::parse(e.ip);
    if (!ip) throw UserError("HTTP/3: " + e.ip + " is not an IPv4 address");
    endpoint->address = socket_address(*ip, e.port);
    if (gnutls_certificate_allocate_credentials(&endpoint->credentials) != 0) throw std::bad_alloc();
    // GnuTLS presents the first certificate whose names match the client's SNI, else the first.
    std::vector<std::pair<fs::path, fs::path>> files{{e.certificate, e.key}};
    files.insert(files.end(), e.more_certificates.begin(), e.more_certificates.end());
    for (const auto& [certificate, key] : files) {
      const int rv = gnutls_certificate_set_x509_key_file(endpoint->credentials, certificate.c_str(), key.c_str(),
                                                          GNUTLS_X509_FMT_PEM);
      if (rv < 0) {
        throw UserError("HTTP/3 on " + endpoint->name + ": cannot load the certificate " + certificate.string() +
                        " and key " + key.string() + ": " + gnutls_strerror(rv));
      }
    }
    endpoint->socket = bind_udp(endpoint->address, endpoint->name);
    s.epoll.add(endpoint->socket.get(), EPOLLIN, s.endpoints.size());
    s.endpoints.push_back(std::move(endpoint));
  }
}

Http3Server::~Http3Server() { stop(); }

void Http3Server::start() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->started || impl_->stopped) return;
  impl_->started = true;
  impl_->thread = std::thread([this] { impl_->run(); });
}

void Http3Server::stop() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->stopped) return;
  impl_->stopped = true;
  const uint64_t one = 1;
  if (::write(impl_->stop_fd.get(), &one, sizeof one) < 0) {
    // Only EAGAIN is possible (the counter is full), and then it is readable already.
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->connections.clear();
  impl_->by_cid.clear();
}

size_t Http3Server::connections() const { return impl_->connections.size(); }

void Http3Server::receive_for_testing(uint16_t from_port, const uint8_t* datagram, size_t length, int64_t now_ns) {
  if (impl_->started || impl_->endpoints.empty()) return;
  const sockaddr_in from = socket_address(Ipv4{0x7f000001}, from_port);
  impl_->on_datagram(*impl_->endpoints.front(), from, datagram, length, now_ns);
  impl_->after_reads(now_ns);
}

Http3Stats Http3Server::stats() const {
  std::lock_guard lock(impl_->stats_mutex);
  return impl_->stats;
}

std::string http3_library_versions() {
  return std::string("ngtcp2 ") + ngtcp2_version(0)->version_str + ", nghttp3 " + nghttp3_version(0)->version_str +
         ", GnuTLS " + gnutls_check_version(nullptr);
}
