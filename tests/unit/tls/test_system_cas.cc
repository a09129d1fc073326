// SPDX-License-Identifier: GPL-3.0-or-later
// The system's CAs read when needed (tls/system_cas.hh): a bundle is parsed only when a chain
// asks for an issuer the store does not have, then checks like a bundle loaded at once; an
// unreadable bundle trusts nothing and fails nothing else; SSL_CERT_FILE counts as OpenSSL's
// default paths let it.
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "expect.hh"
#include "temp_files.hh"
#include "tls/certificate_authority.hh"
#include "tls/openssl_ptr.hh"
#include "tls/system_cas.hh"

namespace {
using StorePtr = std::unique_ptr<X509_STORE, OpenSslFree<X509_STORE_free>>;
using StoreContextPtr = std::unique_ptr<X509_STORE_CTX, OpenSslFree<X509_STORE_CTX_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslFree<X509_free>>;

// X509_V_OK, or why `leaf` does not chain to a CA of `store`.
int verify(X509_STORE* store, X509* leaf) {
  StoreContextPtr context(X509_STORE_CTX_new());
  EXPECT_EQ(X509_STORE_CTX_init(context.get(), store, leaf, nullptr), 1);
  const int ok = X509_verify_cert(context.get());
  const int error = X509_STORE_CTX_get_error(context.get());
  EXPECT_EQ(ok == 1, error == X509_V_OK);
  return error;
}

int objects(X509_STORE* store) { return sk_X509_OBJECT_num(X509_STORE_get0_objects(store)); }
}  // namespace

TEST(SystemCas, a_lazy_bundle_is_parsed_on_first_need_and_then_checks_chains) {
  TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path / "ca");
  CertificateAuthority other = CertificateAuthority::load_or_create(tmp.path / "other");
  X509* leaf = SSL_CTX_get0_certificate(ca.server_context("a.test"));
  ASSERT_TRUE(leaf != nullptr);

  StorePtr store(X509_STORE_new());
  add_lazy_bundle(store.get(), ca.certificate_path().string());
  EXPECT_EQ(objects(store.get()), 0);  // nothing parsed yet
  EXPECT_EQ(verify(store.get(), leaf), X509_V_OK);
  EXPECT_EQ(objects(store.get()), 1);
  EXPECT_EQ(verify(store.get(), leaf), X509_V_OK);  // again, from what the store holds now

  StorePtr wrong(X509_STORE_new());
  add_lazy_bundle(wrong.get(), other.certificate_path().string());
  EXPECT_EQ(verify(wrong.get(), leaf), X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);

  StorePtr missing(X509_STORE_new());
  add_lazy_bundle(missing.get(), (tmp.path / "no-such-bundle.pem").string());
  EXPECT_EQ(verify(missing.get(), leaf), X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  EXPECT_EQ(ERR_peek_error(), 0UL);
}

TEST(SystemCas, the_system_cas_take_ssl_cert_file_as_the_default_paths_do) {
  TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path / "ca");
  X509* leaf = SSL_CTX_get0_certificate(ca.server_context("b.test"));
  const char* saved = ::getenv("SSL_CERT_FILE");
  const std::string restore = saved ? saved : "";
  ::setenv("SSL_CERT_FILE", ca.certificate_path().c_str(), 1);
  StorePtr store(X509_STORE_new());
  add_system_cas_lazily(store.get());
  EXPECT_EQ(objects(store.get()), 0);
  EXPECT_EQ(verify(store.get(), leaf), X509_V_OK);

  // Without it, the machine's own CAs: not this CA.
  ::unsetenv("SSL_CERT_FILE");
  StorePtr system(X509_STORE_new());
  add_system_cas_lazily(system.get());
  EXPECT_NE(verify(system.get(), leaf), X509_V_OK);
  if (saved) ::setenv("SSL_CERT_FILE", restore.c_str(), 1);
  EXPECT_EQ(ERR_peek_error(), 0UL);
}

TEST(SystemCas, a_root_in_the_hashed_directory_is_found_without_parsing_the_bundle) {
  // A root of the machine's own, found by its name's hash where OpenSSL keeps them.
  namespace fs = std::filesystem;
  std::error_code error;
  X509Ptr root;
  for (const auto& entry : fs::directory_iterator(X509_get_default_cert_dir(), error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != 10 || name.substr(8) != ".0") continue;  // HASH.0
    if (FILE* file = std::fopen(entry.path().c_str(), "r")) {
      root.reset(PEM_read_X509(file, nullptr, nullptr, nullptr));
      std::fclose(file);
    }
    if (root && X509_check_issued(root.get(), root.get()) == X509_V_OK) break;
    root.reset();
  }
  ERR_clear_error();
  if (!root) GTEST_SKIP() << "no self-signed root in " << X509_get_default_cert_dir();
  const char* saved = ::getenv("SSL_CERT_FILE");
  const std::string restore = saved ? saved : "";
  ::unsetenv("SSL_CERT_FILE");
  StorePtr store(X509_STORE_new());
  add_system_cas_lazily(store.get());
  EXPECT_EQ(verify(store.get(), root.get()), X509_V_OK);
  EXPECT_LT(objects(store.get()), 5);  // the root (and its namesakes), not the whole bundle
  if (saved) ::setenv("SSL_CERT_FILE", restore.c_str(), 1);
}
