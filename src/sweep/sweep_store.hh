// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The results directory of a sweep, which makes sweeps resumable and mergeable:
//   RESULTS/sweep.json               the manifest: settings and configurations (sweep_grid.hh)
//   RESULTS/loads/ID/run-N.json      one finished load (mm-pageload's JSON: an array of one)
//   RESULTS/loads/ID/run-N.log       what its shells and mm-pageload printed
//   RESULTS/loads.csv, summary.csv, plots/   made from the above (sweep_report.hh)
// Every file is written to a temporary name in its directory, synced, then renamed: a load is
// either stored whole or not at all, whenever the sweep stops.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pageload/load_report.hh"
#include "sweep/sweep_grid.hh"

// Writes `content` to `path` through a temporary file in the same directory, fsync and rename.
// UserError naming the path on failure (the temporary file is removed).
void write_file_atomically(const std::filesystem::path& path, const std::string& content);

// Bound of a stored load's JSON and of a manifest (both are small).
inline constexpr uint64_t kMaxResultFileBytes = 16 << 20;

inline const std::string kManifestName = "sweep.json";
// A JSON file of mm-sweep's (at most kMaxResultFileBytes); UserError naming `what` and the path.
nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& what);
std::string manifest_text(const nlohmann::json& manifest);
// RESULTS/sweep.json for the sweep `manifest`: written, with RESULTS/SUBDIR, when missing (or
// when the directory exists without a manifest); the existing one when it is the same; otherwise
// a UserError naming the fields that differ and --out.
nlohmann::json open_results_manifest(const std::filesystem::path& dir, const nlohmann::json& manifest,
                                     const std::string& subdir);
// The manifest of an existing results directory. UserError if there is none.
nlohmann::json read_results_manifest(const std::filesystem::path& dir);

class ResultStore {
 public:
  // RESULTS for the sweep `manifest`: created with the manifest when missing (or when the
  // directory exists without a manifest); continued when its manifest is the same; otherwise a
  // UserError naming the fields that differ and --out.
  static ResultStore open_for_sweep(const std::filesystem::path& dir, const nlohmann::json& manifest);
  // An existing results directory (an input of --merge). UserError if it has no manifest.
  static ResultStore open_existing(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const nlohmann::json& manifest() const { return manifest_; }
  const std::vector<Configuration>& configurations() const { return configurations_; }
  int runs() const;           // loads of each emulated configuration
  int baseline_runs() const;  // loads of the unemulated baseline (the manifest's, else runs())
  int runs_of(const Configuration& c) const { return c.emulated ? runs() : baseline_runs(); }
  std::string queue() const;

  std::filesystem::path load_file(const std::string& id, int run) const;
  std::filesystem::path log_file(const std::string& id, int run) const;
  // Where mm-pageload writes its JSON before the load is stored (a hidden file).
  std::filesystem::path pending_file(const std::string& id, int run) const;
  // Creates RESULTS/loads/ID.
  void prepare(const std::string& id) const;
  bool has_load(const std::string& id, int run) const;
  // Stores the load as run `run` of `id` (its run field set to `run`), atomically.
  void store_load(const std::string& id, int run, LoadResult load) const;
  // Every stored load, by configuration id, in run order. UserError naming a file that does not
  // read as one load.
  std::map<std::string, std::vector<LoadResult>> read_loads() const;

 private:
  ResultStore(std::filesystem::path dir, nlohmann::json manifest);
  friend ResultStore merge_results(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs);
  std::filesystem::path dir_;
  nlohmann::json manifest_;
  std::vector<Configuration> configurations_;
};

// Reads the one load of a file mm-pageload wrote with --json (or a stored run-N.json). UserError
// naming the file when it is missing, too large, or not an array of exactly one load.
LoadResult read_single_load(const std::filesystem::path& file);

// mm-sweep --merge OUT DIR...: the manifests must agree on the page, the runs, the timeout, the
// queue and the User-Agent rule (UserError naming the field and both directories otherwise);
// the merged manifest lists every configuration of any of them; each stored load (and its log)
// is copied into OUT, where a load already there must be byte-identical (UserError naming both
// files otherwise). OUT may be new, a directory without a manifest, or an earlier merge (whose
// loads are kept). Returns OUT's store.
ResultStore merge_results(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs);
