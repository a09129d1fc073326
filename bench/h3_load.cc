// SPDX-License-Identifier: GPL-3.0-or-later
// h3-load: an HTTP/3 load client for bench/http3 (never installed). CONNECTIONS QUIC connections
// at once, each from its own UDP port, each making REQUESTS requests (at most IN_FLIGHT at a time)
// for the manifest's URLs in turn, starting at its own offset; every certificate is verified
// against the CA (GnuTLS, with the host name), every response's status and body (SHA-256) checked
// against the manifest. Prints counts, the rate and latency percentiles; exits 1 if any request
// failed or was wrong. On the same libraries as the server (ngtcp2, nghttp3, GnuTLS), written
// because Debian's gtlsclient checks no certificate, exits 0 on a 404 or a handshake timeout and
// overwrites downloads of the same name.
//
//   h3-load --ca CA.pem --connections 200 --requests 50 --in-flight 8 [--migrate-after N] [--qlog-dir DIR]
//           --manifest FILE IP:PORT
//
// --migrate-after N: once N of its requests are done, each connection moves to a new UDP port
// (a new socket; QUIC connection migration, as Chromium does on a port change) and goes on there,
// keeping the old socket for the server's packets until the end.
// --qlog-dir DIR: each connection's qlog in DIR/client-N.sqlog (DIR must exist).
//
// Manifest: one line per URL, tab-separated: host, path, status, SHA-256 of the body (hex).
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "util/address.hh"
#include "util/clock.hh"
#include "util/text.hh"

