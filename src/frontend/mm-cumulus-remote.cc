// SPDX-License-Identifier: GPL-3.0-or-later
// mm-cumulus-remote [OPTION]... [-- COMMAND...]: Cumulus's Remote Proxy, where the servers are.
#include <iostream>
#include <optional>
#include <string>

#include "cumulus/remote_service.hh"
#include "util/args.hh"
#include "util/exception.hh"

namespace {
const ProgramInfo kInfo{"mm-cumulus-remote", "[OPTION]... [--] [COMMAND...]",
                        "Cumulus's Remote Proxy (the Mahimahi paper's remote dependency resolution): run it where the\n"
                        "servers are (inside mm-replay, beside the replayed servers, or on a machine near the real\n"
                        "ones). For each page a Local Proxy (mm-cumulus-local) asks for, it loads the page in an\n"
                        "unmodified headless Chromium (mm-pageload's) inside mm-record, inside its own shells to the\n"
                        "servers, and streams every request/response pair the browser exchanged, as the servers sent\n"
                        "it, back as one bulk response. One load runs at a time; a browser waits ready for the next.\n"
                        "With COMMAND, it runs COMMAND with MAHIMAHI_CUMULUS_REMOTE=TOKEN@ADDRESS:PORT (its token and\n"
                        "where it listens) and ends with COMMAND's exit status; without, it serves until interrupted.\n"
                        "A line per load on standard error gives its pairs, bytes, time and CPU time.\n"
                        "\n"
                        "It answers only requests that carry its token (random, made at its start, or kept in\n"
                        "--token-file), loads no page from loopback, private, shared, link-local or this machine's\n"
                        "own addresses, and does not run as root; inside mm-replay's namespace (which nothing else\n"
                        "reaches, and whose servers are all replayed) it listens on every address, loads from any,\n"
                        "and runs as root too.\n"
                        "\n"
                        "Options:\n"
                        "  --listen=ADDRESS:PORT where to listen (default: 127.0.0.1 and a port chosen by the system;\n"
                        "                        in mm-replay's namespace, every address, and the one advertised is\n"
                        "                        the first that is not loopback: a replayed server's). 0.0.0.0 is\n"
                        "                        every address; the token still guards it\n"
                        "  --token-file=FILE     the token, kept in FILE (yours, mode 600): read if it exists, else\n"
                        "                        made; give the same FILE to mm-cumulus-local on another machine\n"
                        "                        (default: a new token each run, passed to COMMAND, or printed)\n"
                        "  --allow-private       let the loads reach loopback, private, shared (100.64/10),\n"
                        "                        link-local and this machine's own addresses (servers of your own)\n"
                        "  --max-pair=MB         a response beyond MB is left out of the bulk response, and the Local\n"
                        "                        Proxy fetches it itself (default 64; 1 to 256)\n"
                        "  --max-load=MB         a load whose responses pass MB in all is stopped, and ends with an\n"
                        "                        error (default 1024; 1 to 65536)\n"
                        "  --delay=MS            one-way delay of the Remote Proxy's own path to the servers, as a\n"
                        "                        cloud server near them (default 5: a 10 ms round trip); 0: none\n"
                        "  --uplink-trace=FILE, --downlink-trace=FILE\n"
                        "                        also an mm-link with these traces on that path (default: no rate\n"
                        "                        limit)\n"
                        "  --timeout=S           the Remote Proxy's browser gives up a page after S seconds (default\n"
                        "                        30): the bulk response ends there with what it has\n"
                        "  --browser=PATH        the Chromium binary (default: chromium in PATH)\n"
                        "  --browser-flag=FLAG   passed to that Chromium (repeatable)\n"
                        "  --window=WxH          its viewport (default 1366x768)\n"
                        "  --ca-dir=DIR          the CA to use (default: $MAHIMAHI_CA_DIR, else\n"
                        "                        ~/.local/share/mahimahi/ca)\n"
                        "  --upstream-ca=FILE    trust FILE's CAs (PEM) for the servers (default: the system's CAs\n"
                        "                        and your local CA, which replayed servers present)\n"
                        "  --insecure-upstream   do not check the servers' certificates\n"
                        "  --verbose             a line per loader started and per load begun\n"
                        "  --help, --version\n"
                        "\n"
                        "The bulk connection is plain TCP with the token in its request: on a real network, keep\n"
                        "it on a trusted path (an SSH tunnel). Example (see mm-cumulus-local):\n"
                        "  mm-replay /tmp/site mm-cumulus-remote -- mm-delay 50 \\\n"
                        "      mm-link rate:14Mbit/s rate:14Mbit/s -- \\\n"
                        "      mm-cumulus-local -- mm-pageload https://example.com/\n"};

}  // namespace

