// SPDX-License-Identifier: GPL-3.0-or-later
// CertificateAuthority: persistence and its failure modes, the certificates it mints (checked
// with OpenSSL's own verifier), and a TLS handshake against a minted context in memory.
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "expect.hh"
#include "temp_files.hh"
#include "tls/certificate_authority.hh"
#include "tls/openssl_ptr.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;

namespace {
using X509Ptr = std::unique_ptr<X509, OpenSslFree<X509_free>>;
using StorePtr = std::unique_ptr<X509_STORE, OpenSslFree<X509_STORE_free>>;
using StoreContextPtr = std::unique_ptr<X509_STORE_CTX, OpenSslFree<X509_STORE_CTX_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree<BIO_free_all>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree<EVP_PKEY_free>>;
using SslPtr = std::unique_ptr<SSL, OpenSslFree<SSL_free>>;
using SslContextPtr = std::unique_ptr<SSL_CTX, OpenSslFree<SSL_CTX_free>>;

unsigned mode_of(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + path.string());
  return st.st_mode & 07777;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::vector<X509Ptr> parse_certificates(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<X509Ptr> out;
  while (X509* certificate = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(certificate);
  ERR_clear_error();  // the end of the input is reported as an error
  return out;
}

X509Ptr ca_certificate(const CertificateAuthority& ca) {
  auto certificates = parse_certificates(ca.certificate_pem());
  EXPECT_EQ(certificates.size(), 1u);
  return std::move(certificates.front());
}

// Verifies `leaf` as a TLS server certificate for `name` (a host name or IP literal) against
// the CA alone; returns OpenSSL's verification result.
int verify(X509* ca, X509* leaf, const std::string& name, bool is_ip) {
  StorePtr store(X509_STORE_new());
  EXPECT_TRUE(X509_STORE_add_cert(store.get(), ca) == 1);
  StoreContextPtr context(X509_STORE_CTX_new());
  EXPECT_TRUE(X509_STORE_CTX_init(context.get(), store.get(), leaf, nullptr) == 1);
  EXPECT_TRUE(X509_STORE_CTX_set_purpose(context.get(), X509_PURPOSE_SSL_SERVER) == 1);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(context.get());
  EXPECT_TRUE((is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                     : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size())) == 1);
  X509_verify_cert(context.get());
  ERR_clear_error();
  return X509_STORE_CTX_get_error(context.get());
}

long days_between(const ASN1_TIME* from, const ASN1_TIME* to) {
  int days = 0, seconds = 0;
  EXPECT_TRUE(ASN1_TIME_diff(&days, &seconds, from, to) == 1);
  return days;
}

struct HandshakeResult {
  bool completed = false;
  long verify_result = -1;
  std::string alpn;
  std::string received;  // what the server read after the handshake
};

// A client (SNI, verifying against `ca`, offering `alpn` in wire format) and a server using
// `server_context`, connected by an in-memory BIO pair. An IP literal is sent no SNI, as
// browsers do, and checked against the IP SAN.
HandshakeResult handshake(SSL_CTX* server_context, X509* ca, const std::string& name, const std::string& alpn,
                          bool is_ip = false) {
  SslContextPtr client_context(SSL_CTX_new(TLS_client_method()));
  EXPECT_TRUE(client_context);
  EXPECT_TRUE(X509_STORE_add_cert(SSL_CTX_get_cert_store(client_context.get()), ca) == 1);
  SSL_CTX_set_verify(client_context.get(), SSL_VERIFY_PEER, nullptr);
  SslPtr client(SSL_new(client_context.get())), server(SSL_new(server_context));
  EXPECT_TRUE(client && server);
  if (is_ip) {
    EXPECT_TRUE(X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(client.get()), name.c_str()) == 1);
  } else {
    EXPECT_TRUE(SSL_set_tlsext_host_name(client.get(), name.c_str()) == 1);
    EXPECT_TRUE(SSL_set1_host(client.get(), name.c_str()) == 1);
  }
  if (!alpn.empty()) {
    EXPECT_TRUE(SSL_set_alpn_protos(client.get(), reinterpret_cast<const unsigned char*>(alpn.data()),
                                    static_cast<unsigned>(alpn.size())) == 0);
  }
  BIO *client_end = nullptr, *server_end = nullptr;
  EXPECT_TRUE(BIO_new_bio_pair(&client_end, 0, &server_end, 0) == 1);
  SSL_set_bio(client.get(), client_end, client_end);
  SSL_set_bio(server.get(), server_end, server_end);
  SSL_set_connect_state(client.get());
  SSL_set_accept_state(server.get());

