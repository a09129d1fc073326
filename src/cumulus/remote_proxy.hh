// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Cumulus's Remote Proxy (the paper's §5.2), mm-cumulus-remote: near the servers, it loads each
// page a Local Proxy asks for in an unmodified headless browser and streams every
// request/response pair the browser exchanged with the servers back as the bulk response
// (cumulus/bulk.hh), as soon as each is whole.
//
// A load is made of our own programs, as the paper made it of RecordShell: the browser is
// mm-pageload's (a fresh profile, the user's CA trusted), inside mm-record (which ends TLS and
// writes each pair, as the servers sent it, into a directory of its own), inside the shells
// that give the Remote Proxy its own path to the servers (mm-delay by default). Each new file is
// sent as a frame (inotify tells when mm-record links it) and then removed. One load runs at a
// time; the next waits. So that the browser's start is not part of a page load, one loader
// waits ready ahead (its shells and browser started, mm-pageload --wait-for-url); the request's
// URL, User-Agent and Accept-Language are written to it, and the next one is started when the
// load ends.
//
// Answers only whom it serves: a request must carry the proxy's token (bulk.hh), or it is
// answered 401 and loads nothing.
//
// Bounded: at most kMaxConnections connections, kMaxConnectionsPerPeer from one address (a new
// connection past the total closes the oldest that has not yet made an authorised request);
// a request's head must come within head_timeout; at most kMaxWaitingLoads authorised requests
// wait; a load ends at mm-pageload's --timeout, or when its pairs pass max_load_bytes; a pair
// beyond max_pair_bytes is left out (the Local Proxy fetches it itself); a pair is read from its
// file as the client's connection takes it (memory: about kHighWater a client); a client that
// takes nothing for send_timeout, or goes away, ends its load (the loader is stopped); every
// loader is stopped and reaped when the proxy ends.
#include <netinet/in.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/clock.hh"
#include "util/epoll.hh"
#include "util/file_descriptor.hh"

struct LoadResult;

inline constexpr size_t kMaxWaitingLoads = 16, kMaxConnections = 64, kMaxConnectionsPerPeer = 16;

struct RemoteProxyOptions {
  FileDescriptor listener;  // listening already
  // The loader's command line up to the URL: shells, mm-record DIR --, mm-pageload and its
  // options; "{dir}" in any word is replaced by the load's recording directory, "{json}" by the
  // file where mm-pageload writes the load's result (--json={json}): its status, reason and PLT.
  std::vector<std::string> loader;
  std::filesystem::path work_directory;    // private: the loads' recording directories
  std::string token;                       // what a request must carry (valid_bulk_token)
  uint64_t max_pair_bytes = 64ull << 20;   // a pair beyond it is left out (at most kMaxBulkFrame)
  uint64_t max_load_bytes = 1ull << 30;    // a load whose pairs pass it is stopped
  Nanos head_timeout = 10 * kNanosPerSec;  // a connection's request must come within it
  Nanos send_timeout = 60 * kNanosPerSec;  // a client that takes nothing for so long is dropped
  bool verbose = false;
  std::function<void(const std::string&)> say;  // one line for standard error (no newline)
};

class RemoteProxy {
 public:
  explicit RemoteProxy(RemoteProxyOptions options);
  ~RemoteProxy();  // stops and reaps every loader
  RemoteProxy(const RemoteProxy&) = delete;
  RemoteProxy& operator=(const RemoteProxy&) = delete;

  // Serves until one of `stop_fds` is readable (a signalfd, the command's pidfd); the destructor
  // then stops every loader.
  void run(const std::vector<int>& stop_fds);

  struct Loader;
  struct Client;

 private:
  void accept_all();
  bool evict_unauthorised();
  void handle_client(Client& c);
  void authorise(Client& c);
  Nanos expire_clients(Nanos now);  // returns the next deadline (kNever: none)
  void fill(Client& c);
  void start_next_load();
  void start_spare();
  void watch_directory();
  void send_new_pairs();
  void finish_load();
  std::optional<LoadResult> read_result(const Loader& l) const;
  void drain_stderr(Loader& l);
  bool reap(Loader& l);
  void flush_client(Client& c);
  void end_client(Client& c);

  RemoteProxyOptions options_;
  Epoll epoll_;
  std::vector<std::unique_ptr<Client>> clients_;  // in arrival order; the front's load runs
  std::unique_ptr<Loader> spare_, current_;
  FileDescriptor inotify_;
  uint64_t next_load_ = 1, next_client_ = 1;
  uint64_t refused_ = 0;  // requests without the token
  std::string buffer_;
};
