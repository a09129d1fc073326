// SPDX-License-Identifier: GPL-3.0-or-later
#include "record/record_shell.hh"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "recording/record_file.hh"
#include "shell/packet_shell.hh"
#include "tls/certificate_authority.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
// The line that ends a recording, and the removal of a directory this run made and left empty.
void report_recording(const std::string& dir, bool created, const RecordWriter& writer, uint64_t failed_connections) {
  std::cerr << "mm-record: " << count_of(writer.written(), "pair") << " recorded";
  if (writer.written() > 0) std::cerr << (created ? " in " : " and added to ") << dir;
  if (writer.failed()) std::cerr << ", " << writer.failed() << " could not be written";
  if (failed_connections) std::cerr << "; " << count_of(failed_connections, "connection") << " failed";
  if (writer.written() == 0) {
    // An empty directory would only make the retry fail with "already exists".
    if (!created) {
      std::cerr << "; " << dir << " is unchanged";
    } else if (::rmdir(dir.c_str()) == 0) {
      std::cerr << "; removed the empty directory " << dir << ", so the same command can be run again";
    } else {
      std::cerr << "; " << dir << " is left as it is";
    }
  }
  std::cerr << std::endl;
}
}  // namespace

int run_record_ferry(const RecordShellSettings& settings, const FerryEndpoints& endpoints,
                     const std::function<void()>& ready) {
  const std::string& dir = settings.dir;
  const auto& ca_dir = settings.ca_dir;
  const RecordProxyOptions& options = settings.options;
  const bool append = settings.append, write_at_once = settings.write_at_once;
  // The user's rights from here on: DIR and the CA are created and read as the user.
  bool created = false;
  // The proxy's connections allocate and free tens of KiB each (TLS buffers, messages): without
  // these, the threads' heaps shrink after each and grow back for the next (an mprotect, then
  // page faults that zero the pages again). A few MiB stay mapped instead.
  ::mallopt(M_TOP_PAD, 1 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 8 << 20);
  try {
    // OpenSSL ignores SSL_CERT_FILE in a setuid program, even after it dropped its rights.
    RecordProxyOptions proxy_options = options;
    const char* bundle = std::getenv("SSL_CERT_FILE");
    if (proxy_options.upstream_ca_file.empty() && bundle && *bundle) proxy_options.upstream_ca_file = bundle;
    if (append) {
      check_recording_to_append(dir);
    } else {
      create_record_directory(dir);
      created = true;
    }
    CertificateAuthority ca = CertificateAuthority::load_or_create(ca_dir ? std::filesystem::path(*ca_dir)
                                                                          : CertificateAuthority::default_directory());
    ca.server_context("localhost");  // makes the leaf key now, not during the first TLS handshake
    RecordWriter writer(
        dir, [](const std::string& error) { std::cerr << "mm-record: " << error << std::endl; },
        RecordWriter::kDefaultMaxQueuedBytes,
        write_at_once ? RecordWriter::Priority::Normal : RecordWriter::Priority::Background);
    RecordProxy proxy(FileDescriptor(::dup(endpoints.intercepted)), ca, writer, proxy_options);
    const int status = run_ferry_pair_beside(endpoints, proxy, ready);
    writer.finish();
    report_recording(dir, created, writer, proxy.failed_connections());
    if (proxy.not_recorded())
      std::cerr << "mm-record: " << count_of(proxy.not_recorded(), "pair") << " not recorded (--max-body)" << std::endl;
    if (proxy.refused_connections())
      std::cerr << "mm-record: " << count_of(proxy.refused_connections(), "connection")
                << " refused (--refuse-upstream)" << std::endl;
    // Pairs lost to the disk: the shell ends with status 1 (the line above said how many).
    return writer.failed() ? kFerryFailedSaidWhy : status;
  } catch (const std::exception& e) {
    std::cerr << "mm-record: " << e.what() << std::endl;
    if (created) ::rmdir(dir.c_str());  // only if empty: a failed start leaves nothing in the way of a retry
    return 1;
  }
}
