// SPDX-License-Identifier: GPL-3.0-or-later
// mm-cumulus-local [OPTION]... [--] [COMMAND...]: Cumulus's Local Proxy around COMMAND (a
// browser): its page loads come from the Remote Proxy's bulk responses.
#include <optional>
#include <string>

#include "cumulus/bulk.hh"
#include "cumulus/local_service.hh"
#include "shell/packet_shell.hh"
#include "util/address.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace {
const ProgramInfo kInfo{"mm-cumulus-local", "[OPTION]... [--] [COMMAND...]",
                        "Runs COMMAND (a browser; default: your login shell) in a new network namespace behind\n"
                        "Cumulus's Local Proxy (the Mahimahi paper's remote dependency resolution). Every TCP\n"
                        "connection goes to the proxy, which ends TLS with certificates of your local CA (see\n"
                        "mm-ca). A navigation to a page sends one bulk request for its URL to the Remote Proxy\n"
                        "(mm-cumulus-remote), whose browser, near the servers, loads the page and streams every\n"
                        "response to this proxy as it arrives; the browser's requests are answered from that bulk\n"
                        "response. A request the bulk did not bring waits while the bulk is still coming, then goes\n"
                        "to its server through the shells around this one, as do requests other than GET and HEAD.\n"
                        "If the Remote Proxy fails, stalls or cannot be reached, the page loads from its servers\n"
                        "and a line on standard error says why. UDP to port 443 (QUIC) is refused, so that\n"
                        "browsers use TCP. A line per page load says what the bulk brought and what the Remote\n"
                        "Proxy's load cost it (its time and CPU).\n"
                        "\n"
                        "Options:\n"
                        "  --remote=ADDRESS:PORT the Remote Proxy (default: $MAHIMAHI_CUMULUS_REMOTE, which\n"
                        "                        mm-cumulus-remote sets for its command: TOKEN@ADDRESS:PORT)\n"
                        "  --token-file=FILE     the Remote Proxy's token, in FILE (yours, mode 600: the file\n"
                        "                        mm-cumulus-remote --token-file made; default: the token in\n"
                        "                        $MAHIMAHI_CUMULUS_REMOTE). Never on a command line: any user sees it\n"
                        "  --ca-dir=DIR          the CA to use (default: $MAHIMAHI_CA_DIR, else\n"
                        "                        ~/.local/share/mahimahi/ca)\n"
                        "  --upstream-ca=FILE    also trust FILE's CAs (PEM) for servers reached directly, besides\n"
                        "                        the system's CAs and your local CA\n"
                        "  --insecure-upstream   do not check the certificates of servers reached directly\n"
                        "  --cache-limit=MB      the most a page load's bulk response may keep in memory (default\n"
                        "                        512; what does not fit is fetched from its server)\n"
                        "  --stall-timeout=S     a bulk response that brings nothing for S seconds is given up\n"
                        "                        (default 10; 1 to 600)\n" MM_TCP_ECN_HELP_LINE
                        "  --verbose             a line per request sent to a server, and one saying whether the\n"
                        "                        TUN offloads are used\n"
                        "  --help, --version\n"
                        "\n"
                        "Example (a replayed page, the Remote Proxy beside the servers, the browser behind a link):\n"
                        "  mm-replay /tmp/site mm-cumulus-remote -- mm-delay 50 \\\n"
                        "      mm-link rate:14Mbit/s rate:14Mbit/s -- \\\n"
                        "      mm-cumulus-local -- mm-pageload https://example.com/\n"};

}  // namespace

int main(int argc, char** argv) {
  return run_packet_shell(argc, argv, kInfo, [](int ac, char** av) {
    std::optional<std::string> ca_dir, remote, token_file;
    LocalProxyOptions options;
    ShellSpec spec;
    ArgScanner scanner(kInfo,
                       {{"remote", true, [&](std::string_view v) { remote = std::string(v); }},
                        {"token-file", true, [&](std::string_view v) { token_file = std::string(v); }},
                        {"ca-dir", true, [&](std::string_view v) { ca_dir = std::string(v); }},
                        {"insecure-upstream", false, [&](std::string_view) { options.verify_upstream = false; }},
                        {"upstream-ca", true, [&](std::string_view v) { options.upstream_ca_file = std::string(v); }},
                        {"cache-limit", true,
                         [&](std::string_view v) {
                           const uint64_t mb = parse_unsigned(v, "--cache-limit");
                           if (mb < 1 || mb > 65536)
                             throw UsageError("--cache-limit must be 1 to 65536 (MB), not " + std::string(v));
                           options.max_cache_bytes = mb << 20;
                         }},
                        {"stall-timeout", true,
                         [&](std::string_view v) {
                           const double s = parse_nonnegative(v, "--stall-timeout");
                           if (s < 1 || s > 600)
                             throw UsageError("--stall-timeout must be 1 to 600 (seconds), not " + std::string(v));
                           options.stall_timeout = static_cast<Nanos>(s * 1e9);
                         }},
                        {"verbose", false, [&](std::string_view) { options.verbose = spec.verbose = true; }},
                        ArgScanner::tcp_ecn_option(spec.tcp_ecn)});
    spec.command = scanner.scan(ac, av, [](std::string_view) { return false; });
    if (ca_dir && ca_dir->empty()) throw UsageError("--ca-dir needs a directory");
    if (remote && remote->find('@') != std::string::npos)
      throw UsageError(
          "--remote takes ADDRESS:PORT, without the token: a command line is seen by every user (ps); give the "
          "token in --token-file=FILE or MAHIMAHI_CUMULUS_REMOTE=TOKEN@ADDRESS:PORT");
    if (remote && !parse_ipv4_endpoint(*remote))
      throw UsageError("--remote=" + printable(*remote, 80) + " is not ADDRESS:PORT (an IPv4 address and a port)");
    if (token_file && token_file->empty()) throw UsageError("--token-file needs a file");
    spec.device_kind = ShellKind::Cumulus;
    spec.tag = "[cumulus] ";
    spec.intercept_tcp = true;
    spec.refuse_quic = true;
    const LocalServiceSettings settings{ca_dir, remote, token_file, options};
    spec.ferry = [settings](const FerryEndpoints& endpoints, const std::function<void()>& ready) {
      return run_local_service(settings, endpoints, ready);
    };
    return spec;
  });
}