  HandshakeResult result;
  const auto stalled = [](SSL* ssl, int rc) {
    const int error = SSL_get_error(ssl, rc);
    return error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE;
  };
  for (int round = 0; round < 50 && !result.completed; round++) {
    const int c = SSL_do_handshake(client.get());
    const int s = SSL_do_handshake(server.get());
    if (c == 1 && s == 1)
      result.completed = true;
    else if ((c != 1 && stalled(client.get(), c)) || (s != 1 && stalled(server.get(), s)))
      break;
  }
  result.verify_result = SSL_get_verify_result(client.get());
  if (result.completed) {
    const unsigned char* selected = nullptr;
    unsigned length = 0;
    SSL_get0_alpn_selected(client.get(), &selected, &length);
    if (selected) result.alpn.assign(reinterpret_cast<const char*>(selected), length);
    const std::string request = "GET / HTTP/1.1\r\n\r\n";
    EXPECT_TRUE(SSL_write(client.get(), request.data(), static_cast<int>(request.size())) ==
                static_cast<int>(request.size()));
    char buffer[100];
    const int n = SSL_read(server.get(), buffer, sizeof buffer);
    if (n > 0) result.received.assign(buffer, static_cast<size_t>(n));
  }
  ERR_clear_error();
  return result;
}

const std::string kOfferH2AndHttp11("\x02h2\x08http/1.1", 12);
}  // namespace

TEST(CertificateAuthority, ca_create_then_load_gives_same_certificate_and_private_modes) {
  TempDir tmp;
  const fs::path dir = tmp.path / "new" / "parents" / "ca";
  bool created = false;
  const CertificateAuthority first = CertificateAuthority::load_or_create(dir, &created);
  ASSERT_TRUE(created);
  ASSERT_EQ(first.directory(), dir);
  ASSERT_EQ(first.certificate_path(), dir / "ca.pem");
  ASSERT_EQ(read_text(dir / "ca.pem"), first.certificate_pem());

  ASSERT_EQ(mode_of(dir / "ca.key"), 0600u);
  ASSERT_EQ(mode_of(dir / "ca.pem"), 0644u);
  ASSERT_EQ(mode_of(dir), 0700u);
  ASSERT_EQ(mode_of(tmp.path / "new"), 0700u);
  ASSERT_EQ(mode_of(tmp.path / "new" / "parents"), 0700u);
  std::set<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir)) entries.insert(entry.path().filename());
  ASSERT_TRUE(entries == (std::set<std::string>{"ca.key", "ca.pem"}));  // no temporary files left

  const CertificateAuthority second = CertificateAuthority::load_or_create(dir, &created);
  ASSERT_TRUE(!created);
  const CertificateAuthority third = CertificateAuthority::load_or_create(dir);
  ASSERT_EQ(second.certificate_pem(), first.certificate_pem());
  ASSERT_EQ(third.certificate_pem(), first.certificate_pem());
  ASSERT_EQ(third.spki_sha256_base64(), first.spki_sha256_base64());
}

