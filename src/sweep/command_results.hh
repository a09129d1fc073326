// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The results directory of a command sweep, resumable and mergeable as a page-load sweep's:
//   RESULTS/sweep.json                  the manifest (command_grid.hh's command_manifest)
//   RESULTS/runs/ID/run-N.json          one finished run (command_run.hh), written whole or not at all
//   RESULTS/runs/ID/run-N.log           what its shells and command printed
//   RESULTS/runs/ID/run-N.server.log    what its server printed
//   RESULTS/runs.csv, summary.csv, plots/   made from the above (command_report.hh)
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sweep/command_grid.hh"

class CommandResults {
 public:
  static CommandResults open_for_sweep(const std::filesystem::path& dir, const nlohmann::json& manifest);
  static CommandResults open_existing(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const nlohmann::json& manifest() const { return manifest_; }
  const std::vector<CommandConfiguration>& configurations() const { return configurations_; }
  int runs() const { return manifest_["runs"].get<int>(); }

  std::filesystem::path result_file(const std::string& id, int run) const;
  std::filesystem::path log_file(const std::string& id, int run) const;
  std::filesystem::path server_log_file(const std::string& id, int run) const;
  // Where mm-link writes the direction's log during the run ("uplink", "downlink").
  std::filesystem::path link_log_file(const std::string& id, int run, const std::string& direction) const;
  void prepare(const std::string& id) const;  // creates RESULTS/runs/ID
  bool has_run(const std::string& id, int run) const;
  // A stored run's result. UserError naming the file when it is not one.
  nlohmann::json read_run(const std::string& id, int run) const;
  // Every stored run, by configuration id, in run order.
  std::map<std::string, std::vector<nlohmann::json>> read_runs() const;

 private:
  CommandResults(std::filesystem::path dir, nlohmann::json manifest);
  friend CommandResults merge_command_results(const std::filesystem::path& out,
                                              const std::vector<std::filesystem::path>& inputs);
  std::filesystem::path dir_;
  nlohmann::json manifest_;
  std::vector<CommandConfiguration> configurations_;
};

// mm-sweep --merge OUT DIR... for command sweeps: the manifests must agree on the schemes, the
// server, --tcp-ecn, --runs and --timeout (UserError naming the field and both directories
// otherwise); the merged manifest lists every configuration of any of them; each stored run (and
// its logs) is copied into OUT, where a run already there must be byte-identical (UserError
// naming both files otherwise). OUT may be new, a directory without a manifest, or an earlier
// merge. Returns OUT's results.
CommandResults merge_command_results(const std::filesystem::path& out,
                                     const std::vector<std::filesystem::path>& inputs);
