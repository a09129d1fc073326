// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A per-user certificate authority for intercepting TLS while recording and serving it in
// replay: mm-record mints a certificate on the fly for each name a client asks for (SNI), and
// replay's Apache gets per-host certificates written to disk, all signed by one local CA that
// the user trusts once (mm-ca trust, or Chromium's --ignore-certificate-errors-spki-list).
//
// Keys are EC P-256 (CA and leaves): generation and signing take microseconds, and every
// client of interest (Chromium, Firefox, curl, Apache) supports ECDSA. The CA key never leaves
// the CA directory, which holds:
//   ca.pem  the CA certificate (mode 0644)
//   ca.key  its private key, unencrypted PKCS#8 PEM (mode 0600; the directory is 0700)
#include <openssl/types.h>

#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

class CertificateAuthority {
 public:
  // $MAHIMAHI_CA_DIR if set; else $XDG_DATA_HOME/mahimahi/ca if XDG_DATA_HOME is absolute;
  // else <home>/.local/share/mahimahi/ca, <home> being $HOME if absolute, else the passwd entry
  // of the real user id.
  static std::filesystem::path default_directory();
  // The same, reading variables through `lookup` (e.g. a setuid program's saved environment).
  static std::filesystem::path default_directory(const std::function<const char*(const char*)>& lookup);

  // Where the CA certificate of the CA directory `dir` is (dir/ca.pem), whether it exists or not.
  static std::filesystem::path certificate_file(const std::filesystem::path& dir);

  // Loads ca.pem and ca.key from dir, creating both (and the directory, 0700) if both are
  // absent; `created`, if given, tells which. Throws UserError if the directory is not private
  // (util/private_directory.hh), only one file exists, either is unreadable or corrupt, the key
  // does not match, or the certificate is not a usable CA.
  static CertificateAuthority load_or_create(const std::filesystem::path& dir, bool* created = nullptr);

  CertificateAuthority(CertificateAuthority&&) noexcept;
  CertificateAuthority& operator=(CertificateAuthority&&) noexcept;
  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;
  ~CertificateAuthority();

  const std::filesystem::path& directory() const { return directory_; }
  const std::filesystem::path& certificate_path() const { return certificate_path_; }
  std::string certificate_pem() const;
  // base64(SHA-256(DER SubjectPublicKeyInfo)): what --ignore-certificate-errors-spki-list takes.
  std::string spki_sha256_base64() const;
  std::string subject() const;  // RFC 2253 text, e.g. "CN=Mahimahi local CA (ann@box),O=Mahimahi"
  std::time_t not_before() const;
  std::time_t not_after() const;

  // A TLS server context presenting a certificate for `name` (a DNS name, or an IPv4/IPv6
  // literal, which gets an IP SAN) with the chain leaf + CA. Cached per lower-cased name: the
  // context is owned by this object and lives as long as it. ALPN selects "http/1.1" when the
  // client offers it, nothing otherwise (never h2); TLS 1.2 at least. Thread-safe.
  // Throws UserError if `name` is not a host name or IP literal.
  SSL_CTX* server_context(const std::string& name);

  // Writes a certificate for `names` (all as SANs; the first is the CN) as PEM, leaf then CA,
  // to `certificate` (0644), and its private key to `key` (0600), each atomically. The key is
  // this object's leaf key, the one its server contexts use too.
  void write_leaf(const std::vector<std::string>& names, const std::filesystem::path& certificate,
                  const std::filesystem::path& key);

  // One deleter for each OpenSSL resource held here.
  struct Free {
    void operator()(EVP_PKEY* p) const;
    void operator()(X509* p) const;
    void operator()(SSL_CTX* p) const;
  };
  using KeyPtr = std::unique_ptr<EVP_PKEY, Free>;
  using CertificatePtr = std::unique_ptr<X509, Free>;
  using ContextPtr = std::unique_ptr<SSL_CTX, Free>;

 private:
  CertificateAuthority(std::filesystem::path dir, KeyPtr key, CertificatePtr certificate);
  static CertificateAuthority load_existing(const std::filesystem::path& dir);
  EVP_PKEY* leaf_key();  // caller holds mutex_

  std::filesystem::path directory_;
  std::filesystem::path certificate_path_;
  KeyPtr key_;
  CertificatePtr certificate_;
  KeyPtr leaf_key_;  // generated on first use, shared by every leaf this object mints
  // PEM of the leaf key and of the CA certificate, made once: OpenSSL 3's encoders take about a
  // millisecond a call, and a replay writes a leaf per HTTPS server (write_leaf).
  std::string leaf_key_pem_, certificate_pem_;
  std::unordered_map<std::string, ContextPtr> contexts_;
  std::unique_ptr<std::mutex> mutex_;  // behind a pointer so the object stays movable
};
