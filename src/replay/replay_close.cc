// SPDX-License-Identifier: GPL-3.0-or-later
#include "replay/replay_close.hh"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

#include "util/child_process.hh"
#include "util/file_descriptor.hh"

namespace {
// Through syscall(): glibc 2.36's <sys/pidfd.h> declares its wrappers without C linkage.
int copy_fd_of(int pidfd, int target) { return static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, target, 0U)); }

// An IPv4 or IPv6 literal and a port as a socket address; false if `ip` is neither.
bool to_address(const std::string& ip, uint16_t port, sockaddr_storage* out) {
  *out = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return true;
  }
  *out = {};
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return true;
  }
  return false;
}

// The same address (and, if `with_port`, port)? An IPv4 peer of an IPv6 socket appears as
// ::ffff:a.b.c.d, which Apache prints as a.b.c.d: compared as IPv4.
bool same_address(const sockaddr_storage& a, const sockaddr_storage& b, bool with_port) {
  auto v4_of = [](const sockaddr_storage& s, in_addr* addr, uint16_t* port) {
    if (s.ss_family == AF_INET) {
      const auto& v4 = reinterpret_cast<const sockaddr_in&>(s);
      *addr = v4.sin_addr, *port = v4.sin_port;
      return true;
    }
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(s);
    if (s.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {
      std::memcpy(&addr->s_addr, v6.sin6_addr.s6_addr + 12, 4);
      *port = v6.sin6_port;
      return true;
    }
    return false;
  };
  in_addr a4{}, b4{};
  uint16_t ap = 0, bp = 0;
  if (v4_of(a, &a4, &ap) && v4_of(b, &b4, &bp)) return a4.s_addr == b4.s_addr && (!with_port || ap == bp);
  if (a.ss_family != AF_INET6 || b.ss_family != AF_INET6) return false;
  const auto& a6 = reinterpret_cast<const sockaddr_in6&>(a);
  const auto& b6 = reinterpret_cast<const sockaddr_in6&>(b);
  return std::memcmp(&a6.sin6_addr, &b6.sin6_addr, sizeof a6.sin6_addr) == 0 &&
         (!with_port || a6.sin6_port == b6.sin6_port);
}

// Is `fd` a TCP socket from `client` to `server` (its port aside)?
bool is_connection(int fd, const sockaddr_storage& client, const sockaddr_storage& server) {
  int type = 0, protocol = 0;
  socklen_t length = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) return false;
  length = sizeof protocol;
  if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &length) != 0 || protocol != IPPROTO_TCP) return false;
  sockaddr_storage peer{}, local{};
  socklen_t peer_length = sizeof peer, local_length = sizeof local;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) return false;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0) return false;
  return same_address(peer, client, true) && same_address(local, server, false);
}
}  // namespace

std::optional<ClientConnection> client_connection_of(const char* remote_addr, const char* remote_port,
                                                     const char* server_addr) {
  if (!remote_addr || !remote_port || !server_addr) return std::nullopt;
  ClientConnection c{remote_addr, 0, server_addr};
  const std::string_view port(remote_port);
  unsigned value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (error != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) return std::nullopt;
  c.client_port = static_cast<uint16_t>(value);
  sockaddr_storage scratch;
  if (!to_address(c.client_ip, c.client_port, &scratch) || !to_address(c.server_ip, 0, &scratch)) return std::nullopt;
  return c;
}

pid_t unix_peer_pid(int fd) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 || credentials.pid <= 0) return -1;
  return credentials.pid;
}

std::string shut_down_client_connection(pid_t pid, const ClientConnection& connection) {
  sockaddr_storage client{}, server{};
  if (!to_address(connection.client_ip, connection.client_port, &client) ||
      !to_address(connection.server_ip, 0, &server))
    return "the connection's addresses are not IP literals";
  const int raw_pidfd = open_pidfd(pid);
  if (raw_pidfd < 0)
    return "pidfd_open of the web server's worker " + std::to_string(pid) + ": " + std::strerror(errno);
  const FileDescriptor pidfd(raw_pidfd);
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(fd_dir.c_str()), ::closedir);
  if (!dir) return "cannot list " + fd_dir + ": " + std::strerror(errno);
  std::string last_error;
  while (const dirent* entry = ::readdir(dir.get())) {
    int target = 0;
    const std::string_view name(entry->d_name);
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), target);
    if (error != std::errc() || end != name.data() + name.size()) continue;  // "." and ".."
    char link[64];
    const ssize_t n = ::readlinkat(::dirfd(dir.get()), entry->d_name, link, sizeof link - 1);
    if (n <= 0 || std::string_view(link, static_cast<size_t>(n)).substr(0, 7) != "socket:") continue;
    const int copy = copy_fd_of(pidfd.get(), target);
    if (copy < 0) {
      if (errno != EBADF) last_error = std::string("pidfd_getfd: ") + std::strerror(errno);
      continue;  // closed meanwhile, or not ours to take
    }
    const FileDescriptor socket(copy);
    if (!is_connection(socket.get(), client, server)) continue;
    if (::shutdown(socket.get(), SHUT_RDWR) != 0) return std::string("shutdown: ") + std::strerror(errno);
    return {};
  }
  return "no socket of the web server's worker " + std::to_string(pid) + " is connected to " + connection.client_ip +
         ":" + std::to_string(connection.client_port) + (last_error.empty() ? "" : " (" + last_error + ")");
}
