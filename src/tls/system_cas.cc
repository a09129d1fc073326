// SPDX-License-Identifier: GPL-3.0-or-later
#include "tls/system_cas.hh"

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cstdlib>
#include <mutex>

namespace {

// A lookup's own data: the bundle, parsed at most once (a context may serve several threads).
struct LazyBundle {
  std::string file;
  std::once_flag parsed;
};

LazyBundle* bundle_of(X509_LOOKUP* lookup) { return static_cast<LazyBundle*>(X509_LOOKUP_get_method_data(lookup)); }

// The store's certificate for `name` after parsing the bundle into it, as the hashed directory's
// lookup answers: `result` points at the store's object without a reference of its own (the
// caller takes one).
int by_subject(X509_LOOKUP* lookup, X509_LOOKUP_TYPE type, const X509_NAME* name, X509_OBJECT* result) {
  LazyBundle* bundle = bundle_of(lookup);
  if (!bundle || type != X509_LU_X509) return 0;
  std::call_once(bundle->parsed, [&] {
    (void)X509_load_cert_crl_file(lookup, bundle->file.c_str(), X509_FILETYPE_PEM);
    ERR_clear_error();  // a missing or partly unreadable bundle, as X509_STORE_set_default_paths allows
  });
  X509_STORE* store = X509_LOOKUP_get_store(lookup);
  if (!store || !X509_STORE_lock(store)) return 0;
  const X509_OBJECT* found = X509_OBJECT_retrieve_by_subject(X509_STORE_get0_objects(store), type, name);
  X509* certificate = found ? X509_OBJECT_get0_X509(found) : nullptr;
  int ok = 0;
  if (certificate && X509_OBJECT_set1_X509(result, certificate) == 1) {
    X509_free(certificate);  // the reference set1 took: the store keeps the certificate alive
    ok = 1;
  }
  X509_STORE_unlock(store);
  return ok;
}

void free_bundle(X509_LOOKUP* lookup) {
  delete bundle_of(lookup);
  X509_LOOKUP_set_method_data(lookup, nullptr);
}

const X509_LOOKUP_METHOD* lazy_bundle_method() {
  static X509_LOOKUP_METHOD* const method = [] {
    X509_LOOKUP_METHOD* m = X509_LOOKUP_meth_new("mahimahi: PEM bundle parsed on first use");
    if (m) {
      X509_LOOKUP_meth_set_get_by_subject(m, by_subject);
      X509_LOOKUP_meth_set_free(m, free_bundle);
    }
    return m;
  }();
  return method;
}

}  // namespace

void add_lazy_bundle(X509_STORE* store, const std::string& file) {
  const X509_LOOKUP_METHOD* method = lazy_bundle_method();
  X509_LOOKUP* lookup = method ? X509_STORE_add_lookup(store, const_cast<X509_LOOKUP_METHOD*>(method)) : nullptr;
  if (lookup) X509_LOOKUP_set_method_data(lookup, new LazyBundle{file, {}});
  ERR_clear_error();
}

void add_system_cas_lazily(X509_STORE* store) {
  // The directory and the store as X509_STORE_set_default_paths adds them (both look up by name
  // when asked); the bundle that it parses at once comes last, parsed on first need. The
  // environment counts as OpenSSL lets it: not in a setuid program (secure_getenv).
  if (X509_LOOKUP* directory = X509_STORE_add_lookup(store, X509_LOOKUP_hash_dir()))
    (void)X509_LOOKUP_add_dir(directory, nullptr, X509_FILETYPE_DEFAULT);
  if (X509_LOOKUP* uri = X509_STORE_add_lookup(store, X509_LOOKUP_store())) (void)X509_LOOKUP_add_store(uri, nullptr);
  const char* file = ::secure_getenv(X509_get_default_cert_file_env());
  add_lazy_bundle(store, file && *file ? file : X509_get_default_cert_file());
  ERR_clear_error();
}