TEST(CertificateAuthority, ca_certificate_is_a_long_lived_constrained_ca) {
  TempDir tmp;
  const CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path);
  X509Ptr certificate = ca_certificate(ca);
  const std::time_t now = std::time(nullptr);
  const std::time_t ten_years = static_cast<std::time_t>(10 * 366) * 24 * 3600;
  ASSERT_TRUE(ca.not_after() > now + ten_years);
  ASSERT_TRUE(ca.not_before() <= now);
  ASSERT_TRUE(X509_cmp_time(X509_get0_notAfter(certificate.get()), nullptr) > 0);
  ASSERT_TRUE(X509_check_ca(certificate.get()) == 1);
  ASSERT_EQ(X509_get_pathlen(certificate.get()), 0L);
  ASSERT_TRUE((X509_get_key_usage(certificate.get()) & (KU_KEY_CERT_SIGN | KU_CRL_SIGN)) ==
              (KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  ASSERT_TRUE(X509_get0_subject_key_id(certificate.get()) != nullptr);
  ASSERT_TRUE(ca.subject().find("CN=Mahimahi local CA (") != std::string::npos);
  ASSERT_EQ(X509_check_issued(certificate.get(), certificate.get()), X509_V_OK);  // self-signed
  ASSERT_EQ(EVP_PKEY_get_base_id(X509_get0_pubkey(certificate.get())), EVP_PKEY_EC);
}

TEST(CertificateAuthority, ca_corrupt_certificate_names_the_file) {
  TempDir tmp;
  { CertificateAuthority::load_or_create(tmp.path); }
  write_text(tmp.path / "ca.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
  const std::string path = (tmp.path / "ca.pem").string();
  EXPECT_THROW_WITH(UserError, CertificateAuthority::load_or_create(tmp.path), path);
  EXPECT_THROW_WITH(UserError, CertificateAuthority::load_or_create(tmp.path), path);
  ASSERT_EQ(ERR_peek_error(), 0ul);  // the error queue was left clean
}

TEST(CertificateAuthority, ca_one_file_without_the_other_is_an_error) {
  TempDir tmp;
  { CertificateAuthority::load_or_create(tmp.path); }
  const std::string key = read_text(tmp.path / "ca.key");
  fs::remove(tmp.path / "ca.key");
  EXPECT_THROW_WITH(UserError, CertificateAuthority::load_or_create(tmp.path), (tmp.path / "ca.key").string());
  ASSERT_TRUE(!fs::exists(tmp.path / "ca.key"));  // not silently replaced by a key that fits no certificate

  fs::remove(tmp.path / "ca.pem");
  write_text(tmp.path / "ca.key", key);
  fs::permissions(tmp.path / "ca.key", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_THROW_WITH(UserError, CertificateAuthority::load_or_create(tmp.path), (tmp.path / "ca.pem").string());
}

TEST(CertificateAuthority, ca_key_that_does_not_match_or_is_exposed_is_refused) {
  TempDir tmp;
  const fs::path a = tmp.path / "a", b = tmp.path / "b";
  { CertificateAuthority::load_or_create(a); }
  { CertificateAuthority::load_or_create(b); }
  fs::copy_file(b / "ca.key", a / "ca.key", fs::copy_options::overwrite_existing);
  EXPECT_THROW_WITH(UserError, CertificateAuthority::load_or_create(a), "does not match");

  write_text(b / "ca.key", "garbage\n");
  EXPECT_THROW_WITH(UserError, CertificateAuthority::load_or_create(b), (b / "ca.key").string());

  const fs::path c = tmp.path / "c";
  { CertificateAuthority::load_or_create(c); }
  ::chmod((c / "ca.key").c_str(), 0644);
  EXPECT_THROW_WITH(UserError, CertificateAuthority::load_or_create(c), "chmod 600");
}

TEST(CertificateAuthority, ca_spki_hash_matches_an_independent_computation) {
  TempDir tmp;
  const CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path);
  X509Ptr certificate = ca_certificate(ca);
  unsigned char* der = nullptr;
  const int length = i2d_PUBKEY(X509_get0_pubkey(certificate.get()), &der);
  ASSERT_TRUE(length > 0);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  ASSERT_TRUE(EVP_Digest(der, static_cast<size_t>(length), digest, nullptr, EVP_sha256(), nullptr) == 1);
  OPENSSL_free(der);
  unsigned char base64[64];
  const int base64_length = EVP_EncodeBlock(base64, digest, sizeof digest);
  ASSERT_EQ(ca.spki_sha256_base64(), std::string(reinterpret_cast<char*>(base64), static_cast<size_t>(base64_length)));
  ASSERT_EQ(ca.spki_sha256_base64().size(), 44u);
}

TEST(CertificateAuthority, ca_minted_leaves_verify_for_dns_names_and_ip_literals) {
  TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path);
  X509Ptr root = ca_certificate(ca);
  struct Case {
    std::string requested, checked;
    bool is_ip;
  };
  const std::vector<Case> cases = {{"www.Example.COM", "www.example.com", false},
                                   {"example.org.", "example.org", false},
                                   {"192.0.2.7", "192.0.2.7", true},
                                   {"2001:DB8::1", "2001:db8::1", true},
                                   {"[::1]", "::1", true}};
  for (const auto& c : cases) {
    X509* leaf = SSL_CTX_get0_certificate(ca.server_context(c.requested));
    ASSERT_TRUE(leaf != nullptr);
    ASSERT_EQ(verify(root.get(), leaf, c.checked, c.is_ip), X509_V_OK);
    ASSERT_TRUE(verify(root.get(), leaf, c.is_ip ? "192.0.2.99" : "other.example.com", c.is_ip) != X509_V_OK);

    ASSERT_TRUE(days_between(X509_get0_notBefore(leaf), X509_get0_notAfter(leaf)) <= 398);
    ASSERT_TRUE(X509_cmp_time(X509_get0_notBefore(leaf), nullptr) < 0);
    ASSERT_TRUE(X509_cmp_time(X509_get0_notAfter(leaf), nullptr) > 0);
    ASSERT_EQ(X509_check_ca(leaf), 0);
    ASSERT_TRUE(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
    ASSERT_TRUE(X509_get_key_usage(leaf) & KU_DIGITAL_SIGNATURE);
    ASSERT_TRUE(X509_get0_authority_key_id(leaf) != nullptr);
    ASSERT_EQ(ASN1_STRING_cmp(X509_get0_authority_key_id(leaf), X509_get0_subject_key_id(root.get())), 0);
    ASSERT_EQ(X509_get_signature_nid(leaf), NID_ecdsa_with_SHA256);
    const ASN1_INTEGER* serial = X509_get0_serialNumber(leaf);
    ASSERT_TRUE(serial->length >= 15 && serial->length <= 17);  // 128 random bits
  }
  // The CN keeps to its 64-character limit while the SAN has the whole name.
  const std::string long_name = std::string(60, 'a') + "." + std::string(60, 'b') + ".example";
  X509* leaf = SSL_CTX_get0_certificate(ca.server_context(long_name));
  ASSERT_EQ(verify(root.get(), leaf, long_name, false), X509_V_OK);
  char common_name[256] = {};
  ASSERT_EQ(X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, common_name, sizeof common_name),
            64);
}

TEST(CertificateAuthority, ca_rejects_names_that_are_not_hosts) {
  TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path);
  for (const std::string& bad :
       {std::string(""), std::string("two words"), std::string("*.example.com"), std::string("a..b"),
        std::string("x\x01y"), std::string(64, 'a') + ".com", std::string("evil.com/path")}) {
    EXPECT_THROW_WITH(UserError, ca.server_context(bad), "not a host name");
  }
  EXPECT_THROW_WITH(UserError, ca.write_leaf({}, tmp.path / "c.pem", tmp.path / "c.key"), "at least one");
}

