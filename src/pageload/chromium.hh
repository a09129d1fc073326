// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The browser of one page load: an unmodified headless Chromium started with a fresh profile
// and a fresh HOME (so nothing of one load, cache, cookies, service workers, HSTS, reaches the
// next, and nothing of the user's own profile is touched), driven over its DevTools pipe.
//
// Certificates: the user's mahimahi CA (the one mm-record and mm-replay present) and any --ca
// file are trusted through an NSS database in that HOME (~/.pki/nssdb, which Chromium reads on
// Linux), never by ignoring certificate errors. The database is made once per run with certutil
// (BrowserProfileTemplate) and copied into each load's HOME.
//
// Processes: the browser leads a process group of its own and dies with mm-pageload
// (PR_SET_PDEATHSIG). Closing asks it to close (Browser.close), then kills its whole group,
// then any process that escaped the group but runs from the load's directory (Chromium's crash
// handler starts its own session), reaps, and removes the directory: no Chromium process
// outlives a load, whatever the path out.
#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pageload/devtools_pipe.hh"
#include "util/clock.hh"

struct BrowserOptions {
  std::string program;                   // the Chromium binary (a path)
  std::vector<std::string> extra_flags;  // --browser-flag, in order, after ours
  bool http2 = true;                     // false: --disable-http2
  bool quic = false;                     // false: --disable-quic
  // QUIC to every https origin from the first request (--origin-to-force-quic-on=*, which also
  // makes Chromium accept a locally trusted CA over QUIC); the load fails if any https response
  // came over anything else (PageLoad checks each one).
  bool http3_forced = false;
  // Hosts Chromium may reach over QUIC with a locally trusted CA without being forced to
  // (--origin-to-force-quic-on=HOST:1, a port nothing uses): an Alt-Svc it learned decides.
  std::vector<std::string> quic_exempt_hosts;
  int width = 1366, height = 768;                           // the viewport
  std::vector<std::filesystem::path> trusted_certificates;  // PEM files: the mahimahi CA, --ca
};

// The private scratch directory of a run (under $TMPDIR or /tmp), holding the NSS database
// every load's HOME gets a copy of. Removed when destroyed.
class BrowserProfileTemplate {
 public:
  explicit BrowserProfileTemplate(const std::vector<std::filesystem::path>& trusted_certificates);
  ~BrowserProfileTemplate();
  BrowserProfileTemplate(const BrowserProfileTemplate&) = delete;
  BrowserProfileTemplate& operator=(const BrowserProfileTemplate&) = delete;

  const std::filesystem::path& directory() const { return directory_; }
  // A new directory for one load: DIR/home (with .pki/nssdb copied in) and DIR/profile.
  std::filesystem::path new_load_directory();

 private:
  std::filesystem::path directory_;
  int loads_ = 0;
};

// The arguments Chromium gets (after argv[0]) for these options, a profile directory and the
// first page: pure, for the tests.
std::vector<std::string> chromium_arguments(const BrowserOptions& options, const std::filesystem::path& profile,
                                            bool as_root);

class Browser {
 public:
  // Starts the browser in `load_directory` (from BrowserProfileTemplate::new_load_directory) and
  // waits until it answers on its pipe, at most until `ready_deadline`. interrupt_fd: as
  // DevToolsPipe's. Throws UserError if the program cannot be run, and the DevTools errors
  // (DevToolsTimeout: it did not answer; DevToolsClosed: it exited, with the end of its log).
  Browser(const BrowserOptions& options, std::filesystem::path load_directory, int interrupt_fd, Nanos ready_deadline);
  ~Browser();  // close()
  Browser(const Browser&) = delete;
  Browser& operator=(const Browser&) = delete;

  DevToolsPipe& pipe() { return *pipe_; }
  // The last lines Chromium wrote on its standard error, for messages.
  std::string log_tail() const;
  // Closes as described above; `graceful`: ask with Browser.close first (not for a hung one).
  // Idempotent; never throws.
  void close(bool graceful = true);
  // The load directory (and its profile) stays when the browser closes, for another browser to
  // start from it; that one removes it.
  void keep_directory() { keep_directory_ = true; }

 private:
  std::filesystem::path directory_;
  bool keep_directory_ = false;
  pid_t pid_ = -1;
  std::unique_ptr<DevToolsPipe> pipe_;
};
