// SPDX-License-Identifier: GPL-3.0-or-later
#include "tls/certificate_authority.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "tls/openssl_error.hh"
#include "tls/openssl_ptr.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/host_name.hh"
#include "util/private_directory.hh"
#include "util/text.hh"
#include "util/time_text.hh"

namespace fs = std::filesystem;

void CertificateAuthority::Free::operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
void CertificateAuthority::Free::operator()(X509* p) const { X509_free(p); }
void CertificateAuthority::Free::operator()(SSL_CTX* p) const { SSL_CTX_free(p); }

namespace {
using KeyPtr = CertificateAuthority::KeyPtr;
using CertificatePtr = CertificateAuthority::CertificatePtr;
using ContextPtr = CertificateAuthority::ContextPtr;

// Owners of the short-lived OpenSSL objects used while building certificates.
using BioPtr = std::unique_ptr<BIO, OpenSslFree<BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslFree<BN_free>>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslFree<X509_EXTENSION_free>>;
using GeneralNamePtr = std::unique_ptr<GENERAL_NAME, OpenSslFree<GENERAL_NAME_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, OpenSslFree<GENERAL_NAMES_free>>;
using StringPtr = std::unique_ptr<ASN1_STRING, OpenSslFree<ASN1_STRING_free>>;

constexpr long kDay = 24 * 60 * 60;
constexpr int kCaDays = 20 * 365 + 5;  // 20 years with their leap days
constexpr int kLeafDays = 397;         // Chromium rejects leaves valid for more than 398 days

void check(int ok, const char* what) {
  if (ok <= 0) throw openssl_failure(what);
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(std::max(length, 0L)));
}

BioPtr memory_bio() {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio) throw openssl_failure("BIO_new");
  return bio;
}

std::string certificate_to_pem(X509* certificate) {
  BioPtr bio = memory_bio();
  check(PEM_write_bio_X509(bio.get(), certificate), "PEM_write_bio_X509");
  return bio_text(bio.get());
}

std::string key_to_pem(EVP_PKEY* key) {
  BioPtr bio = memory_bio();
  check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr), "PEM_write_bio_PrivateKey");
  return bio_text(bio.get());
}

KeyPtr generate_key() {
  KeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) throw openssl_failure("generating an EC P-256 key");
  return key;
}

// ---- files ----

// The way out when the CA's files are beyond repair.
std::string recreate_fix(const fs::path& dir) {
  return "remove " + dir.string() + " to make a new CA (then run `mm-ca trust` again)";
}

// Writes via a temporary file renamed into place, so readers see the old file or the whole new
// one, and a key is never visible with looser permissions than `mode`.
void write_file_atomically(const fs::path& path, const std::string& contents, mode_t mode) {
  std::string temporary = path.string() + ".XXXXXX";
  const auto fail = [&](int error) {
    return UserError("cannot write " + path.string() + ": " + std::strerror(error) +
                     "; check that its directory exists and is writable by you");
  };
  FileDescriptor fd(::mkostemp(temporary.data(), O_CLOEXEC));
  if (!fd.valid()) throw fail(errno);
  try {
    if (::fchmod(fd.get(), mode) != 0) throw fail(errno);
    try {
      write_all(fd.get(), contents);
    } catch (const SystemError& e) {
      throw fail(e.error());
    }
    if (::fsync(fd.get()) != 0) throw fail(errno);
    fd.close();
    if (::rename(temporary.c_str(), path.c_str()) != 0) throw fail(errno);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
}

std::string read_ca_file(const fs::path& path) {
  try {
    return read_user_file(path.string(), "CA file", 1 << 20, "a CA's key or certificate is a few KiB");
  } catch (const UserError& e) {
    throw UserError(std::string(e.what()) + "; make it readable by you, or " + recreate_fix(path.parent_path()));
  }
}

bool file_exists(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  throw UserError("cannot examine " + path.string() + ": " + std::strerror(errno) +
                  "; make its directory accessible to you or choose another with --ca-dir");
}

// The CA directory's lock, so that processes starting together create one CA, not two halves.
FileDescriptor lock_directory(const fs::path& dir) {
  FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid())
    throw UserError("cannot open directory " + dir.string() + ": " + std::strerror(errno) +
                    "; choose another CA directory with --ca-dir or MAHIMAHI_CA_DIR");
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw SystemError("flock " + dir.string());
  }
  return fd;
}

