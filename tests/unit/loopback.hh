// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A listening TCP socket on 127.0.0.1 (any port) for the unit tests of the proxies.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "util/exception.hh"
#include "util/file_descriptor.hh"

// Listens on 127.0.0.1, a port the kernel chose; `address` gets it.
inline FileDescriptor loopback_listener(sockaddr_in* address) {
  FileDescriptor fd(check_syscall("socket", ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)));
  *address = {};
  address->sin_family = AF_INET;
  address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check_syscall("bind", ::bind(fd.get(), reinterpret_cast<const sockaddr*>(address), sizeof *address));
  check_syscall("listen", ::listen(fd.get(), 16));
  socklen_t length = sizeof *address;
  check_syscall("getsockname", ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(address), &length));
  return fd;
}
