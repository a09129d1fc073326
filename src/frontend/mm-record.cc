// SPDX-License-Identifier: GPL-3.0-or-later
// mm-record DIR [OPTION]... [--] [COMMAND...]: records every HTTP/HTTPS request and response
// of COMMAND into DIR.
#include <optional>
#include <string>

#include "record/record_shell.hh"
#include "shell/packet_shell.hh"
#include "util/address.hh"
#include "util/exception.hh"

namespace {
const ProgramInfo kInfo{
    "mm-record", "DIR [OPTION]... [--] [COMMAND...]",
    "Runs COMMAND (default: your login shell) in a new network namespace and records every HTTP\n"
    "request/response pair it exchanges with any server, over HTTP or HTTPS on any port, into\n"
    "DIR (which must not exist, unless --append): one protobuf file per pair, readable by\n"
    "mm-replay, by mm-recording and by the original Mahimahi. Every TCP connection goes through\n"
    "a recording proxy that relays bytes as they arrive; what is not HTTP/1.x (WebSocket after\n"
    "an upgrade, other protocols) is relayed unrecorded. TLS is ended on both sides: the program\n"
    "is shown certificates signed by your local CA (see mm-ca; it is created on first use), and\n"
    "the servers' certificates are checked against the system's CAs. UDP to port 443 (QUIC) is\n"
    "refused so that browsers use TCP. If nothing at all was recorded, the directory made for it\n"
    "is removed again, so that the same command can be run again once it works.\n"
    "\n"
    "curl does not read the NSS database that mm-ca trust fills: give it --cacert \"$(mm-ca path)\".\n"
    "\n"
    "Options:\n"
    "  --append              add to the existing recording DIR (made by mm-record), e.g. to record\n"
    "                        several pages into one: new files only, the recorded ones untouched\n"
    "  --ca-dir=DIR          the CA to use (default: $MAHIMAHI_CA_DIR, else\n"
    "                        ~/.local/share/mahimahi/ca)\n"
    "  --allow-quic          let UDP to port 443 through (unrecorded)\n"
    "  --upstream-ca=FILE    trust the servers whose certificates FILE's CAs issued (PEM), instead\n"
    "                        of the system's CAs (SSL_CERT_FILE does the same)\n"
    "  --insecure-upstream   do not check servers' certificates\n"
    "  --refuse-upstream=LIST\n"
    "                        refuse (reset) connections to LIST's destinations instead of making\n"
    "                        them: comma-separated ADDRESS[/BITS], and \"private\" for loopback,\n"
    "                        private, shared (100.64/10), link-local, multicast and reserved space\n"
    "                        (repeatable; mm-cumulus-remote's loaders use it)\n"
    "  --max-body=MB         a request or response whose body passes MB is relayed whole but not\n"
    "                        recorded (nor held in memory), with a line saying so (default: every\n"
    "                        pair is recorded, whatever its size)\n"
    "  --deterministic       the program gets every HTML page with a script that makes Date,\n"
    "                        Math.random and crypto.getRandomValues repeat (the recording keeps\n"
    "                        the page as sent): a page that builds URLs from the clock or at\n"
    "                        random then asks for the same ones in mm-replay --deterministic\n"
    "  --write-at-once       write each pair as soon as it is whole, at the program's priority\n"
    "                        (default: in pauses of the traffic, at the lowest priority, so that\n"
    "                        the disk does not compete with a page load): for a program that\n"
    "                        reads DIR as it grows (mm-cumulus-remote)\n"
    "  --tcp-ecn=on|accept|off\n"
    "                        TCP's ECN in the shell and the shells inside (net.ipv4.tcp_ecn):\n"
    "                        on, asked for and accepted; accept, used when the peer asks; off,\n"
    "                        never (default: as where the shell starts; the kernel's is accept)\n"
    "  --verbose             a line per connection on standard error, and one saying whether the\n"
    "                        TUN offloads are used\n"
    "  --help, --version\n"
    "\n"
    "Also installed as mm-webrecord. Example:\n"
    "  mm-record /tmp/site -- curl --cacert \"$(mm-ca path)\" https://example.com/\n"
    "  mm-record --append /tmp/site -- curl --cacert \"$(mm-ca path)\" https://example.org/\n"};

}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<std::string> dir;
    std::optional<std::string> ca_dir;
    bool allow_quic = false, append = false, write_at_once = false;
    RecordProxyOptions options;
    ShellSpec spec;
    ArgScanner scanner(kInfo,
                       {{"ca-dir", true, [&](std::string_view v) { ca_dir = std::string(v); }},
                        {"append", false, [&](std::string_view) { append = true; }},
                        {"allow-quic", false, [&](std::string_view) { allow_quic = true; }},
                        {"deterministic", false, [&](std::string_view) { options.deterministic = true; }},
                        {"write-at-once", false, [&](std::string_view) { write_at_once = true; }},
                        {"insecure-upstream", false, [&](std::string_view) { options.verify_upstream = false; }},
                        {"upstream-ca", true, [&](std::string_view v) { options.upstream_ca_file = std::string(v); }},
                        {"refuse-upstream", true,
                         [&](std::string_view v) {
                           for (const Ipv4Net& net : parse_refused_upstream(v)) options.refused_upstream.push_back(net);
                         }},
                        {"max-body", true,
                         [&](std::string_view v) {
                           const uint64_t mb = parse_unsigned(v, "--max-body");
                           if (mb < 1 || mb > 65536)
                             throw UsageError("--max-body must be 1 to 65536 (MB), not " + std::string(v));
                           options.max_body_bytes = mb << 20;
                         }},
                        {"verbose", false, [&](std::string_view) { options.verbose = spec.verbose = true; }},
                        ArgScanner::tcp_ecn_option(spec.tcp_ecn)});
    spec.command = scanner.scan(ac, av, [&](std::string_view word) {
      if (dir) return false;
      dir = std::string(word);
      return true;
    });
    if (!dir || dir->empty())
      throw UsageError(append ? "missing DIR (the recording to add to)"
                              : "missing DIR (the directory to record into; it must not exist)");
    if (ca_dir && ca_dir->empty()) throw UsageError("--ca-dir needs a directory");
    spec.device_kind = ShellKind::Record;
    spec.tag = "[record " + *dir + "] ";
    spec.intercept_tcp = true;
    spec.refuse_quic = !allow_quic;
    const RecordShellSettings settings{*dir, ca_dir, options, append, write_at_once};
    spec.ferry = [settings](const FerryEndpoints& endpoints, const std::function<void()>& ready) {
      return run_record_ferry(settings, endpoints, ready);
    };
    return spec;
  });
}
