// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The system's CAs for checking servers, as SSL_CTX_set_default_verify_paths gives them (the
// bundle file, the hashed directory and the default store, or what SSL_CERT_FILE and
// SSL_CERT_DIR name where the environment counts), but read only when a chain needs them: an
// issuer is looked for in the directory by the hash of its name first, and the bundle (on
// Debian about 140 certificates, 16 ms of CPU to parse, at every start of a proxy that checks
// servers) is parsed the first time the directory does not have an issuer asked for.
#include <openssl/types.h>

#include <string>

// Adds the system's CAs to `store`, lazily as above.
void add_system_cas_lazily(X509_STORE* store);

// Adds the PEM bundle `file` to `store` as a lookup that parses it the first time an issuer is
// looked for that the store and its earlier lookups do not have (for add_system_cas_lazily, and
// for the tests). A file that cannot be read adds nothing, as for the default paths.
void add_lazy_bundle(X509_STORE* store, const std::string& file);