namespace {
struct Target {
  std::string host, path;
  int status = 0;
  std::string sha256;  // hex
};

struct Options {
  std::string ca;
  int connections = 200, requests = 50, in_flight = 8, migrate_after = 0;
  int epoll = -1;
  std::string manifest;
  std::string qlog_dir;  // --qlog-dir: one qlog file per connection, as mm-replay's server writes them
  sockaddr_in server{};
};

struct Totals {
  uint64_t ok = 0, wrong_status = 0, wrong_body = 0, failed = 0, handshakes = 0, migrated = 0;
  std::vector<double> latency_ms, handshake_ms;
  std::map<std::string, uint64_t> errors;
};

std::mt19937_64 rng{std::random_device{}()};
constexpr const char* kPriorities =
    "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1";

class Client;

struct Request {
  const Target* target = nullptr;
  Nanos started = 0;
  int status = 0;
  gnutls_hash_hd_t hash = nullptr;
};

class Client {
 public:
  Client(const Options& o, const std::vector<Target>& targets, gnutls_certificate_credentials_t credentials,
         Totals& totals, int index)
      : options_(o),
        targets_(targets),
        totals_(totals),
        next_(static_cast<size_t>(index) % targets.size()),
        index_(index) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&o.server), sizeof o.server) != 0)
      throw std::runtime_error(std::string("socket/connect: ") + std::strerror(errno));
    socklen_t length = sizeof local_;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local_), &length);
    remote_ = o.server;
    host_ = targets_[next_].host;
    reference_.get_conn = [](ngtcp2_crypto_conn_ref* r) { return static_cast<Client*>(r->user_data)->conn_; };
    reference_.user_data = this;

    ngtcp2_cid dcid, scid;
    dcid.datalen = 18;
    scid.datalen = 18;
    for (size_t i = 0; i < 18; i++) dcid.data[i] = static_cast<uint8_t>(rng());
    for (size_t i = 0; i < 18; i++) scid.data[i] = static_cast<uint8_t>(rng());
    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = static_cast<ngtcp2_tstamp>(monotonic_now());
    if (!o.qlog_dir.empty()) {
      qlog_ = std::fopen((o.qlog_dir + "/client-" + std::to_string(index) + ".sqlog").c_str(), "we");
      if (!qlog_) throw std::runtime_error("--qlog-dir: cannot write in " + o.qlog_dir);
      settings.qlog.odcid = dcid;
      settings.qlog.write = [](void* u, uint32_t, const void* data, size_t n) {
        std::fwrite(data, 1, n, static_cast<Client*>(u)->qlog_);
      };
    }
    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_streams_uni = 3;
    params.initial_max_stream_data_bidi_local = 8 << 20;
    params.initial_max_stream_data_uni = 1 << 20;
    params.initial_max_data = 64 << 20;
    params.max_idle_timeout = 30 * kNanosPerSec;
    ngtcp2_callbacks cb{};
    cb.client_initial = ngtcp2_crypto_client_initial_cb;
    cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb.encrypt = ngtcp2_crypto_encrypt_cb;
    cb.decrypt = ngtcp2_crypto_decrypt_cb;
    cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
    cb.update_key = ngtcp2_crypto_update_key_cb;
    cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
    cb.rand = [](uint8_t* out, size_t n, const ngtcp2_rand_ctx*) {
      for (size_t i = 0; i < n; i++) out[i] = static_cast<uint8_t>(rng());
    };
    cb.get_new_connection_id = [](ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t n, void*) {
      cid->datalen = n;
      for (size_t i = 0; i < n; i++) cid->data[i] = static_cast<uint8_t>(rng());
      for (size_t i = 0; i < NGTCP2_STATELESS_RESET_TOKENLEN; i++) token[i] = static_cast<uint8_t>(rng());
      return 0;
    };
    cb.handshake_completed = [](ngtcp2_conn*, void* u) { return static_cast<Client*>(u)->on_handshake(); };
    cb.recv_stream_data = [](ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t, const uint8_t* data, size_t n, void* u,
                             void*) {
      Client& c = *static_cast<Client*>(u);
      const nghttp3_ssize used = nghttp3_conn_read_stream(c.h3_, id, data, n, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
      if (used < 0) return NGTCP2_ERR_CALLBACK_FAILURE;
      ngtcp2_conn_extend_max_stream_offset(c.conn_, id, static_cast<uint64_t>(used));
      ngtcp2_conn_extend_max_offset(c.conn_, static_cast<uint64_t>(used));
      return 0;
    };
    cb.acked_stream_data_offset = [](ngtcp2_conn*, int64_t id, uint64_t, uint64_t n, void* u, void*) {
      Client& c = *static_cast<Client*>(u);
      return c.h3_ && nghttp3_conn_add_ack_offset(c.h3_, id, n) != 0 ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
    };
    cb.stream_close = [](ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t code, void* u, void*) {
      Client& c = *static_cast<Client*>(u);
      if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) code = NGHTTP3_H3_NO_ERROR;
      if (c.h3_) {
        const int rv = nghttp3_conn_close_stream(c.h3_, id, code);
        if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return NGTCP2_ERR_CALLBACK_FAILURE;
      }
      return 0;
    };
    cb.extend_max_local_streams_bidi = [](ngtcp2_conn*, uint64_t, void* u) {
      static_cast<Client*>(u)->submit_more();
      return 0;
    };
    cb.extend_max_stream_data = [](ngtcp2_conn*, int64_t id, uint64_t, void* u, void*) {
      Client& c = *static_cast<Client*>(u);
      return c.h3_ && nghttp3_conn_unblock_stream(c.h3_, id) != 0 ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
    };
    ngtcp2_path path{{reinterpret_cast<ngtcp2_sockaddr*>(&local_), sizeof local_},
                     {reinterpret_cast<ngtcp2_sockaddr*>(&remote_), sizeof remote_},
                     nullptr};
    if (ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &settings, &params, nullptr,
                               this) != 0)
      throw std::runtime_error("ngtcp2_conn_client_new failed");
    if (gnutls_init(&tls_, GNUTLS_CLIENT | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA) != 0 ||
        gnutls_priority_set_direct(tls_, kPriorities, nullptr) != 0 ||
        ngtcp2_crypto_gnutls_configure_client_session(tls_) != 0 ||
        gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, credentials) != 0)
      throw std::runtime_error("GnuTLS set-up failed");
    gnutls_session_set_ptr(tls_, &reference_);
    gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>("h3")), 2};
    gnutls_alpn_set_protocols(tls_, &alpn, 1, 0);
    gnutls_server_name_set(tls_, GNUTLS_NAME_DNS, host_.data(), host_.size());
    gnutls_session_set_verify_cert(tls_, host_.c_str(), 0);  // the chain to the CA, and the name
    ngtcp2_conn_set_tls_native_handle(conn_, tls_);
    // A PING after a second of silence, as a browser pings a connection whose requests are open
    // (Chromium after 15 s): after a migration, a server that has not validated the new path may
    // send only three times what it received there, and a client with nothing to acknowledge
    // would leave it waiting; ngtcp2 also disarms its loss-detection timer on validating a path.
    ngtcp2_conn_set_keep_alive_timeout(conn_, static_cast<ngtcp2_duration>(kNanosPerSec));
    started_ = monotonic_now();
  }
  ~Client() {
    for (auto& [id, r] : requests_) {
      if (r.hash) gnutls_hash_deinit(r.hash, nullptr);
    }
    if (h3_) nghttp3_conn_del(h3_);
    if (conn_) ngtcp2_conn_del(conn_);
    if (tls_) gnutls_deinit(tls_);
    if (fd_ >= 0) ::close(fd_);
    if (old_fd_ >= 0) ::close(old_fd_);
    if (qlog_) std::fclose(qlog_);
  }
  int fd() const { return fd_; }
  bool done() const { return done_; }
  Nanos expiry() const {
    const ngtcp2_tstamp t = ngtcp2_conn_get_expiry(conn_);
    return t >= static_cast<ngtcp2_tstamp>(kNever) ? kNever : static_cast<Nanos>(t);
  }

  // The 120 s deadline passed: what it was waiting for, then its requests count as failed.
  void give_up() {
    ngtcp2_conn_stat stat;
    ngtcp2_conn_get_conn_stat(conn_, &stat);
    std::cerr << "  connection " << index_ << ": " << completed_ << " of " << options_.requests << " requests done, "
              << requests_.size() << " open, " << stat.bytes_in_flight << " bytes in flight, cwnd " << stat.cwnd
              << (stat.loss_detection_timer == UINT64_MAX ? ", no loss-detection timer" : "") << "\n";
    fail("gave up after 120 s");
  }

  void read(Nanos now) {
    drain(fd_, local_, now);
    if (old_fd_ >= 0) drain(old_fd_, old_local_, now);
    write(now);
  }

  // What arrived on one of its sockets (the current one, or the one it moved from).
  void drain(int fd, sockaddr_in& local, Nanos now) {
    std::array<uint8_t, 65536> buffer;
    for (int i = 0; i < 64 && !done_; i++) {
      const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n < 0) break;
      ngtcp2_path path{{reinterpret_cast<ngtcp2_sockaddr*>(&local), sizeof local},
                       {reinterpret_cast<ngtcp2_sockaddr*>(&remote_), sizeof remote_},
                       nullptr};
      ngtcp2_pkt_info info{};
      const int rv = ngtcp2_conn_read_pkt(conn_, &path, &info, buffer.data(), static_cast<size_t>(n),
                                          static_cast<ngtcp2_tstamp>(now));
      if (rv != 0) return fail(std::string("read: ") + ngtcp2_strerror(rv));
    }
  }

  void on_expiry(Nanos now) {
    const int rv = ngtcp2_conn_handle_expiry(conn_, static_cast<ngtcp2_tstamp>(now));
    if (rv != 0) return fail(std::string("timer: ") + ngtcp2_strerror(rv));
    write(now);
  }

  void write(Nanos now) {
    if (done_) return;
    std::array<uint8_t, 1500> buffer;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info info{};
    for (int packets = 0; packets < 256;) {
      int64_t stream_id = -1;
      int fin = 0;
      std::array<nghttp3_vec, 16> vec;
      nghttp3_ssize count = 0;
      if (h3_ && ngtcp2_conn_get_max_data_left(conn_)) {
        count = nghttp3_conn_writev_stream(h3_, &stream_id, &fin, vec.data(), vec.size());
        if (count < 0) return fail("nghttp3 write");
      }
      ngtcp2_ssize accepted = -1;
      uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
      const ngtcp2_ssize n = ngtcp2_conn_writev_stream(
          conn_, &ps.path, &info, buffer.data(), ngtcp2_conn_get_path_max_tx_udp_payload_size(conn_), &accepted, flags,
          stream_id, reinterpret_cast<const ngtcp2_vec*>(vec.data()), static_cast<size_t>(count),
          static_cast<ngtcp2_tstamp>(now));
      if (n < 0) {
        if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
          nghttp3_conn_block_stream(h3_, stream_id);
          continue;
        }
        if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
          nghttp3_conn_shutdown_stream_write(h3_, stream_id);
          continue;
        }
        if (n == NGTCP2_ERR_WRITE_MORE) {
          nghttp3_conn_add_write_offset(h3_, stream_id, static_cast<size_t>(accepted));
          continue;
        }
        return fail(std::string("write: ") + ngtcp2_strerror(static_cast<int>(n)));
      }
      if (accepted >= 0) nghttp3_conn_add_write_offset(h3_, stream_id, static_cast<size_t>(accepted));
      if (n == 0) break;
      // Out of the socket of the path ngtcp2 chose: the old one while the new path is not validated.
      const bool old_path = old_fd_ >= 0 && ps.path.local.addrlen >= sizeof(sockaddr_in) &&
                            reinterpret_cast<const sockaddr_in*>(ps.path.local.addr)->sin_port == old_local_.sin_port;
      (void)::send(old_path ? old_fd_ : fd_, buffer.data(), static_cast<size_t>(n), MSG_DONTWAIT);
      packets++;
    }
    ngtcp2_conn_update_pkt_tx_time(conn_, static_cast<ngtcp2_tstamp>(now));
  }

 private:
  int on_handshake() {
    totals_.handshakes++;
    totals_.handshake_ms.push_back(nanos_to_ms(monotonic_now() - started_));
    nghttp3_callbacks cb{};
    cb.acked_stream_data = nullptr;
    cb.recv_header = [](nghttp3_conn*, int64_t, int32_t token, nghttp3_rcbuf*, nghttp3_rcbuf* value, uint8_t, void*,
                        void* s) {
      if (token == NGHTTP3_QPACK_TOKEN__STATUS && s) {
        const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
        static_cast<Request*>(s)->status = std::atoi(std::string(reinterpret_cast<const char*>(v.base), v.len).c_str());
      }
      return 0;
    };
    cb.recv_data = [](nghttp3_conn*, int64_t id, const uint8_t* data, size_t n, void* u, void* s) {
      Client& c = *static_cast<Client*>(u);
      if (s) gnutls_hash(static_cast<Request*>(s)->hash, data, n);
      ngtcp2_conn_extend_max_stream_offset(c.conn_, id, n);
      ngtcp2_conn_extend_max_offset(c.conn_, n);
      return 0;
    };
    cb.deferred_consume = [](nghttp3_conn*, int64_t id, size_t n, void* u, void*) {
      Client& c = *static_cast<Client*>(u);
      ngtcp2_conn_extend_max_stream_offset(c.conn_, id, n);
      ngtcp2_conn_extend_max_offset(c.conn_, n);
      return 0;
    };
    cb.end_stream = [](nghttp3_conn*, int64_t id, void* u, void*) {
      static_cast<Client*>(u)->finish(id);
      return 0;
    };
    cb.reset_stream = [](nghttp3_conn*, int64_t id, uint64_t, void* u, void*) {
      static_cast<Client*>(u)->abandon(id, "stream reset by the server");
      return 0;
    };
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    settings.qpack_max_dtable_capacity = 4096;
    settings.qpack_blocked_streams = 100;
    if (nghttp3_conn_client_new(&h3_, &cb, &settings, nghttp3_mem_default(), this) != 0)
      return NGTCP2_ERR_CALLBACK_FAILURE;
    int64_t control, encoder, decoder;
    if (ngtcp2_conn_open_uni_stream(conn_, &control, nullptr) != 0 ||
        nghttp3_conn_bind_control_stream(h3_, control) != 0 ||
        ngtcp2_conn_open_uni_stream(conn_, &encoder, nullptr) != 0 ||
        ngtcp2_conn_open_uni_stream(conn_, &decoder, nullptr) != 0 ||
        nghttp3_conn_bind_qpack_streams(h3_, encoder, decoder) != 0)
      return NGTCP2_ERR_CALLBACK_FAILURE;
    submit_more();
    return 0;
  }

  void submit_more() {
    if (!h3_) return;
    while (submitted_ < options_.requests && static_cast<int>(requests_.size()) < options_.in_flight) {
      int64_t id;
      if (ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr) != 0) return;  // more when the server allows
      const Target& t = targets_[next_];
      next_ = (next_ + 1) % targets_.size();
      Request& r = requests_[id];
      r.target = &t;
      r.started = monotonic_now();
      gnutls_hash_init(&r.hash, GNUTLS_DIG_SHA256);
      const std::string method = "GET", scheme = "https", agent = "h3-load";
      auto nv = [](const std::string& n, const std::string& v) {
        return nghttp3_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                          reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                          NGHTTP3_NV_FLAG_NONE};
      };
      const std::string m = ":method", s = ":scheme", a = ":authority", p = ":path", ua = "user-agent";
      const nghttp3_nv fields[] = {nv(m, method), nv(s, scheme), nv(a, t.host), nv(p, t.path), nv(ua, agent)};
      if (nghttp3_conn_submit_request(h3_, id, fields, 5, nullptr, &r) != 0) return fail("submit_request");
      submitted_++;
    }
  }

  void finish(int64_t id) {
    auto it = requests_.find(id);
    if (it == requests_.end()) return;
    Request& r = it->second;
    uint8_t digest[32];
    gnutls_hash_deinit(r.hash, digest);
    r.hash = nullptr;
    totals_.latency_ms.push_back(nanos_to_ms(monotonic_now() - r.started));
    if (r.status != r.target->status) {
      totals_.wrong_status++;
    } else if (hex_bytes(digest, 32) != r.target->sha256) {
      totals_.wrong_body++;
    } else {
      totals_.ok++;
    }
    requests_.erase(it);
    completed_++;
    if (completed_ == options_.migrate_after && completed_ < options_.requests) migrate();
    if (completed_ == options_.requests) {
      done_ = true;
      return;
    }
    submit_more();
  }

  // A new socket, so a new local port: ngtcp2 moves the connection there (it needs a spare
  // connection ID from the server), and the old socket is closed.
  void migrate() {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in local{};
    socklen_t length = sizeof local;
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&remote_), sizeof remote_) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
      if (fd >= 0) ::close(fd);
      return fail("migration: no new socket");
    }
    ngtcp2_path path{{reinterpret_cast<ngtcp2_sockaddr*>(&local), sizeof local},
                     {reinterpret_cast<ngtcp2_sockaddr*>(&remote_), sizeof remote_},
                     nullptr};
    const int rv = ngtcp2_conn_initiate_immediate_migration(conn_, &path, static_cast<ngtcp2_tstamp>(monotonic_now()));
    if (rv != 0) {
      ::close(fd);
      return fail(std::string("migration: ") + ngtcp2_strerror(rv));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(index_);
    // The old socket stays open, as a browser's does: if the new path fails validation (a
    // PATH_CHALLENGE lost, a slow machine), the server goes back to the old one (RFC 9000 9.3.3).
    old_fd_ = fd_;
    old_local_ = local_;
    fd_ = fd;
    local_ = local;
    ::epoll_ctl(options_.epoll, EPOLL_CTL_ADD, fd_, &ev);
    totals_.migrated++;
  }

  void abandon(int64_t id, const std::string& why) {
    if (requests_.erase(id)) {
      totals_.failed++;
      totals_.errors[why]++;
      completed_++;
    }
    if (completed_ == options_.requests) done_ = true;
  }

  void fail(const std::string& why) {
    if (done_) return;
    done_ = true;
    const uint64_t lost = static_cast<uint64_t>(options_.requests - completed_);
    totals_.failed += lost;
    totals_.errors[why] += lost;
  }

  const Options& options_;
  const std::vector<Target>& targets_;
  Totals& totals_;
  size_t next_;
  int index_;
  std::string host_;
  int fd_ = -1, old_fd_ = -1;  // old_fd_: the socket it moved from (--migrate-after)
  sockaddr_in local_{}, remote_{}, old_local_{};
  ngtcp2_conn* conn_ = nullptr;
  nghttp3_conn* h3_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  std::FILE* qlog_ = nullptr;
  ngtcp2_crypto_conn_ref reference_{};
  std::map<int64_t, Request> requests_;
  int submitted_ = 0, completed_ = 0;
  bool done_ = false;
  Nanos started_ = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100 * static_cast<double>(v.size())))];
}

