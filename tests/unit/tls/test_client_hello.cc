// SPDX-License-Identifier: GPL-3.0-or-later
// The server name of a ClientHello (tls/client_hello.hh): the extension's list read with
// bounds, and a real client's hello through OpenSSL's callback.
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <string>
#include <vector>

#include "tls/client_hello.hh"

namespace {

std::string name_of(const std::vector<uint8_t>& bytes) {
  return server_name_from_extension(bytes.data(), bytes.size());
}

}  // namespace

TEST(ClientHello, first_host_name_of_the_list_in_lower_case) {
  // list length 11: one entry, type 0, length 8, "Ex.Test1"
  EXPECT_EQ(name_of({0, 11, 0, 0, 8, 'E', 'x', '.', 'T', 'e', 's', 't', '1'}), "ex.test1");
  // An entry of another type first is passed over.
  EXPECT_EQ(name_of({0, 10, 7, 0, 2, 'z', 'z', 0, 0, 2, 'a', 'b'}), "ab");
}

TEST(ClientHello, malformed_lists_give_no_name) {
  EXPECT_EQ(name_of({}), "");
  EXPECT_EQ(name_of({0}), "");
  EXPECT_EQ(name_of({0, 6, 0, 0, 2, 'a', 'b'}), "");  // list length disagrees
  EXPECT_EQ(name_of({0, 5, 0, 0, 9, 'a', 'b'}), "");  // name longer than the data
  EXPECT_EQ(name_of({0, 3, 0, 0, 0}), "");            // empty name
  EXPECT_EQ(name_of({0, 4, 0, 0, 1}), "");            // cut short
}

namespace {

std::string seen;
int remember(SSL* ssl, int*, void*) {
  seen = client_hello_server_name(ssl);
  return SSL_CLIENT_HELLO_ERROR;
}

// What a server's callback reads from the hello of a client asking for `name` (or none).
std::string server_sees(const char* name) {
  SSL_CTX* client_context = SSL_CTX_new(TLS_client_method());
  SSL_CTX* server_context = SSL_CTX_new(TLS_server_method());
  SSL_CTX_set_client_hello_cb(server_context, remember, nullptr);
  SSL* client = SSL_new(client_context);
  SSL* server = SSL_new(server_context);
  BIO *client_side, *server_side;
  BIO_new_bio_pair(&client_side, 0, &server_side, 0);
  SSL_set_bio(client, client_side, client_side);
  SSL_set_bio(server, server_side, server_side);
  if (name) SSL_set_tlsext_host_name(client, name);
  seen = "<no callback>";
  SSL_connect(client);  // writes the hello, then waits for the answer
  SSL_accept(server);   // reads it: the callback runs
  SSL_free(client);
  SSL_free(server);
  SSL_CTX_free(client_context);
  SSL_CTX_free(server_context);
  return seen;
}

}  // namespace

TEST(ClientHello, a_real_clients_hello_through_openssl) {
  EXPECT_EQ(server_sees("WWW.Example.test"), "www.example.test");
  EXPECT_EQ(server_sees(nullptr), "");
}