// ---- names ----

// A certificate subject: a canonical host name or IP literal, and for the latter its bytes.
struct HostName {
  std::string text;
  std::string address;  // 4 or 16 bytes if an IP literal, else empty
};

HostName parse_host_name(const std::string& raw) {
  std::string name = ascii_lowercase(raw);
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);

  unsigned char bytes[16];
  char canonical[INET6_ADDRSTRLEN];
  for (const int family : {AF_INET, AF_INET6}) {
    if (::inet_pton(family, name.c_str(), bytes) == 1) {
      ::inet_ntop(family, bytes, canonical, sizeof canonical);
      return {canonical, std::string(reinterpret_cast<char*>(bytes), family == AF_INET ? 4 : 16)};
    }
  }
  if (!name.empty() && name.back() == '.') name.pop_back();  // a fully qualified name's root dot
  if (!is_host_name(name)) {
    throw UserError("\"" + printable(raw) + "\"" +
                    " is not a host name or IP address; give a name such as www.example.com or 192.0.2.1");
  }
  return {name, {}};
}

// ---- certificates ----

void add_extension(X509* certificate, X509V3_CTX* context, int nid, const char* value) {
  ExtensionPtr extension(X509V3_EXT_nconf_nid(nullptr, context, nid, value));
  if (!extension) throw openssl_failure(std::string("making extension ") + OBJ_nid2sn(nid));
  check(X509_add_ext(certificate, extension.get(), -1), "X509_add_ext");
}

void add_name_entry(X509_NAME* name, const char* field, const std::string& value) {
  check(X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(value.data()),
                                   static_cast<int>(value.size()), -1, 0),
        "X509_NAME_add_entry_by_txt");
}

// A fresh certificate with a random 128-bit serial, valid from a day ago (tolerating clocks a
// little behind) for `days`.
CertificatePtr new_certificate(EVP_PKEY* public_key, int days) {
  CertificatePtr certificate(X509_new());
  if (!certificate) throw openssl_failure("X509_new");
  check(X509_set_version(certificate.get(), X509_VERSION_3), "X509_set_version");

  unsigned char random[16];
  check(RAND_bytes(random, sizeof random), "RAND_bytes");
  random[0] |= 0x01;  // never zero
  BignumPtr serial(BN_bin2bn(random, sizeof random, nullptr));
  if (!serial || !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(certificate.get()))) {
    throw openssl_failure("setting the serial number");
  }

  const std::time_t now = std::time(nullptr);
  if (!ASN1_TIME_adj(X509_getm_notBefore(certificate.get()), now, 0, -kDay) ||
      !ASN1_TIME_adj(X509_getm_notAfter(certificate.get()), now, days, -kDay)) {
    throw openssl_failure("setting the validity");
  }
  check(X509_set_pubkey(certificate.get(), public_key), "X509_set_pubkey");
  return certificate;
}

std::string account_name() {
  const struct passwd* entry = ::getpwuid(::getuid());
  std::string user = entry && entry->pw_name ? entry->pw_name : "uid" + std::to_string(::getuid());
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  return user + "@" + host;
}

