// SPDX-License-Identifier: GPL-3.0-or-later
// The HTTP/3 server's callbacks from ngtcp2 (stream data, acknowledgements, stream ends, new and
// retired connection IDs, the handshake, qlog) and from nghttp3 (a request's headers and body,
// its end, a response's body): each reaches its Connection through the libraries' user data.
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "quic/http3_server_parts.hh"

namespace http3 {
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
}  // namespace http3
