// SPDX-License-Identifier: GPL-3.0-or-later
#include "shell/paths_shell.hh"

#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
}  // namespace

ShellSpec paths_shell(const ProgramInfo& info, int ac, char** av) {
  ShellSpec spec;
  std::optional<std::string> file;
  std::vector<PeerPath> typed;
  std::optional<uint64_t> seed;
  std::vector<ArgScanner::Option> options{{"path", true,
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
  spec.ferry = [file, typed, up_seed, down_seed, verbose = spec.verbose](const FerryEndpoints& tuns,
                                                                         const std::function<void()>& ready) {
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
    const int status = run_ferry_pair(tuns, uplink, downlink, ready);
    if (verbose) std::cerr << paths_summary(paths, uplink, downlink);
    return status;
  };
  return spec;
}
