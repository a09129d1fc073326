// SPDX-License-Identifier: GPL-3.0-or-later
#include "cumulus/remote_service.hh"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cumulus/bulk.hh"
#include "cumulus/remote_proxy.hh"
#include "shell/command_lookup.hh"
#include "shell/packet_shell.hh"
#include "tls/certificate_authority.hh"
#include "util/address.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/private_directory.hh"
#include "util/signals.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
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

// The proxy's listening socket (loopback unless --listen, or inside mm-replay), and the address
// the Local Proxy is told.
struct Listening {
  FileDescriptor listener;
  std::string advertised;
};
Listening open_listener(const RemoteServiceOptions& o, bool in_replay) {
  sockaddr_in where{};
  where.sin_family = AF_INET;
  if (!in_replay) where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (o.listen) {
    const std::optional<sockaddr_in> parsed = parse_ipv4_endpoint(*o.listen, true);
    if (!parsed)
      throw UsageError("--listen=" + printable(*o.listen, 80) + " is not ADDRESS:PORT (an IPv4 address and a port)");
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
  return {std::move(listener), address_text(advertised, ntohs(where.sin_port))};
}
}  // namespace

std::vector<std::string> remote_loader_command(const RemoteServiceOptions& o, const fs::path& work,
                                               const fs::path& ca_directory, bool in_replay) {
  const char* path = std::getenv("PATH");
  const double delay_ms = o.delay_ms, timeout_s = o.timeout_s;
  const auto &uplink_trace = o.uplink_trace, &downlink_trace = o.downlink_trace, &upstream_ca = o.upstream_ca;
  const auto &browser = o.browser, &window = o.window;
  const auto& browser_flags = o.browser_flags;
  const bool allow_private = o.allow_private, insecure = o.insecure;
  const uint64_t max_pair_mb = o.max_pair_mb;
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
  return loader;
}

int run_remote_service(const RemoteServiceOptions& o) {
  const auto &token_file = o.token_file, &ca_dir = o.ca_dir;
  const auto& command = o.command;
  // Inside mm-replay's namespace nothing but the user's own processes reaches the proxy, and
  // its loads reach only replayed servers: the defaults that guard a real network are not needed.
  const bool in_replay = in_replay_namespace();
  if (!in_replay && (::getuid() == 0 || ::geteuid() == 0))
    throw UserError(
        "it does not run as root outside mm-replay: its browser would load other people's "
        "pages with root's rights and without its sandbox; run it as an ordinary user");
  const std::string token = token_file ? read_bulk_token_file(*token_file, true) : new_bulk_token();
  Listening listening = open_listener(o, in_replay);
  FileDescriptor listener = std::move(listening.listener);
  const std::string& advertised_text = listening.advertised;

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

  const std::vector<std::string> loader = remote_loader_command(o, work, ca_directory, in_replay);

  // Interrupts end the serving; so does the command's exit.
  const SignalSet signals{SIGINT, SIGTERM, SIGHUP};
  signals.block();
  SignalFd signal_fd(signals);
  RemoteProxyOptions options;
  options.listener = std::move(listener);
  options.loader = loader;
  options.work_directory = work;
  options.token = token;
  options.max_pair_bytes = o.max_pair_mb << 20;
  options.max_load_bytes = o.max_load_mb << 20;
  options.verbose = o.verbose;
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
    child = spawn_program(resolve_command(command.front(), std::getenv("PATH")),
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
}