TEST(CertificateAuthority, ca_tls_handshake_in_memory_negotiates_http11) {
  TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path);
  X509Ptr root = ca_certificate(ca);
  SSL_CTX* context = ca.server_context("www.example.com");
  ASSERT_EQ(SSL_CTX_get_min_proto_version(context), static_cast<long>(TLS1_2_VERSION));

  HandshakeResult offered_both = handshake(context, root.get(), "www.example.com", kOfferH2AndHttp11);
  ASSERT_TRUE(offered_both.completed);
  ASSERT_EQ(offered_both.verify_result, static_cast<long>(X509_V_OK));
  ASSERT_EQ(offered_both.alpn, std::string("http/1.1"));
  ASSERT_EQ(offered_both.received, std::string("GET / HTTP/1.1\r\n\r\n"));

  HandshakeResult h2_only = handshake(context, root.get(), "www.example.com", std::string("\x02h2", 3));
  ASSERT_TRUE(h2_only.completed);
  ASSERT_EQ(h2_only.alpn, std::string(""));

  HandshakeResult no_alpn = handshake(context, root.get(), "www.example.com", "");
  ASSERT_TRUE(no_alpn.completed);
  ASSERT_EQ(no_alpn.alpn, std::string(""));

  // A client checking for another name refuses this certificate.
  HandshakeResult wrong_name = handshake(context, root.get(), "other.example.com", kOfferH2AndHttp11);
  ASSERT_TRUE(!wrong_name.completed);
  ASSERT_EQ(wrong_name.verify_result, static_cast<long>(X509_V_ERR_HOSTNAME_MISMATCH));

  // An IP literal (no SNI) verifies against the certificate's IP SAN.
  HandshakeResult ip = handshake(ca.server_context("127.0.0.1"), root.get(), "127.0.0.1", kOfferH2AndHttp11, true);
  ASSERT_TRUE(ip.completed);
  ASSERT_EQ(ip.verify_result, static_cast<long>(X509_V_OK));
  ASSERT_EQ(ip.alpn, std::string("http/1.1"));

  // The chain served is the leaf and the CA.
  STACK_OF(X509)* chain = nullptr;
  ASSERT_TRUE(SSL_CTX_get0_chain_certs(ca.server_context("127.0.0.1"), &chain) == 1);
  ASSERT_EQ(sk_X509_num(chain), 1);
  ASSERT_EQ(X509_cmp(sk_X509_value(chain, 0), root.get()), 0);
}

