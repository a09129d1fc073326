// SPDX-License-Identifier: GPL-3.0-or-later
#include "cumulus/local_service.hh"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cumulus/bulk.hh"
#include "tls/certificate_authority.hh"
#include "util/address.hh"
#include "util/exception.hh"
#include "util/text.hh"

int run_local_service(const LocalServiceSettings& settings, const FerryEndpoints& endpoints,
                      const std::function<void()>& ready) {
  const auto &ca_dir = settings.ca_dir, &remote = settings.remote, &token_file = settings.token_file;
  const LocalProxyOptions& options = settings.options;
  // The user's rights from here on: the CA, the token file and the environment are read as the user.
  try {
    LocalProxyOptions proxy_options = options;
    std::optional<BulkRemote> from_env;
    if (const char* env = std::getenv("MAHIMAHI_CUMULUS_REMOTE"); env && *env) {
      from_env = parse_bulk_remote(env);
      // (The value is not repeated: it may hold the token.)
      if (!from_env && !remote)
        throw UserError(
            "MAHIMAHI_CUMULUS_REMOTE is not TOKEN@ADDRESS:PORT (the token, an IPv4 address and a port), as "
            "mm-cumulus-remote sets it");
    }
    std::string where;
    if (remote) {
      where = *remote;
    } else if (from_env) {
      where = from_env->address;
    } else {
      throw UserError(
          "no Remote Proxy: give --remote=ADDRESS:PORT, or run inside mm-cumulus-remote, which sets "
          "MAHIMAHI_CUMULUS_REMOTE");
    }
    if (token_file) {
      proxy_options.token = read_bulk_token_file(*token_file, false);
    } else if (from_env && !from_env->token.empty()) {
      proxy_options.token = from_env->token;
    } else {
      throw UserError("no token for the Remote Proxy at " + where +
                      ": give --token-file=FILE (the file of mm-cumulus-remote --token-file), or "
                      "MAHIMAHI_CUMULUS_REMOTE=TOKEN@ADDRESS:PORT");
    }
    proxy_options.remote = *parse_ipv4_endpoint(where);
    proxy_options.remote_text = where;
    proxy_options.client_address = endpoints.inner_address;
    proxy_options.say = [](const std::string& line) { std::cerr << "mm-cumulus-local: " << line << std::endl; };
    const char* bundle = std::getenv("SSL_CERT_FILE");
    if (proxy_options.upstream_ca_file.empty() && bundle && *bundle) proxy_options.upstream_ca_file = bundle;
    CertificateAuthority ca = CertificateAuthority::load_or_create(ca_dir ? std::filesystem::path(*ca_dir)
                                                                          : CertificateAuthority::default_directory());
    ca.server_context("localhost");  // makes the leaf key now, not during the first TLS handshake
    LocalProxy proxy(FileDescriptor(::dup(endpoints.intercepted)), ca, proxy_options);
    const int status = run_ferry_pair_beside(endpoints, proxy, ready);
    const LocalProxyTotals t = proxy.totals();
    if (t.page_loads > 0 || options.verbose) {
      std::cerr << "mm-cumulus-local: " << count_of(t.page_loads, "page load") << ", "
                << count_of(t.from_cache, "request") << " answered from bulk responses ("
                << count_of(t.bulk_pairs, "object") << ", " << (t.bulk_bytes >> 10) << " KiB), " << t.forwarded
                << " sent to servers";
      if (t.bulk_failures) std::cerr << "; " << count_of(t.bulk_failures, "bulk response") << " failed";
      if (t.failed_connections) std::cerr << "; " << count_of(t.failed_connections, "connection") << " failed";
      if (t.refused_connections) std::cerr << "; " << count_of(t.refused_connections, "connection") << " refused";
      std::cerr << std::endl;
    }
    return status;
  } catch (const std::exception& e) {
    std::cerr << "mm-cumulus-local: " << e.what() << std::endl;
    return 1;
  }
}
