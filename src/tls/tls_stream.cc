// SPDX-License-Identifier: GPL-3.0-or-later
// A proxy's plain-or-TLS socket end (see tls_stream.hh).
#include "tls/tls_stream.hh"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tls/openssl_error.hh"

void TlsStream::SslFree::operator()(SSL* ssl) const { SSL_free(ssl); }

TlsStream::TlsStream(FileDescriptor fd) : fd_(std::move(fd)) {}

void TlsStream::start_tls(SSL* ssl) {
  ssl_.reset(ssl);
  SSL_set_fd(ssl, fd_.get());
}

ssize_t TlsStream::tls_outcome(int result) {
  const int err = SSL_get_error(ssl_.get(), result);
  tls_wants_read_ = err == SSL_ERROR_WANT_READ;
  tls_wants_write_ = err == SSL_ERROR_WANT_WRITE;
  if (tls_wants_read_ || tls_wants_write_) return kWouldBlock;
  if (err == SSL_ERROR_ZERO_RETURN) return 0;
  peer_closed_ = err == SSL_ERROR_SYSCALL;
  error_ = peer_closed_ ? std::string(std::strerror(errno)) : openssl_error_reasons();
  return kFailed;
}

ssize_t TlsStream::socket_outcome() {
  if (errno == EAGAIN) return kWouldBlock;
  error_ = std::strerror(errno);
  return kFailed;
}

TlsStream::Handshake TlsStream::handshake() {
  ERR_clear_error();
  const int result = SSL_do_handshake(ssl_.get());
  if (result == 1) {
    tls_wants_read_ = tls_wants_write_ = false;
    return Handshake::Done;
  }
  if (SSL_get_error(ssl_.get(), result) == SSL_ERROR_WANT_CLIENT_HELLO_CB) {
    tls_wants_read_ = tls_wants_write_ = false;
    return Handshake::HelloPaused;
  }
  const ssize_t outcome = tls_outcome(result);
  if (outcome == kWouldBlock) return Handshake::Blocked;
  // A close_notify, or a peer hanging up: what OpenSSL queued, if anything, says more than errno.
  if (outcome == 0 || peer_closed_) error_ = openssl_error_reasons();
  return Handshake::Failed;
}

ssize_t TlsStream::read(char* buffer, size_t size) {
  ssize_t n;
  if (ssl_) {
    ERR_clear_error();
    const int result = SSL_read(ssl_.get(), buffer, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (result > 0) tls_wants_read_ = tls_wants_write_ = false;
    n = result > 0 ? result : tls_outcome(result);
  } else {
    do n = ::read(fd_.get(), buffer, size);
    while (n < 0 && errno == EINTR);
    if (n < 0) n = socket_outcome();
  }
  if (n == 0) read_closed_ = true;
  return n;
}

// Bytes written (>= 0), kWouldBlock or kFailed.
ssize_t TlsStream::write(const char* data, size_t size) {
  if (size == 0) return 0;
  if (ssl_) {
    ERR_clear_error();
    const int result = SSL_write(ssl_.get(), data, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (result > 0) {
      tls_wants_read_ = tls_wants_write_ = false;
      return result;
    }
    const ssize_t outcome = tls_outcome(result);
    if (outcome != 0) return outcome;
    error_ = openssl_error_reasons();  // the peer's close_notify: no use writing on
    return kFailed;
  }
  ssize_t n;
  do n = ::send(fd_.get(), data, size, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n >= 0 ? n : socket_outcome();
}

bool TlsStream::flush() {
  while (pending() > 0) {
    const ssize_t n = write(out_.data() + out_offset_, pending());
    if (n == kFailed) return false;
    if (n == kWouldBlock) return true;
    out_offset_ += static_cast<size_t>(n);
  }
  out_.clear();
  out_offset_ = 0;
  return true;
}

bool TlsStream::send(std::string_view data) {
  if (pending() == 0) {
    while (!data.empty()) {
      const ssize_t n = write(data.data(), data.size());
      if (n == kFailed) return false;
      if (n == kWouldBlock) break;
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  out_.append(data);
  return true;
}

void TlsStream::shut_write() {
  if (write_shut_) return;
  write_shut_ = true;
  if (ssl_) {
    ERR_clear_error();
    (void)SSL_shutdown(ssl_.get());
  }
  (void)::shutdown(fd_.get(), SHUT_WR);
}

void TlsStream::reset_on_close() {
  const linger no_linger{1, 0};
  (void)::setsockopt(fd_.get(), SOL_SOCKET, SO_LINGER, &no_linger, sizeof no_linger);
}
