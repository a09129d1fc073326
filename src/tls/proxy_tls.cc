// SPDX-License-Identifier: GPL-3.0-or-later
#include "tls/proxy_tls.hh"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>

#include "tls/certificate_authority.hh"
#include "tls/openssl_error.hh"
#include "tls/system_cas.hh"
#include "tls/tls_stream.hh"
#include "util/exception.hh"
#include "util/host_name.hh"

void configure_interception_context(SSL_CTX* context, SSL_client_hello_cb_fn callback, void* arg) {
  SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_client_hello_cb(context, callback, arg);
  // One session ticket per full handshake (OpenSSL sends two): a browser keeps one per host, and
  // each costs an encryption and a write.
  SSL_CTX_set_num_tickets(context, 1);
}

void configure_upstream_context(SSL_CTX* context, bool verify, bool system_cas,
                                const std::vector<std::string>& ca_files) {
  SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (verify) {
    if (system_cas) add_system_cas_lazily(SSL_CTX_get_cert_store(context));
    for (const std::string& file : ca_files) {
      if (file.empty()) continue;
      if (SSL_CTX_load_verify_locations(context, file.c_str(), nullptr) != 1)
        throw UserError("cannot use " + file + " as the servers' CA bundle: " + openssl_error_reasons() +
                        " (it must be readable PEM certificates)");
    }
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nullptr);
  }
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(context, kHttp11, sizeof kHttp11);
}

void set_upstream_identity(SSL* ssl, const std::string& server_name, const std::string& ip) {
  if (!server_name.empty() && !is_ip_literal(server_name)) {
    SSL_set_tlsext_host_name(ssl, server_name.c_str());
    SSL_set1_host(ssl, server_name.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), server_name.empty() ? ip.c_str() : server_name.c_str());
  }
}

FirstByte peek_first_byte(int fd) {
  char first;
  const ssize_t n = ::recv(fd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && errno == EAGAIN) return FirstByte::None;
  if (n <= 0) return FirstByte::Closed;
  if (first == 0x16) return FirstByte::Tls;
  if (first >= 'A' && first <= 'Z') return FirstByte::Http;
  return FirstByte::Other;
}

bool start_client_tls(TlsStream& client, SSL_CTX* context, void* connection) {
  SSL* ssl = SSL_new(context);
  if (!ssl) return false;
  client.start_tls(ssl);
  SSL_set_accept_state(ssl);
  SSL_set_app_data(ssl, connection);
  return true;
}

int use_minted_certificate(SSL* ssl, CertificateAuthority& ca, const std::string& server_name, const std::string& ip,
                           int* alert, std::string* why) {
  try {
    SSL_CTX* context = ca.server_context(server_name.empty() ? ip : server_name);
    if (SSL_set_SSL_CTX(ssl, context) == nullptr) throw std::runtime_error("cannot use the minted certificate");
    return SSL_CLIENT_HELLO_SUCCESS;
  } catch (const std::exception& e) {
    *why = e.what();
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
}
