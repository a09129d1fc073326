// SPDX-License-Identifier: GPL-3.0-or-later
// openssl_error_reasons and openssl_failure: the reasons of OpenSSL's error queue, without
// OpenSSL's code prefix, and the queue left empty.
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <string>

#include "expect.hh"
#include "tls/openssl_error.hh"

namespace {
// Queues OpenSSL's "no start line" error (PEM_R_NO_START_LINE) by reading a non-PEM text.
void queue_a_pem_error() {
  static const char kText[] = "not a certificate";
  BIO* bio = BIO_new_mem_buf(kText, sizeof kText - 1);
  ASSERT_NE(bio, nullptr);
  EXPECT_EQ(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr), nullptr);
  BIO_free(bio);
  ASSERT_NE(ERR_peek_error(), 0ul);
}
}  // namespace

TEST(OpensslError, reasons_of_an_empty_queue_are_empty) {
  ERR_clear_error();
  EXPECT_EQ(openssl_error_reasons(), "");
}

TEST(OpensslError, reasons_drop_the_code_prefix_and_drain_the_queue) {
  ERR_clear_error();
  queue_a_pem_error();
  const std::string reasons = openssl_error_reasons();
  EXPECT_EQ(reasons, "no start line");
  EXPECT_EQ(ERR_peek_error(), 0ul);
}

TEST(OpensslError, several_reasons_are_joined_oldest_first) {
  ERR_clear_error();
  queue_a_pem_error();
  queue_a_pem_error();
  EXPECT_EQ(openssl_error_reasons(), "no start line; no start line");
}

TEST(OpensslError, failure_names_what_failed_and_why) {
  ERR_clear_error();
  queue_a_pem_error();
  EXPECT_EQ(std::string(openssl_failure("reading ca.pem").what()), "OpenSSL: reading ca.pem: no start line");
  EXPECT_EQ(ERR_peek_error(), 0ul);
  EXPECT_EQ(std::string(openssl_failure("SSL_new").what()), "OpenSSL: SSL_new");
}