int main(int argc, char** argv) {
  try {
    RemoteServiceOptions o;
    auto text = [](std::optional<std::string>& field) {
      return [&field](std::string_view v) { field = std::string(v); };
    };
    ArgScanner scanner(kInfo, {{"listen", true, text(o.listen)},
                               {"delay", true,
                                [&](std::string_view v) {
                                  o.delay_ms = parse_nonnegative(v, "--delay");
                                  if (o.delay_ms > 10000)
                                    throw UsageError("--delay must be 0 to 10000 (ms), not " + std::string(v));
                                }},
                               {"uplink-trace", true, text(o.uplink_trace)},
                               {"downlink-trace", true, text(o.downlink_trace)},
                               {"timeout", true,
                                [&](std::string_view v) {
                                  o.timeout_s = parse_nonnegative(v, "--timeout");
                                  if (o.timeout_s < 1 || o.timeout_s > 3600)
                                    throw UsageError("--timeout must be 1 to 3600 (seconds), not " + std::string(v));
                                }},
                               {"browser", true, text(o.browser)},
                               {"browser-flag", true, [&](std::string_view v) { o.browser_flags.emplace_back(v); }},
                               {"window", true, text(o.window)},
                               {"ca-dir", true, text(o.ca_dir)},
                               {"upstream-ca", true, text(o.upstream_ca)},
                               {"insecure-upstream", false, [&](std::string_view) { o.insecure = true; }},
                               {"token-file", true, text(o.token_file)},
                               {"allow-private", false, [&](std::string_view) { o.allow_private = true; }},
                               {"max-pair", true,
                                [&](std::string_view v) {
                                  o.max_pair_mb = parse_unsigned(v, "--max-pair");
                                  if (o.max_pair_mb < 1 || o.max_pair_mb > 256)
                                    throw UsageError("--max-pair must be 1 to 256 (MB), not " + std::string(v));
                                }},
                               {"max-load", true,
                                [&](std::string_view v) {
                                  o.max_load_mb = parse_unsigned(v, "--max-load");
                                  if (o.max_load_mb < 1 || o.max_load_mb > 65536)
                                    throw UsageError("--max-load must be 1 to 65536 (MB), not " + std::string(v));
                                }},
                               {"verbose", false, [&](std::string_view) { o.verbose = true; }}});
    o.command = scanner.scan(argc, argv, [](std::string_view) { return false; });
    if (o.uplink_trace.has_value() != o.downlink_trace.has_value())
      throw UsageError("--uplink-trace and --downlink-trace go together (the Remote Proxy's mm-link)");
    if (o.ca_dir && o.ca_dir->empty()) throw UsageError("--ca-dir needs a directory");
    if (o.token_file && o.token_file->empty()) throw UsageError("--token-file needs a file");
    return run_remote_service(o);
  } catch (const UsageError& e) {
    std::cerr << "mm-cumulus-remote: " << e.what() << "\n" << usage_line(kInfo) << std::endl;
    return 2;
  } catch (const StatusError& e) {
    std::cerr << "mm-cumulus-remote: " << e.what() << std::endl;
    return e.status();
  } catch (const std::exception& e) {
    std::cerr << "mm-cumulus-remote: " << e.what() << std::endl;
    return 1;
  }
}
