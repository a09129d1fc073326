// mm-record DIR [OPTION]... [--] [COMMAND...]: records every HTTP/HTTPS request and response
// of COMMAND into DIR.
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "packet/queues.hh"
#include "record/record_proxy.hh"
#include "recording/record_file.hh"
#include "shell/ferry_pair.hh"
#include "shell/packet_shell.hh"
#include "tls/certificate_authority.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
const ProgramInfo kInfo{
    "mm-record", "DIR [OPTION]... [--] [COMMAND...]",
    "Runs COMMAND (default: your login shell) in a new network namespace and records every HTTP\n"
    "request/response pair it exchanges with any server, over HTTP or HTTPS on any port, into\n"
    "DIR (which must not exist): one protobuf file per pair, readable by mm-replay, by\n"
    "mm-recording and by the original Mahimahi. Every TCP connection goes through a recording\n"
    "proxy that relays bytes as they arrive; what is not HTTP/1.x (WebSocket after an upgrade,\n"
    "other protocols) is relayed unrecorded. TLS is ended on both sides: the program is shown\n"
    "certificates signed by your local CA (see mm-ca; it is created on first use), and the\n"
    "servers' certificates are checked against the system's CAs. UDP to port 443 (QUIC) is\n"
    "refused so that browsers use TCP.\n"
    "\n"
    "Options:\n"
    "  --ca-dir=DIR          the CA to use (default: $MAHIMAHI_CA_DIR, else\n"
    "                        ~/.local/share/mahimahi/ca)\n"
    "  --allow-quic          let UDP to port 443 through (unrecorded)\n"
    "  --upstream-ca=FILE    trust the servers whose certificates FILE's CAs issued (PEM), instead\n"
    "                        of the system's CAs (SSL_CERT_FILE does the same)\n"
    "  --insecure-upstream   do not check servers' certificates\n"
    "  --verbose             a line per connection on standard error\n"
    "  --help, --version\n"
    "\n"
    "Also installed as mm-webrecord. Example: mm-record /tmp/site -- curl https://example.com/\n"};
}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<std::string> dir;
    std::optional<std::string> ca_dir;
    bool allow_quic = false;
    RecordProxyOptions options;
    ArgScanner scanner(kInfo,
                       {{"ca-dir", true, [&](std::string_view v) { ca_dir = std::string(v); }},
                        {"allow-quic", false, [&](std::string_view) { allow_quic = true; }},
                        {"insecure-upstream", false, [&](std::string_view) { options.verify_upstream = false; }},
                        {"upstream-ca", true, [&](std::string_view v) { options.upstream_ca_file = std::string(v); }},
                        {"verbose", false, [&](std::string_view) { options.verbose = true; }}});
    ShellSpec spec;
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (dir) return false;
      dir = std::string(word);
      return true;
    });
    if (!dir || dir->empty()) throw UsageError("missing DIR (the directory to record into; it must not exist)");
    if (ca_dir && ca_dir->empty()) throw UsageError("--ca-dir needs a directory");
    spec.device_kind = "record";
    spec.tag = "[record " + *dir + "] ";
    spec.intercept_tcp = true;
    spec.refuse_quic = !allow_quic;
    spec.ferry = [dir = *dir, ca_dir, options](const FerryEndpoints& endpoints, const std::function<void()>& ready) {
      // The user's rights from here on: DIR and the CA are created and read as the user.
      try {
        // OpenSSL ignores SSL_CERT_FILE in a setuid program, even after it dropped its rights.
        RecordProxyOptions proxy_options = options;
        const char* bundle = std::getenv("SSL_CERT_FILE");
        if (proxy_options.upstream_ca_file.empty() && bundle && *bundle) proxy_options.upstream_ca_file = bundle;
        create_record_directory(dir);
        CertificateAuthority ca = CertificateAuthority::load_or_create(
            ca_dir ? std::filesystem::path(*ca_dir) : CertificateAuthority::default_directory());
        ca.server_context("localhost");  // makes the leaf key now, not during the first TLS handshake
        RecordWriter writer(dir, [](const std::string& error) { std::cerr << "mm-record: " << error << std::endl; });
        RecordProxy proxy(FileDescriptor(::dup(endpoints.intercepted)), ca, writer, proxy_options);
        std::thread proxy_thread([&proxy] { proxy.run(); });
        DelayQueue uplink(0), downlink(0);
        int status = 1;
        try {
          status = run_ferry_pair(endpoints, uplink, downlink, ready);
        } catch (...) {
          proxy.stop();
          proxy_thread.join();
          throw;
        }
        proxy.stop();
        proxy_thread.join();
        writer.finish();
        std::cerr << "mm-record: " << count_of(writer.written(), "pair") << " recorded in " << dir;
        if (writer.failed()) std::cerr << ", " << writer.failed() << " could not be written";
        if (const uint64_t failed = proxy.failed_connections())
          std::cerr << "; " << count_of(failed, "connection") << " failed";
        std::cerr << std::endl;
        return writer.failed() ? 1 : status;
      } catch (const std::exception& e) {
        std::cerr << "mm-record: " << e.what() << std::endl;
        return 1;
      }
    };
    return spec;
  });
}
