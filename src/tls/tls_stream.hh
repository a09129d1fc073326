// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One end of a TCP connection as a proxy sees it: a non-blocking socket that speaks plain bytes,
// or TLS once an SSL object is attached. Reads, writes with an output buffer for what the socket
// does not take yet, half-closes, and remembers what TLS waits for (readable or writable socket)
// so that the owner can ask epoll for the right event.
#include <openssl/types.h>
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "util/file_descriptor.hh"

class TlsStream {
 public:
  // What read() returns besides a byte count (> 0) or 0 for the end of the stream.
  static constexpr ssize_t kWouldBlock = -1;
  static constexpr ssize_t kFailed = -2;  // error() says why

  enum class Handshake {
    Done,
    Blocked,      // waiting for the socket (tls_wants_read() / tls_wants_write())
    HelloPaused,  // the server's client-hello callback asked to be called again later
    Failed,       // error() says why; peer_closed() if the peer hung up without a TLS alert
  };

  TlsStream() = default;
  explicit TlsStream(FileDescriptor fd);

  int fd() const { return fd_.get(); }
  SSL* ssl() const { return ssl_.get(); }

  // From now on bytes go through TLS on this socket. Takes ownership of `ssl`, which must not be
  // null; the caller picks its role (SSL_set_accept_state / SSL_set_connect_state).
  void start_tls(SSL* ssl);
  // Drives the TLS handshake as far as the socket allows.
  Handshake handshake();

  // > 0 bytes read, 0 at the end of the stream (FIN or close_notify: read_closed() from then on),
  // kWouldBlock, or kFailed.
  ssize_t read(char* buffer, size_t size);
  // Sends `data` after whatever is pending, straight to the socket while nothing is, and keeps
  // the rest; false on error.
  bool send(std::string_view data);
  // Writes what is pending as far as the socket takes it; false on error.
  bool flush();
  size_t pending() const { return out_.size() - out_offset_; }
  // Ends our sending: close_notify under TLS (the peer's is not waited for), then FIN.
  void shut_write();
  // Makes close() of the socket send a reset (RST) rather than a FIN.
  void reset_on_close();

  bool read_closed() const { return read_closed_; }
  bool write_shut() const { return write_shut_; }
  bool tls_wants_read() const { return tls_wants_read_; }
  bool tls_wants_write() const { return tls_wants_write_; }
  bool peer_closed() const { return peer_closed_; }
  const std::string& error() const { return error_; }

 private:
  struct SslFree {
    void operator()(SSL* ssl) const;
  };
  // The outcome of a TLS call that returned `result` <= 0: kWouldBlock or kFailed (error_ set),
  // or 0 for the peer's close_notify.
  ssize_t tls_outcome(int result);
  // The same for a plain socket call that failed with errno.
  ssize_t socket_outcome();
  ssize_t write(const char* data, size_t size);

  FileDescriptor fd_;
  std::unique_ptr<SSL, SslFree> ssl_;  // declared after fd_: freed before the socket closes
  std::string out_;                    // bytes waiting for the socket to take them
  size_t out_offset_ = 0;
  bool read_closed_ = false;  // the peer has finished sending
  bool write_shut_ = false;   // we have finished sending
  bool tls_wants_read_ = false, tls_wants_write_ = false;
  bool peer_closed_ = false;
  std::string error_;
};
