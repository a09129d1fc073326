// SPDX-License-Identifier: GPL-3.0-or-later
// mm-cumulus-remote [OPTION]... [-- COMMAND...]: Cumulus's Remote Proxy, where the servers are.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cumulus/bulk.hh"
#include "cumulus/remote_proxy.hh"
#include "shell/command_lookup.hh"
#include "shell/packet_shell.hh"
#include "tls/certificate_authority.hh"
#include "util/address.hh"
#include "util/args.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/private_directory.hh"
#include "util/signals.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

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

// The first IPv4 address of this namespace that is not loopback (127/8).
std::optional<in_addr> first_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<in_addr> found;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    const in_addr a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    if ((ntohl(a.s_addr) >> 24) != 127) found = a;
  }
  ::freeifaddrs(list);
  return found;
}

std::string address_text(in_addr a, uint16_t port) {
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(port);
}

// Whether this runs in an isolated shell's namespace (mm-replay's): the variable it sets for its
// command names the namespace, which must be this process's own.
bool in_replay_namespace() {
  const char* named = std::getenv(kIsolatedNamespaceVariable);
  struct stat st {};
  if (!named || ::stat("/proc/self/ns/net", &st) != 0) return false;
  return std::string_view(named) == std::to_string(st.st_ino);
}

// Every IPv4 address of this namespace (its loads refuse them: this machine's own services).
std::vector<std::string> own_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char ip[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, ip, sizeof ip);
    if (std::find(out.begin(), out.end(), ip) == out.end()) out.emplace_back(ip);
  }
  ::freeifaddrs(list);
  return out;
}

