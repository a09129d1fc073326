// SPDX-License-Identifier: GPL-3.0-or-later
#include "shell/paths_shell.hh"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "packet/packet_capture.hh"
#include "packet/peer_paths.hh"
#include "shell/ferry_pair.hh"
#include "util/address.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/random.hh"

namespace {
// A table of paths: 65536 lines of a few dozen bytes each, with room for comments.
constexpr uint64_t kMaxPathsFileBytes = 16 << 20;

std::string peer_text(const PeerAddress& p) {
  std::string text = Ipv4{p.address}.str();
  if (p.prefix != 32) text += "/" + std::to_string(p.prefix);
  if (p.port) text += ":" + std::to_string(p.port);
  return text;
}

// --verbose, at the end: what each path that carried anything did, in each direction.
std::string paths_summary(const std::vector<PeerPath>& paths, const PeerPathQueue& to, const PeerPathQueue& from) {
  std::string text;
  auto direction = [](const PathCounters& c) {
    return std::to_string(c.packets) + " packets, " + std::to_string(c.lost) + " lost, " +
           std::to_string(c.overflowed) + " dropped by the queue";
  };
  for (uint32_t i = 1; i <= paths.size(); i++) {
    if (to.counters(i).packets == 0 && from.counters(i).packets == 0) continue;
    text += "mm-paths: " + peer_text(paths[i - 1].peer) + ": toward it " + direction(to.counters(i)) + "; from it " +
            direction(from.counters(i)) + "\n";
  }
  return text;
}

// --capture: written by the ferry's main thread (ferry_pair.hh).
class CaptureLogs final : public FerryLogs {
 public:
  explicit CaptureLogs(CaptureWriter& writer) : writer_(writer) {}
  int wake_fd() const override { return writer_.wake_fd(); }
  void drain() override { writer_.drain(); }
  void finish(Nanos) override { writer_.finish(); }

 private:
  CaptureWriter& writer_;
};

// The capture file, made with the user's rights; never an existing file (a capture is data).
FileDescriptor create_capture(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    if (errno == EEXIST) throw UserError("--capture " + path + " already exists: name a new file (or remove it)");
    throw UserError("--capture: cannot write " + path + ": " + std::strerror(errno));
  }
  return fd;
}
}  // namespace

ShellSpec paths_shell(const ProgramInfo& info, int ac, char** av) {
  ShellSpec spec;
  std::optional<std::string> file;
  std::vector<PeerPath> typed;
  std::optional<uint64_t> seed;
  std::optional<std::string> capture;
  std::vector<ArgScanner::Option> options{{"capture", true,
                                           [&](std::string_view v) {
                                             if (v.empty()) throw UsageError("--capture needs a file to write");
                                             capture = std::string(v);
                                           }},
                                          {"path", true,
                                           [&](std::string_view v) {
                                             try {
                                               const std::optional<PeerPath> path = parse_peer_path(v, "--path");
                                               if (!path || v.find('\n') != std::string_view::npos)
                                                 throw UserError("--path: give one \"PEER SETTING...\" per --path");
                                               typed.push_back(*path);
                                             } catch (const UserError& e) {
                                               throw UsageError(e.what());
                                             }
                                             if (typed.size() > kMaxPeerPaths)
                                               throw UsageError("too many --path options: write a PATHS-FILE");
                                           }},
                                          ArgScanner::seed_option(seed),
                                          ArgScanner::verbose_option(spec.verbose),
                                          ArgScanner::tcp_ecn_option(spec.tcp_ecn)};
  for (ArgScanner::Option& o : tcp_settings_options(spec.command_tcp, "tcp-")) options.push_back(std::move(o));
  ArgScanner scanner(info, std::move(options));
  spec.command = scanner.scan(ac, av, [&](std::string_view word) {
    if (file || !typed.empty()) return false;
    if (word.empty()) throw UsageError("PATHS-FILE is empty: name a file of paths");
    file = std::string(word);
    return true;
  });
  if (!file && typed.empty()) throw UsageError("missing PATHS-FILE (or --path=\"PEER SETTING...\")");
  spec.device_kind = ShellKind::Paths;
  spec.tag = "[paths " + (file ? user_file_name(*file) : std::to_string(typed.size())) + "] ";
  uint64_t base_seed = seed ? *seed : Random::fresh_seed();
  const uint64_t up_seed = Random::splitmix(base_seed), down_seed = Random::splitmix(base_seed);
  // The file is the user's: read after the ferry dropped root's rights for good.
  spec.ferry = [file, typed, up_seed, down_seed, capture, verbose = spec.verbose](const FerryEndpoints& tuns,
                                                                                  const std::function<void()>& ready) {
    std::optional<CaptureWriter> writer;
    if (capture) writer.emplace(create_capture(*capture), *capture);
    std::vector<PeerPath> paths;
    if (file) {
      paths = parse_peer_paths(read_user_file(*file, "paths file", kMaxPathsFileBytes, "list paths, one peer per line"),
                               user_file_name(*file));
    }
    // A --path replaces the file's line for the same peer.
    std::map<PeerAddress, size_t> index;
    for (size_t i = 0; i < paths.size(); i++) index[paths[i].peer] = i;
    for (const PeerPath& p : typed) {
      if (const auto it = index.find(p.peer); it != index.end()) {
        paths[it->second] = p;
      } else {
        index[p.peer] = paths.size();
        paths.push_back(p);
      }
    }
    if (paths.size() > kMaxPeerPaths) throw UserError("more than " + std::to_string(kMaxPeerPaths) + " paths");
    PeerPathQueue uplink(paths, PeerPathQueue::Direction::ToPeers, up_seed);
    PeerPathQueue downlink(paths, PeerPathQueue::Direction::FromPeers, down_seed);
    int status;
    if (writer) {
      // The command's side: what it sent as it came (uplink), what it receives as it goes to it.
      using Captured = CapturedQueue<PeerPathQueue>;
      Captured up(uplink, writer->ring(0), Captured::At::Arrival);
      Captured down(downlink, writer->ring(1), Captured::At::Departure);
      CaptureLogs logs(*writer);
      status = run_ferry_pair(tuns, up, down, ready, &logs);
      if (verbose) std::cerr << "mm-paths: captured " << writer->packets() << " packets in " << *capture << "\n";
    } else {
      status = run_ferry_pair(tuns, uplink, downlink, ready);
    }
    if (verbose) std::cerr << paths_summary(paths, uplink, downlink);
    return status;
  };
  return spec;
}
