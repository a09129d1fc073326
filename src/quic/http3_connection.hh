// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One QUIC connection of the HTTP/3 server and its HTTP/3 session: its setup (accept, TLS,
// HTTP/3), reads, writes, timers and closing in http3_connection.cc; the libraries' callbacks,
// which reach its state, in http3_callbacks.cc.
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "quic/http3_server_parts.hh"
#include "util/clock.hh"

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
