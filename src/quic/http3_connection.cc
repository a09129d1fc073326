// SPDX-License-Identifier: GPL-3.0-or-later
// The HTTP/3 server's connections: accept (QUIC, TLS, HTTP/3 set up for a client's first
// Initial), read, write (nghttp3's streams into ngtcp2's packets, a budget at a time), timers and
// delayed responses, closing and draining, and the handler's answers submitted to nghttp3.
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "quic/http3_server_parts.hh"
#include "util/clock.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace http3 {
namespace {
bool is_connection_specific(std::string_view name) {
  for (const char* n : {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"}) {
    if (equals_ignoring_case(name, n)) return true;
  }
  return false;
}
}  // namespace

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
}  // namespace http3
