// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Remote Proxy's own parts (remote_proxy.cc: the loop and the clients' connections;
// remote_loads.cc: the loaders and their loads): its epoll keys, bounds, a loader, a client.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <deque>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "cumulus/bulk.hh"
#include "cumulus/remote_proxy.hh"
#include "util/clock.hh"
#include "util/file_descriptor.hh"

namespace remote_proxy {
constexpr uint64_t kListenerKey = 0, kStopKey = 1, kInotifyKey = 2, kCurrentExitKey = 3, kCurrentErrorsKey = 4,
                   kSpareExitKey = 5, kSpareErrorsKey = 6, kClientBase = 1000;
constexpr size_t kHighWater = 256 * 1024;
constexpr size_t kMaxTail = 16 * 1024;
constexpr size_t kMaxRequestHead = kMaxBulkRequest;
// mm-pageload's --json of one load: a few hundred bytes, with its origins' protocols a few KiB.
constexpr size_t kMaxResultBytes = 1 << 20;

// A header value on the loader's input line: no tabs or line ends.
inline std::string field(std::string_view text) {
  std::string out;
  for (const char c : text) out += (c == '\t' || c == '\r' || c == '\n') ? ' ' : c;
  return out;
}
}  // namespace remote_proxy

struct RemoteProxy::Loader {
  uint64_t number = 0;
  pid_t pid = -1;
  FileDescriptor pidfd, input, errors;
  std::filesystem::path dir;
  std::filesystem::path result;  // where mm-pageload writes the load's --json ("{json}")
  std::string tail;              // the end of what it wrote on standard error
  bool exited = false;
  int status = 0;
  rusage usage{};
  Nanos load_started = 0;
  bool watched = false;                      // its directory is watched (it exists)
  std::set<std::string> seen;                // files of its directory already queued
  std::deque<std::filesystem::path> queued;  // to send, in the order they appeared
  uint64_t pairs = 0, bytes = 0;
  uint64_t written = 0;   // the bytes of every pair file seen (what the load put in the work directory)
  bool over_cap = false;  // stopped: its pairs passed max_load_bytes
  uint64_t left_out = 0;  // pairs beyond max_pair_bytes
};

struct RemoteProxy::Client {
  uint64_t id = 0;
  FileDescriptor fd;
  in_addr peer{};
  Nanos accepted = 0;  // its request must come within head_timeout of it
  Nanos progress = 0;  // when it last took bytes, or was given some to take
  std::string head;    // the request as it arrives
  bool requested = false;
  bool authorised = false;  // its request carried the token
  BulkRequest request;
  bool started = false;  // its load began
  std::string out;
  size_t out_offset = 0;
  FileDescriptor file;     // the pair being sent: read into out as the connection takes it
  uint64_t file_left = 0;  // its bytes still to read
  bool ending = false;     // close once out is sent
  bool gone = false;
  size_t pending() const { return out.size() - out_offset; }
};