TEST(CertificateAuthority, ca_server_contexts_are_cached_per_name) {
  TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path);
  X509Ptr root = ca_certificate(ca);
  SSL_CTX* first = ca.server_context("cache.example.com");
  ASSERT_TRUE(first == ca.server_context("cache.example.com"));
  ASSERT_TRUE(first == ca.server_context("CACHE.Example.Com"));

  std::set<SSL_CTX*> contexts;
  std::set<std::string> serials;
  for (int i = 0; i < 100; i++) {
    const std::string name = "host" + std::to_string(i) + ".example.net";
    SSL_CTX* context = ca.server_context(name);
    contexts.insert(context);
    X509* leaf = SSL_CTX_get0_certificate(context);
    ASSERT_EQ(verify(root.get(), leaf, name, false), X509_V_OK);
    const ASN1_INTEGER* serial = X509_get0_serialNumber(leaf);
    serials.insert(std::string(reinterpret_cast<const char*>(serial->data), static_cast<size_t>(serial->length)));
  }
  ASSERT_EQ(contexts.size(), 100u);
  ASSERT_EQ(serials.size(), 100u);

  // Contexts survive moving the authority.
  CertificateAuthority moved = std::move(ca);
  ASSERT_TRUE(moved.server_context("cache.example.com") == first);
  ASSERT_TRUE(handshake(first, root.get(), "cache.example.com", kOfferH2AndHttp11).completed);
}

TEST(CertificateAuthority, ca_write_leaf_gives_apache_a_chain_and_private_key) {
  TempDir tmp;
  CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path / "ca");
  X509Ptr root = ca_certificate(ca);
  const fs::path certificate_path = tmp.path / "site.pem", key_path = tmp.path / "site.key";
  ca.write_leaf({"Example.com", "www.example.com", "10.0.0.1"}, certificate_path, key_path);
  ASSERT_EQ(mode_of(key_path), 0600u);
  ASSERT_EQ(mode_of(certificate_path), 0644u);

  auto chain = parse_certificates(read_text(certificate_path));
  ASSERT_EQ(chain.size(), 2u);
  ASSERT_EQ(X509_cmp(chain[1].get(), root.get()), 0);
  ASSERT_EQ(verify(root.get(), chain[0].get(), "example.com", false), X509_V_OK);
  ASSERT_EQ(verify(root.get(), chain[0].get(), "www.example.com", false), X509_V_OK);
  ASSERT_EQ(verify(root.get(), chain[0].get(), "10.0.0.1", true), X509_V_OK);

  const std::string key_text = read_text(key_path);
  BioPtr bio(BIO_new_mem_buf(key_text.data(), static_cast<int>(key_text.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ASSERT_TRUE(key);
  ASSERT_EQ(X509_check_private_key(chain[0].get(), key.get()), 1);

  // Rewriting replaces both files.
  ca.write_leaf({"example.com"}, certificate_path, key_path);
  auto rewritten = parse_certificates(read_text(certificate_path));
  ASSERT_EQ(rewritten.size(), 2u);
  ASSERT_TRUE(X509_cmp(rewritten[0].get(), chain[0].get()) != 0);
}

TEST(CertificateAuthority, ca_default_directory_follows_the_environment) {
  const auto lookup_in = [](std::map<std::string, std::string> environment) {
    return [environment](const char* name) -> const char* {
      const auto found = environment.find(name);
      return found == environment.end() ? nullptr : found->second.c_str();
    };
  };
  ASSERT_EQ(CertificateAuthority::default_directory(lookup_in({{"MAHIMAHI_CA_DIR", "/x/ca"}, {"HOME", "/home/u"}})),
            fs::path("/x/ca"));
  ASSERT_EQ(CertificateAuthority::default_directory(lookup_in({{"XDG_DATA_HOME", "/data"}, {"HOME", "/home/u"}})),
            fs::path("/data/mahimahi/ca"));
  ASSERT_EQ(CertificateAuthority::default_directory(lookup_in({{"XDG_DATA_HOME", "relative"}, {"HOME", "/home/u"}})),
            fs::path("/home/u/.local/share/mahimahi/ca"));
  const fs::path fallback = CertificateAuthority::default_directory(lookup_in({{"HOME", "not/absolute"}}));
  ASSERT_TRUE(fallback.is_absolute());
  ASSERT_TRUE(fallback.string().ends_with("/.local/share/mahimahi/ca"));
  ASSERT_EQ(CertificateAuthority::default_directory(lookup_in({{"MAHIMAHI_CA_DIR", "rel"}})),
            fs::current_path() / "rel");
}
