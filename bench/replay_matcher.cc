// SPDX-License-Identifier: GPL-3.0-or-later
// bench/replay-matcher DIR PORT index|rescan WORK: serves the recording in DIR the way mm-replay's
// servers do (an Apache httpd forwarding every request over FastCGI to the matcher), on
// 127.0.0.1:PORT only (no shell, no DNS: clients send the recorded Host), with either matcher:
//   index   the recording indexed once (ReplayIndex::match, as mm-replay answers);
//   rescan  every file of DIR read and parsed again for each request, as the original Mahimahi
//           did, with the same matching rules (a fresh index per request, so repeated requests
//           always get the first recorded response).
// WORK: an empty directory for the daemons' files and an (unused: HTTP only) CA, which the caller
// removes. Prints "ready" once the server answers, stops when standard input closes or on SIGTERM/SIGINT.
// Requests are matched whatever their User-Agent. For bench/replay; not installed.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "replay/replay_fastcgi.hh"
#include "replay/replay_index.hh"
#include "replay/replay_servers.hh"
#include "tls/certificate_authority.hh"
#include "util/exception.hh"
#include "util/signals.hh"

namespace fs = std::filesystem;

namespace {

ReplayFastCgi::Matcher matcher(const std::string& kind, const fs::path& dir, std::unique_ptr<ReplayIndex>& index) {
  ReplayOptions options;
  options.ignore_user_agent = true;
  if (kind == "index") {
    index = std::make_unique<ReplayIndex>(ReplayIndex::load(dir, nullptr));
    return [&index, options](const ReplayRequest& request) { return index->match(request, options); };
  }
  if (kind == "rescan") {
    (void)ReplayIndex::load(dir, nullptr);  // a bad recording fails now, not on the first request
    return [dir, options](const ReplayRequest& request) {
      return ReplayIndex::load(dir, nullptr).match(request, options);
    };
  }
  throw UsageError("the matcher is index or rescan, not " + kind);
}

// Until standard input closes or SIGTERM/SIGINT arrives.
void wait_for_the_end() {
  SignalSet stops{SIGTERM, SIGINT};
  stops.block();
  SignalFd signals(stops);
  pollfd fds[2] = {{0, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    if (fds[0].revents) {
      char buffer[256];
      if (::read(0, buffer, sizeof buffer) <= 0) return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc != 5) throw UsageError("usage: replay-matcher DIR PORT index|rescan WORK");
    const fs::path dir = argv[1];
    const int port = std::atoi(argv[2]);
    if (port <= 0 || port > 65535) throw UsageError(std::string("bad port ") + argv[2]);
    std::unique_ptr<ReplayIndex> index;
    ReplayFastCgi::Matcher match = matcher(argv[3], dir, index);

    const fs::path work = fs::absolute(argv[4]);
    CertificateAuthority ca = CertificateAuthority::load_or_create(work / "ca");
    ReplayFastCgi fastcgi(match, work / "matcher.sock", 8,
                          [](const std::string& line) { std::cerr << "replay-matcher: " << line << std::endl; });
    fastcgi.start();
    ReplayServers servers({{"127.0.0.1", static_cast<uint16_t>(port), false, {}, false}}, ReplayDns{}, ca,
                          work / "matcher.sock", work);
    std::cout << "ready" << std::endl;
    wait_for_the_end();
    servers.stop();
    fastcgi.stop();
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "replay-matcher: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "replay-matcher: " << e.what() << std::endl;
    return 1;
  }
}
