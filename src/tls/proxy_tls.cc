// SPDX-License-Identifier: GPL-3.0-or-later
#include "tls/proxy_tls.hh"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls/openssl_error.hh"
#include "util/exception.hh"
#include "util/host_name.hh"

void configure_interception_context(SSL_CTX* context, SSL_client_hello_cb_fn callback, void* arg) {
  SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_client_hello_cb(context, callback, arg);
}

void configure_upstream_context(SSL_CTX* context, bool verify, bool system_cas,
                                const std::vector<std::string>& ca_files) {
  SSL_CTX_set_options(context, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (verify) {
    if (system_cas && SSL_CTX_set_default_verify_paths(context) != 1)
      throw openssl_failure("SSL_CTX_set_default_verify_paths");
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