int usage() {
  std::cerr << "usage: h3-load --ca CA.pem [--connections N] [--requests N] [--in-flight N] [--migrate-after N] "
               "[--qlog-dir DIR] --manifest FILE IP:PORT\n";
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string server;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--ca")
      o.ca = value();
    else if (a == "--connections")
      o.connections = std::stoi(value());
    else if (a == "--requests")
      o.requests = std::stoi(value());
    else if (a == "--in-flight")
      o.in_flight = std::stoi(value());
    else if (a == "--migrate-after")
      o.migrate_after = std::stoi(value());
    else if (a == "--manifest")
      o.manifest = value();
    else if (a == "--qlog-dir")
      o.qlog_dir = value();
    else if (server.empty() && a[0] != '-')
      server = a;
    else
      return usage();
  }
  const size_t colon = server.rfind(':');
  if (o.ca.empty() || o.manifest.empty() || colon == std::string::npos || o.connections < 1 || o.requests < 1 ||
      o.in_flight < 1)
    return usage();
  const auto ip = Ipv4::parse(server.substr(0, colon));
  if (!ip) return usage();
  o.server = socket_address(*ip, static_cast<uint16_t>(std::stoi(server.substr(colon + 1))));

  std::vector<Target> targets;
  std::ifstream manifest(o.manifest);
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream fields(line);
    Target t;
    std::string status;
    if (std::getline(fields, t.host, '\t') && std::getline(fields, t.path, '\t') &&
        std::getline(fields, status, '\t') && std::getline(fields, t.sha256, '\t')) {
      t.status = std::stoi(status);
      targets.push_back(t);
    }
  }
  if (targets.empty()) {
    std::cerr << "h3-load: no URL in " << o.manifest << "\n";
    return 2;
  }
  gnutls_certificate_credentials_t credentials;
  gnutls_certificate_allocate_credentials(&credentials);
  if (gnutls_certificate_set_x509_trust_file(credentials, o.ca.c_str(), GNUTLS_X509_FMT_PEM) < 1) {
    std::cerr << "h3-load: cannot read the CA " << o.ca << "\n";
    return 2;
  }

  Totals totals;
  const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
  o.epoll = epoll;
  std::vector<std::unique_ptr<Client>> clients;
  const Nanos start = monotonic_now();
  for (int i = 0; i < o.connections; i++) {
    clients.push_back(std::make_unique<Client>(o, targets, credentials, totals, i));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(i);
    ::epoll_ctl(epoll, EPOLL_CTL_ADD, clients.back()->fd(), &ev);
    clients.back()->write(monotonic_now());
  }
  const Nanos deadline = start + 120 * kNanosPerSec;
  std::array<epoll_event, 256> events;
  for (;;) {
    size_t active = 0;
    Nanos next = kNever;
    for (auto& c : clients) {
      if (c->done()) continue;
      active++;
      next = std::min(next, c->expiry());
    }
    if (active == 0) break;
    const Nanos now0 = monotonic_now();
    if (now0 > deadline) {
      std::cerr << "h3-load: gave up after 120 s with " << active << " connections unfinished:\n";
      for (auto& c : clients) {
        if (!c->done()) c->give_up();
      }
      break;
    }
    const int timeout_ms = next == kNever ? 1000 : static_cast<int>(std::max<Nanos>(0, next - now0) / kNanosPerMs);
    const int n = ::epoll_wait(epoll, events.data(), static_cast<int>(events.size()), timeout_ms);
    const Nanos now = monotonic_now();
    for (int i = 0; i < n; i++) clients[events[i].data.u64]->read(now);
    for (auto& c : clients) {
      if (!c->done() && c->expiry() <= now) c->on_expiry(now);
    }
  }
  const double seconds = static_cast<double>(monotonic_now() - start) / 1e9;
  const uint64_t total = static_cast<uint64_t>(o.connections) * static_cast<uint64_t>(o.requests);
  std::printf(
      "connections %d (%llu handshakes), requests %llu: ok %llu, wrong status %llu, wrong body %llu, failed %llu\n",
      o.connections, static_cast<unsigned long long>(totals.handshakes), static_cast<unsigned long long>(total),
      static_cast<unsigned long long>(totals.ok), static_cast<unsigned long long>(totals.wrong_status),
      static_cast<unsigned long long>(totals.wrong_body), static_cast<unsigned long long>(totals.failed));
  if (o.migrate_after > 0) {
    std::printf("migrated %llu connections to a new UDP port\n", static_cast<unsigned long long>(totals.migrated));
  }
  for (const auto& [why, count] : totals.errors)
    std::printf("  error: %s (%llu requests)\n", why.c_str(), static_cast<unsigned long long>(count));
  std::printf("time %.2f s, %.0f requests/s\n", seconds, static_cast<double>(totals.ok) / seconds);
  std::printf("latency ms: p50 %.2f, p90 %.2f, p99 %.2f, max %.2f\n", percentile(totals.latency_ms, 50),
              percentile(totals.latency_ms, 90), percentile(totals.latency_ms, 99), percentile(totals.latency_ms, 100));
  std::printf("handshake ms: p50 %.2f, p99 %.2f\n", percentile(totals.handshake_ms, 50),
              percentile(totals.handshake_ms, 99));
  clients.clear();
  gnutls_certificate_free_credentials(credentials);
  const bool migrations_ok =
      o.migrate_after <= 0 || o.migrate_after >= o.requests || totals.migrated == static_cast<uint64_t>(o.connections);
  return totals.ok == total && migrations_ok ? 0 : 1;
}