// The system's CA bundle and the user's CA, in one file: what the loaders' mm-record trusts.
fs::path write_trust_bundle(const fs::path& dir, const fs::path& ca_certificate) {
  const fs::path bundle = dir / "upstream-ca.pem";
  std::ofstream out(bundle, std::ios::binary);
  for (const char* system : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}) {
    std::ifstream in(system, std::ios::binary);
    if (in) {
      out << in.rdbuf() << "\n";
      break;
    }
  }
  std::ifstream ca(ca_certificate, std::ios::binary);
  if (!ca) throw UserError("cannot read your CA certificate " + ca_certificate.string());
  out << ca.rdbuf();
  if (!out) throw UserError("cannot write " + bundle.string());
  return bundle;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    std::optional<std::string> listen, ca_dir, upstream_ca, uplink_trace, downlink_trace, browser, window, token_file;
    double delay_ms = 5, timeout_s = 30;
    bool insecure = false, verbose = false, allow_private = false;
    uint64_t max_pair_mb = 64, max_load_mb = 1024;
    std::vector<std::string> browser_flags;
    ArgScanner scanner(kInfo, {{"listen", true, [&](std::string_view v) { listen = std::string(v); }},
                               {"delay", true,
                                [&](std::string_view v) {
                                  delay_ms = parse_nonnegative(v, "--delay");
                                  if (delay_ms > 10000)
                                    throw UsageError("--delay must be 0 to 10000 (ms), not " + std::string(v));
                                }},
                               {"uplink-trace", true, [&](std::string_view v) { uplink_trace = std::string(v); }},
                               {"downlink-trace", true, [&](std::string_view v) { downlink_trace = std::string(v); }},
                               {"timeout", true,
                                [&](std::string_view v) {
                                  timeout_s = parse_nonnegative(v, "--timeout");
                                  if (timeout_s < 1 || timeout_s > 3600)
                                    throw UsageError("--timeout must be 1 to 3600 (seconds), not " + std::string(v));
                                }},
                               {"browser", true, [&](std::string_view v) { browser = std::string(v); }},
                               {"browser-flag", true, [&](std::string_view v) { browser_flags.emplace_back(v); }},
                               {"window", true, [&](std::string_view v) { window = std::string(v); }},
                               {"ca-dir", true, [&](std::string_view v) { ca_dir = std::string(v); }},
                               {"upstream-ca", true, [&](std::string_view v) { upstream_ca = std::string(v); }},
                               {"insecure-upstream", false, [&](std::string_view) { insecure = true; }},
                               {"token-file", true, [&](std::string_view v) { token_file = std::string(v); }},
                               {"allow-private", false, [&](std::string_view) { allow_private = true; }},
                               {"max-pair", true,
                                [&](std::string_view v) {
                                  max_pair_mb = parse_unsigned(v, "--max-pair");
                                  if (max_pair_mb < 1 || max_pair_mb > 256)
                                    throw UsageError("--max-pair must be 1 to 256 (MB), not " + std::string(v));
                                }},
                               {"max-load", true,
                                [&](std::string_view v) {
                                  max_load_mb = parse_unsigned(v, "--max-load");
                                  if (max_load_mb < 1 || max_load_mb > 65536)
                                    throw UsageError("--max-load must be 1 to 65536 (MB), not " + std::string(v));
                                }},
                               {"verbose", false, [&](std::string_view) { verbose = true; }}});
    std::vector<std::string> command = scanner.scan(argc, argv, [](std::string_view) { return false; });
    if (uplink_trace.has_value() != downlink_trace.has_value())
      throw UsageError("--uplink-trace and --downlink-trace go together (the Remote Proxy's mm-link)");
    if (ca_dir && ca_dir->empty()) throw UsageError("--ca-dir needs a directory");
    if (token_file && token_file->empty()) throw UsageError("--token-file needs a file");
    // Inside mm-replay's namespace nothing but the user's own processes reaches the proxy, and
    // its loads reach only replayed servers: the defaults that guard a real network are not needed.
    const bool in_replay = in_replay_namespace();
    if (!in_replay && (::getuid() == 0 || ::geteuid() == 0))
      throw UserError(
          "it does not run as root outside mm-replay: its browser would load other people's "
          "pages with root's rights and without its sandbox; run it as an ordinary user");
    const std::string token = token_file ? read_bulk_token_file(*token_file, true) : new_bulk_token();
    sockaddr_in where{};
    where.sin_family = AF_INET;
    if (!in_replay) where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listen) {
      const std::optional<sockaddr_in> parsed = parse_ipv4_endpoint(*listen, true);
      if (!parsed)
        throw UsageError("--listen=" + printable(*listen, 80) + " is not ADDRESS:PORT (an IPv4 address and a port)");
      where = *parsed;
    }
    // The address the Local Proxy is told.
    in_addr advertised = where.sin_addr;
    if (where.sin_addr.s_addr == htonl(INADDR_ANY)) {
      const std::optional<in_addr> first = first_address();
      if (!first)
        throw UserError(
            "no address to be reached at: this network namespace has none but loopback (run it inside "
            "mm-replay, or give --listen=ADDRESS:PORT)");
      advertised = *first;
    }
    FileDescriptor listener(check_syscall("socket", ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
    const int one = 1;
    (void)::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&where), sizeof where) != 0)
      throw UserError("cannot listen on " + address_text(where.sin_addr, ntohs(where.sin_port)) + ": " +
                      std::strerror(errno) + " (choose another --listen)");
    check_syscall("listen", ::listen(listener.get(), 64));
    socklen_t length = sizeof where;
    check_syscall("getsockname", ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&where), &length));
    const std::string advertised_text = address_text(advertised, ntohs(where.sin_port));

    // The user's CA, made now if it is new, so that the loaders' programs all find the same one.
    const fs::path ca_directory = ca_dir ? fs::path(*ca_dir) : CertificateAuthority::default_directory();
    (void)CertificateAuthority::load_or_create(ca_directory);
    if (ca_dir) ::setenv("MAHIMAHI_CA_DIR", ca_dir->c_str(), 1);

    // The loads' pairs pass through files that live a few milliseconds: in memory (/dev/shm, a
    // tmpfs, where mm-record's fsync costs nothing) where it can be written, else $TMPDIR or /tmp.
    fs::path scratch = temporary_directory();
    if (!std::getenv("TMPDIR") && ::access("/dev/shm", W_OK | X_OK) == 0) scratch = "/dev/shm";
    std::string pattern = (scratch / "mm-cumulus-remote.XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw UserError("cannot make a directory in " + scratch.string() + ": " + std::strerror(errno) + " (set TMPDIR)");
    const fs::path work(pattern);
    struct RemoveWork {
      fs::path dir;
      ~RemoveWork() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
      }
    } remove_work{work};

    const char* path = std::getenv("PATH");
    std::vector<std::string> loader;
    if (delay_ms > 0) {
      loader.push_back(resolve_program("mm-delay", path));
      std::ostringstream ms;
      ms << delay_ms;
      loader.push_back(ms.str());
    }
    if (uplink_trace) {
      loader.push_back(resolve_program("mm-link", path));
      loader.push_back(*uplink_trace);
      loader.push_back(*downlink_trace);
      loader.push_back("--");
    }
    loader.push_back(resolve_program("mm-record", path));
    loader.push_back("{dir}");
    loader.push_back("--write-at-once");  // each pair is streamed as soon as it is whole
    // A response beyond --max-pair is relayed to the browser but neither held nor written.
    loader.push_back("--max-body=" + std::to_string(max_pair_mb));
    if (!allow_private && !in_replay) {
      // Every connection the loader's browser makes, not only the page's: checked where it is
      // made (mm-record), by address, after the names are resolved.
      std::string refused = "private";
      for (const std::string& own : own_addresses()) refused += "," + own;
      loader.push_back("--refuse-upstream=" + refused);
    }
    if (insecure) {
      loader.push_back("--insecure-upstream");
    } else {
      loader.push_back("--upstream-ca=" +
                       (upstream_ca
                            ? *upstream_ca
                            : write_trust_bundle(work, CertificateAuthority::certificate_file(ca_directory)).string()));
    }
    loader.push_back("--");
    loader.push_back(resolve_program("mm-pageload", path));
    loader.push_back("--wait-for-url");
    // The Remote Proxy's browser shares the cores with the measured one: no screencast frames.
    loader.push_back("--no-speed-index");
    loader.push_back("--json={json}");  // the load's status, reason and PLT, for the end frame
    std::ostringstream timeout;
    timeout << timeout_s;
    loader.push_back("--timeout=" + timeout.str());
    if (browser) loader.push_back("--browser=" + *browser);
    if (window) loader.push_back("--window=" + *window);
    for (const std::string& flag : browser_flags) loader.push_back("--browser-flag=" + flag);

    // Interrupts end the serving; so does the command's exit.
    const SignalSet signals{SIGINT, SIGTERM, SIGHUP};
    signals.block();
    SignalFd signal_fd(signals);
    RemoteProxyOptions options;
    options.listener = std::move(listener);
    options.loader = loader;
    options.work_directory = work;
    options.token = token;
    options.max_pair_bytes = max_pair_mb << 20;
    options.max_load_bytes = max_load_mb << 20;
    options.verbose = verbose;
    options.say = [](const std::string& line) { std::cerr << "mm-cumulus-remote: " << line << std::endl; };
    RemoteProxy proxy(std::move(options));
    std::cerr << "mm-cumulus-remote: listening on " << advertised_text;
    if (token_file) {
      std::cerr << " (the token is in " << *token_file << ")";
    } else if (command.empty()) {
      // Nobody else is told the token: the user is, to give it to the Local Proxy.
      std::cerr << "; give the Local Proxy MAHIMAHI_CUMULUS_REMOTE=" << token << "@" << advertised_text;
    }
    std::cerr << std::endl;

    pid_t child = -1;
    FileDescriptor child_fd;
    std::vector<int> stop_fds = {signal_fd.fd()};  // an interrupt ends the serving; so does the command's end
    if (!command.empty()) {
      ::setenv("MAHIMAHI_CUMULUS_REMOTE", (token + "@" + advertised_text).c_str(), 1);
      SpawnOptions spawn;
      spawn.default_signals = true;
      child = spawn_program(resolve_command(command.front(), path),
                            std::vector<std::string>(command.begin() + 1, command.end()), spawn);
      child_fd = FileDescriptor(open_pidfd(child));
      if (!child_fd.valid()) throw SystemError("pidfd_open");
      stop_fds.push_back(child_fd.get());
    }
    proxy.run(stop_fds);
    int status = 0;
    if (child > 0) {
      // A signal first: the command is passed it, and waited for.
      pollfd p{child_fd.get(), POLLIN, 0};
      if (::poll(&p, 1, 0) == 0) {
        const signalfd_siginfo info = signal_fd.read_signal();
        ::kill(child, static_cast<int>(info.ssi_signo));
      }
      status = wait_for_exit(child);
    } else {
      const signalfd_siginfo info = signal_fd.read_signal();
      status = 128 + static_cast<int>(info.ssi_signo);
    }
    return status;
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
