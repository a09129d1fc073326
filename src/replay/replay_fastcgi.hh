// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The replay's persistent matcher: a FastCGI responder (libfcgi) on a unix socket, to which
// every Apache instance forwards every request (mod_proxy_fcgi). It replaces the original's
// fork+exec of a matcher per request: the recording is indexed once and a pool of threads
// answers from memory.
//
// A connection the web server keeps open between requests (FCGI_KEEP_CONN, i.e. Apache's
// enablereuse=on) holds a thread while idle, so the web server must not pool more connections
// than there are threads: leave Apache's default (a connection per request) alone.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "replay/replay_index.hh"

struct FCGX_Request;  // libfcgi's, from fcgiapp.h

class ReplayFastCgi {
 public:
  // Answers a request (from any thread, concurrently); what it throws becomes a 500.
  using Matcher = std::function<ReplayMatch(const ReplayRequest&)>;

  // Listens on a unix socket at socket_path (mode 0600, removed on destruction; an existing
  // socket there is replaced, anything else there is a UserError), answers with `threads`
  // threads once start() is called (connections made before wait in the backlog). log receives
  // one line per miss and per failed request, from any thread, one call at a time.
  ReplayFastCgi(Matcher match, const std::filesystem::path& socket_path, int threads,
                std::function<void(const std::string&)> log);
  ~ReplayFastCgi();  // stops and joins
  ReplayFastCgi(const ReplayFastCgi&) = delete;
  ReplayFastCgi& operator=(const ReplayFastCgi&) = delete;

  void start();  // spawns the threads (once)
  // Makes every thread return: the listening socket is shut down, idle kept-alive connections
  // are closed and responses still being written are cut. Idempotent.
  void stop();
  uint64_t served() const;  // requests answered from the recording
  uint64_t missed() const;  // requests answered with a 404

 private:
  void run();
  void handle(FCGX_Request& request);
  void close_connection(FCGX_Request& request);  // mm-replay --unmatched=close
  void report(const std::string& line);

  Matcher match_;
  std::filesystem::path socket_path_;
  int threads_wanted_;
  std::function<void(const std::string&)> log_;

  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd, readable once stop() has begun
  dev_t socket_dev_ = 0;
  ino_t socket_ino_ = 0;  // to remove only our own socket file

  std::mutex lifecycle_mutex_;  // start() / stop()
  bool started_ = false, stopped_ = false;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;

  std::mutex active_mutex_;  // connections a thread is answering on (it closes them only after leaving this set)
  std::set<int> active_fds_;

  std::mutex log_mutex_;
  std::set<int> reported_accept_errors_;
  std::atomic<uint64_t> served_{0}, missed_{0};
};

// mm-replay --verbose's summary of ReplayFastCgi::served() and missed(): "1 request answered from
// the recording, 0 not found".
std::string replay_summary(uint64_t served, uint64_t missed);
