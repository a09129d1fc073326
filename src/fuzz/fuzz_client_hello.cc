// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the server name mm-record reads from a client's TLS ClientHello
// (tls/client_hello.hh). The input is what a client sends first on a connection: OpenSSL
// parses the records and the hello, and calls the same callback as the recording proxy, which
// reads the name; the name's bytes are then checked as the certificate minting checks them.
// Inputs starting with 'X' go straight to the extension reader instead.
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.hh"
#include "tls/client_hello.hh"
#include "util/host_name.hh"

namespace {

std::string seen_name;

int read_name(SSL* ssl, int* alert, void*) {
  seen_name = client_hello_server_name(ssl);
  *alert = SSL_AD_HANDSHAKE_FAILURE;
  return SSL_CLIENT_HELLO_ERROR;  // the name is all this target wants
}

SSL_CTX* server_context() {
  static SSL_CTX* context = [] {
    SSL_CTX* c = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_client_hello_cb(c, read_name, nullptr);
    return c;
  }();
  return context;
}

void check_name(const std::string& name) {
  for (char ch : name) FUZZ_CHECK(!(ch >= 'A' && ch <= 'Z'));
  (void)is_host_name(name);
  (void)is_ip_literal(name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] == 'X') {
    check_name(server_name_from_extension(data + 1, size - 1));
    return 0;
  }
  SSL* ssl = SSL_new(server_context());
  BIO* in = BIO_new_mem_buf(data, static_cast<int>(size));
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_set_accept_state(ssl);
  seen_name.clear();
  (void)SSL_do_handshake(ssl);
  check_name(seen_name);
  SSL_free(ssl);
  return 0;
}
