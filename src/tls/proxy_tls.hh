// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The TLS set-up of a transparent intercepting proxy, one copy for mm-record's proxy and
// Cumulus's Local Proxy: the context that answers the client (its certificate chosen per server
// name by a client-hello callback), the context that reaches servers (checked against a set of
// CAs, speaking HTTP/1.1), and the name a connection to a server checks.
#include <openssl/ssl.h>

#include <string>
#include <vector>

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
