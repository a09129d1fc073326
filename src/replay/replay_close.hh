// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-replay --unmatched=close over HTTP/1.1: the client's connection to the replay's web server
// ends without a byte of response, as on a network that drops the request. Apache cannot do that
// on a FastCGI backend's word (a backend that closes or fails gets a 502 or 503 page), so the
// matcher does it: the Apache worker that asked (the peer of the FastCGI connection,
// SO_PEERCRED) holds the client's socket; a duplicate of it (pidfd_getfd, allowed: the workers
// descend from the matcher's process and run under its uid) is found by the connection's
// addresses and shut down, which sends the client a FIN. Apache's own descriptor stays open
// until the worker notices, so nothing of Apache's bookkeeping is disturbed.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

// The client's side and the server's address of the connection a request came on, as the web
// server names them (REMOTE_ADDR, REMOTE_PORT, SERVER_ADDR: IPv4 or IPv6 literals). The
// server's port is not taken: Apache's SERVER_PORT may come from the Host header.
struct ClientConnection {
  std::string client_ip;
  uint16_t client_port = 0;
  std::string server_ip;
};

// Parses the three values; nullopt if any is missing or malformed.
std::optional<ClientConnection> client_connection_of(const char* remote_addr, const char* remote_port,
                                                     const char* server_addr);

// Shuts down, in process `pid`, the TCP socket connected from `connection`'s client to its server
// address. Returns an empty string on success, else why not (for the log).
std::string shut_down_client_connection(pid_t pid, const ClientConnection& connection);

// The pid of the process at the other end of a unix socket, or -1.
pid_t unix_peer_pid(int fd);
