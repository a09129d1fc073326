// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The TLS set-up of a transparent intercepting proxy, one copy for mm-record's proxy and
// Cumulus's Local Proxy: the context that answers the client (its certificate chosen per server
// name by a client-hello callback), the context that reaches servers (checked against a set of
// CAs, speaking HTTP/1.1), and the name a connection to a server checks; the look at a client's
// first byte that tells TLS from HTTP, the start of TLS towards the client, and the certificate
// its client-hello callback puts on the connection. What each proxy does next (its phases, its
// messages) stays in the proxy.
#include <openssl/ssl.h>

#include <string>
#include <vector>

class CertificateAuthority;
class TlsStream;

// The client-facing context: partial writes, unexpected EOF tolerated, `callback(arg)` choosing
// the certificate for each ClientHello.
void configure_interception_context(SSL_CTX* context, SSL_client_hello_cb_fn callback, void* arg);

// The server-facing context: ALPN http/1.1; with `verify`, servers are checked against the
// system's CAs (when `system_cas`; SSL_CERT_FILE and SSL_CERT_DIR apply) and every PEM bundle of
// `ca_files` (empty names are skipped). UserError naming a bundle that cannot be used.
void configure_upstream_context(SSL_CTX* context, bool verify, bool system_cas,
                                const std::vector<std::string>& ca_files);

// Before the handshake with a server: SNI and the host name checked (a name the client asked
// for), or the IP address checked (no name, or an IP literal).
void set_upstream_identity(SSL* ssl, const std::string& server_name, const std::string& ip);

// What a client's first byte says its connection carries, peeked (not read: TLS bytes must stay
// in the socket for OpenSSL).
enum class FirstByte {
  None,    // nothing yet (EAGAIN)
  Closed,  // the client closed, or the socket failed, before a byte
  Tls,     // a TLS handshake record
  Http,    // an upper-case letter: a request line's method
  Other,   // anything else
};
FirstByte peek_first_byte(int fd);

// The client's TLS handshake on `client` with the interception context, `connection` as the
// SSL's app data for the client-hello callback. False if SSL_new failed (its error is on
// OpenSSL's queue: openssl_failure("SSL_new")).
bool start_client_tls(TlsStream& client, SSL_CTX* context, void* connection);

// The client-hello callback's answer: the local CA's certificate for the name the client asked
// for (the IP address it connected to when it asked for none) put on `ssl`:
// SSL_CLIENT_HELLO_SUCCESS; or, if it cannot be, `*why` said, an internal-error alert and
// SSL_CLIENT_HELLO_ERROR.
int use_minted_certificate(SSL* ssl, CertificateAuthority& ca, const std::string& server_name, const std::string& ip,
                           int* alert, std::string* why);