CertificatePtr make_ca_certificate(EVP_PKEY* key) {
  CertificatePtr certificate = new_certificate(key, kCaDays);
  X509_NAME* name = X509_get_subject_name(certificate.get());
  add_name_entry(name, "O", "Mahimahi");
  // A CN is at most 64 characters.
  add_name_entry(name, "CN", ("Mahimahi local CA (" + account_name()).substr(0, 63) + ")");
  check(X509_set_issuer_name(certificate.get(), name), "X509_set_issuer_name");

  X509V3_CTX context;
  X509V3_set_ctx(&context, certificate.get(), certificate.get(), nullptr, nullptr, 0);
  add_extension(certificate.get(), &context, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  add_extension(certificate.get(), &context, NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(certificate.get(), &context, NID_subject_key_identifier, "hash");
  check(X509_sign(certificate.get(), key, EVP_sha256()), "signing the CA certificate");
  return certificate;
}

void add_subject_alternative_names(X509* certificate, const std::vector<HostName>& names) {
  GeneralNamesPtr all(sk_GENERAL_NAME_new_null());
  if (!all) throw openssl_failure("sk_GENERAL_NAME_new_null");
  for (const auto& name : names) {
    const bool ip = !name.address.empty();
    const std::string& value = ip ? name.address : name.text;
    StringPtr string(ip ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new());
    GeneralNamePtr general(GENERAL_NAME_new());
    if (!string || !general || !ASN1_STRING_set(string.get(), value.data(), static_cast<int>(value.size()))) {
      throw openssl_failure("making a subjectAltName");
    }
    GENERAL_NAME_set0_value(general.get(), ip ? GEN_IPADD : GEN_DNS, string.release());
    check(sk_GENERAL_NAME_push(all.get(), general.get()), "sk_GENERAL_NAME_push");
    general.release();
  }
  check(X509_add1_ext_i2d(certificate, NID_subject_alt_name, all.get(), 0, X509V3_ADD_DEFAULT),
        "adding subjectAltName");
}

CertificatePtr mint_leaf(X509* ca_certificate, EVP_PKEY* ca_key, EVP_PKEY* leaf_key,
                         const std::vector<std::string>& raw_names) {
  if (raw_names.empty()) throw UserError("a certificate needs at least one host name");
  std::vector<HostName> names;
  for (const auto& raw : raw_names) {
    HostName name = parse_host_name(raw);
    if (std::none_of(names.begin(), names.end(), [&](const HostName& n) { return n.text == name.text; })) {
      names.push_back(std::move(name));
    }
  }

  CertificatePtr certificate = new_certificate(leaf_key, kLeafDays);
  add_name_entry(X509_get_subject_name(certificate.get()), "CN", names.front().text.substr(0, 64));
  check(X509_set_issuer_name(certificate.get(), X509_get_subject_name(ca_certificate)), "X509_set_issuer_name");

  X509V3_CTX context;
  X509V3_set_ctx(&context, ca_certificate, certificate.get(), nullptr, nullptr, 0);
  add_extension(certificate.get(), &context, NID_basic_constraints, "critical,CA:FALSE");
  add_extension(certificate.get(), &context, NID_key_usage, "critical,digitalSignature");
  add_extension(certificate.get(), &context, NID_ext_key_usage, "serverAuth");
  add_extension(certificate.get(), &context, NID_subject_key_identifier, "hash");
  add_extension(certificate.get(), &context, NID_authority_key_identifier, "keyid:always");
  add_subject_alternative_names(certificate.get(), names);
  check(X509_sign(certificate.get(), ca_key, EVP_sha256()), "signing a certificate");
  return certificate;
}

// ALPN: HTTP/1.1 if offered, else no protocol at all; the recorder speaks nothing else.
int select_http11(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
                  unsigned int in_length, void*) {
  static constexpr char kHttp11[] = "http/1.1";
  constexpr unsigned int kLength = sizeof kHttp11 - 1;
  for (unsigned int i = 0; i < in_length;) {
    const unsigned int length = in[i];
    if (i + 1 + length > in_length) break;
    if (length == kLength && std::memcmp(in + i + 1, kHttp11, kLength) == 0) {
      *out = in + i + 1;
      *out_length = static_cast<unsigned char>(kLength);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + length;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

std::time_t to_time(const ASN1_TIME* time) {
  struct tm parts {};
  if (!ASN1_TIME_to_tm(time, &parts)) throw openssl_failure("ASN1_TIME_to_tm");
  return ::timegm(&parts);
}

}  // namespace

fs::path CertificateAuthority::default_directory() {
  return default_directory([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

fs::path CertificateAuthority::default_directory(const std::function<const char*(const char*)>& lookup) {
  const auto variable = [&](const char* name) -> std::string {
    const char* value = lookup(name);
    return value ? value : "";
  };
  if (const std::string dir = variable("MAHIMAHI_CA_DIR"); !dir.empty()) return fs::absolute(dir);
  if (const std::string data = variable("XDG_DATA_HOME"); !data.empty() && data.front() == '/') {
    return fs::path(data) / "mahimahi" / "ca";
  }
  std::string home = variable("HOME");
  if (home.empty() || home.front() != '/') {
    const struct passwd* entry = ::getpwuid(::getuid());
    if (!entry || !entry->pw_dir || entry->pw_dir[0] != '/') {
      throw UserError("cannot find your home directory for the CA; set MAHIMAHI_CA_DIR to a directory of yours");
    }
    home = entry->pw_dir;
  }
  return fs::path(home) / ".local" / "share" / "mahimahi" / "ca";
}

CertificateAuthority::CertificateAuthority(fs::path dir, KeyPtr key, CertificatePtr certificate)
    : directory_(std::move(dir)),
      certificate_path_(certificate_file(directory_)),
      key_(std::move(key)),
      certificate_(std::move(certificate)),
      mutex_(std::make_unique<std::mutex>()) {}

CertificateAuthority::CertificateAuthority(CertificateAuthority&&) noexcept = default;
CertificateAuthority& CertificateAuthority::operator=(CertificateAuthority&&) noexcept = default;
CertificateAuthority::~CertificateAuthority() = default;

fs::path CertificateAuthority::certificate_file(const fs::path& dir) { return dir / "ca.pem"; }

CertificateAuthority CertificateAuthority::load_or_create(const fs::path& dir, bool* created) {
  make_private_directory(dir, {.fix = "choose another CA directory with --ca-dir or MAHIMAHI_CA_DIR"});
  const FileDescriptor lock = lock_directory(dir);
  const fs::path certificate_path = certificate_file(dir), key_path = dir / "ca.key";
  const bool exists = file_exists(certificate_path) || file_exists(key_path);
  if (created) *created = !exists;
  if (exists) return load_existing(dir);

  KeyPtr key = generate_key();
  CertificatePtr certificate = make_ca_certificate(key.get());
  // The key first: a crash in between leaves a key without certificate, never the reverse.
  write_file_atomically(key_path, key_to_pem(key.get()), 0600);
  write_file_atomically(certificate_path, certificate_to_pem(certificate.get()), 0644);
  return CertificateAuthority(dir, std::move(key), std::move(certificate));
}

CertificateAuthority CertificateAuthority::load_existing(const fs::path& dir) {
  const fs::path certificate_path = certificate_file(dir), key_path = dir / "ca.key";
  const bool has_certificate = file_exists(certificate_path), has_key = file_exists(key_path);
  if (has_certificate != has_key) {
    const fs::path& present = has_certificate ? certificate_path : key_path;
    const fs::path& missing = has_certificate ? key_path : certificate_path;
    throw UserError(present.string() + " exists but " + missing.string() + " is missing; restore it, or " +
                    recreate_fix(dir));
  }

  const std::string certificate_text = read_ca_file(certificate_path);
  BioPtr certificate_bio(BIO_new_mem_buf(certificate_text.data(), static_cast<int>(certificate_text.size())));
  CertificatePtr certificate(certificate_bio ? PEM_read_bio_X509(certificate_bio.get(), nullptr, nullptr, nullptr)
                                             : nullptr);
  if (!certificate) {
    ERR_clear_error();
    throw UserError(certificate_path.string() + " is not a PEM certificate (corrupt?); restore it, or " +
                    recreate_fix(dir));
  }

  struct stat st {};
  if (::stat(key_path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    throw UserError(key_path.string() + " is readable by other users; run chmod 600 " + key_path.string() +
                    " (and consider making a new CA: " + recreate_fix(dir) + ")");
  }
  const std::string key_text = read_ca_file(key_path);
  BioPtr key_bio(BIO_new_mem_buf(key_text.data(), static_cast<int>(key_text.size())));
  // A passphrase callback that declines, so that an encrypted key fails rather than prompts.
  const auto no_passphrase = [](char*, int, int, void*) { return -1; };
  KeyPtr key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr) : nullptr);
  if (!key) {
    ERR_clear_error();
    throw UserError(key_path.string() + " is not an unencrypted PEM private key (corrupt?); restore it, or " +
                    recreate_fix(dir));
  }
  if (X509_check_private_key(certificate.get(), key.get()) != 1) {
    ERR_clear_error();
    throw UserError(key_path.string() + " does not match " + certificate_path.string() + "; restore the pair, or " +
                    recreate_fix(dir));
  }
  if (X509_check_ca(certificate.get()) == 0) {
    throw UserError(certificate_path.string() + " is not a CA certificate; " + recreate_fix(dir));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(certificate.get())) <= 0) {
    throw UserError(certificate_path.string() + " expired on " +
                    utc_text(to_time(X509_get0_notAfter(certificate.get()))) + "; " + recreate_fix(dir));
  }
  return CertificateAuthority(dir, std::move(key), std::move(certificate));
}

std::string CertificateAuthority::certificate_pem() const { return certificate_to_pem(certificate_.get()); }

std::string CertificateAuthority::spki_sha256_base64() const {
  EVP_PKEY* public_key = X509_get0_pubkey(certificate_.get());
  const int length = public_key ? i2d_PUBKEY(public_key, nullptr) : -1;
  if (length <= 0) throw openssl_failure("i2d_PUBKEY");
  std::string der(static_cast<size_t>(length), '\0');
  unsigned char* cursor = reinterpret_cast<unsigned char*>(der.data());
  check(i2d_PUBKEY(public_key, &cursor), "i2d_PUBKEY");

  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  check(EVP_Digest(der.data(), der.size(), digest, &digest_length, EVP_sha256(), nullptr), "EVP_Digest");
  unsigned char base64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
  const int base64_length = EVP_EncodeBlock(base64, digest, static_cast<int>(digest_length));
  return std::string(reinterpret_cast<char*>(base64), static_cast<size_t>(base64_length));
}

std::string CertificateAuthority::subject() const {
  BioPtr bio = memory_bio();
  check(X509_NAME_print_ex(bio.get(), X509_get_subject_name(certificate_.get()), 0,
                           XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0,
        "X509_NAME_print_ex");
  return bio_text(bio.get());
}

std::time_t CertificateAuthority::not_before() const { return to_time(X509_get0_notBefore(certificate_.get())); }
std::time_t CertificateAuthority::not_after() const { return to_time(X509_get0_notAfter(certificate_.get())); }

EVP_PKEY* CertificateAuthority::leaf_key() {
  if (!leaf_key_) leaf_key_ = generate_key();
  return leaf_key_.get();
}

SSL_CTX* CertificateAuthority::server_context(const std::string& name) {
  const HostName host = parse_host_name(name);
  const std::lock_guard<std::mutex> guard(*mutex_);
  if (const auto found = contexts_.find(host.text); found != contexts_.end()) return found->second.get();

  EVP_PKEY* key = leaf_key();
  CertificatePtr certificate = mint_leaf(certificate_.get(), key_.get(), key, {host.text});
  ContextPtr context(SSL_CTX_new(TLS_server_method()));
  if (!context) throw openssl_failure("SSL_CTX_new");
  SSL_CTX* ctx = context.get();
  check(SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION), "SSL_CTX_set_min_proto_version");
  check(SSL_CTX_use_certificate(ctx, certificate.get()), "SSL_CTX_use_certificate");
  check(SSL_CTX_use_PrivateKey(ctx, key), "SSL_CTX_use_PrivateKey");
  check(static_cast<int>(SSL_CTX_add1_chain_cert(ctx, certificate_.get())), "SSL_CTX_add1_chain_cert");
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);
  contexts_.emplace(host.text, std::move(context));
  return ctx;
}

void CertificateAuthority::write_leaf(const std::vector<std::string>& names, const fs::path& certificate,
                                      const fs::path& key) {
  EVP_PKEY* leaf;
  std::string ca_pem, key_text;
  {
    const std::lock_guard<std::mutex> guard(*mutex_);
    leaf = leaf_key();
    if (leaf_key_pem_.empty()) leaf_key_pem_ = key_to_pem(leaf);
    if (certificate_pem_.empty()) certificate_pem_ = certificate_pem();
    ca_pem = certificate_pem_;
    key_text = leaf_key_pem_;
  }
  // Signing outside the lock: the keys and the CA certificate are only read (OpenSSL 3 allows
  // that from several threads), so a replay's threads mint its servers' leaves at once.
  const CertificatePtr minted = mint_leaf(certificate_.get(), key_.get(), leaf, names);
  const std::string chain = certificate_to_pem(minted.get()) + ca_pem;
  write_file_atomically(key, key_text, 0600);
  write_file_atomically(certificate, chain, 0644);
}
