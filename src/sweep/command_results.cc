// SPDX-License-Identifier: GPL-3.0-or-later
// A command sweep's results directory (see command_results.hh).
#include "sweep/command_results.hh"

#include "sweep/sweep_store.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace fs = std::filesystem;

CommandResults::CommandResults(fs::path dir, nlohmann::json manifest)
    : dir_(std::move(dir)), manifest_(std::move(manifest)) {
  const std::string name = (dir_ / kManifestName).string();
  configurations_ = command_manifest_configurations(manifest_, name);
  if (!manifest_.contains("runs") || !manifest_["runs"].is_number_integer() || manifest_["runs"].get<int>() < 1 ||
      manifest_["runs"].get<int>() > kMaxRuns)
    throw UserError(name + " has no valid \"runs\": give mm-sweep a results directory it made");
}

CommandResults CommandResults::open_for_sweep(const fs::path& dir, const nlohmann::json& manifest) {
  return CommandResults(dir, open_results_manifest(dir, manifest, "runs"));
}

CommandResults CommandResults::open_existing(const fs::path& dir) {
  return CommandResults(dir, read_results_manifest(dir));
}

fs::path CommandResults::result_file(const std::string& id, int run) const {
  return dir_ / "runs" / id / ("run-" + std::to_string(run) + ".json");
}
fs::path CommandResults::log_file(const std::string& id, int run) const {
  return dir_ / "runs" / id / ("run-" + std::to_string(run) + ".log");
}
fs::path CommandResults::server_log_file(const std::string& id, int run) const {
  return dir_ / "runs" / id / ("run-" + std::to_string(run) + ".server.log");
}
fs::path CommandResults::link_log_file(const std::string& id, int run, const std::string& direction) const {
  return dir_ / "runs" / id / ("run-" + std::to_string(run) + "." + direction + ".log");
}

void CommandResults::prepare(const std::string& id) const {
  std::error_code error;
  fs::create_directories(dir_ / "runs" / id, error);
  if (error) throw UserError("cannot create " + (dir_ / "runs" / id).string() + ": " + error.message());
}

bool CommandResults::has_run(const std::string& id, int run) const {
  std::error_code error;
  return fs::is_regular_file(result_file(id, run), error);
}

nlohmann::json CommandResults::read_run(const std::string& id, int run) const {
  const fs::path file = result_file(id, run);
  nlohmann::json result = read_json_file(file, "run file");
  if (!result.is_object() || result.value("configuration", "") != id || result.value("run", 0) != run ||
      !result.contains("status") || !result["status"].is_string())
    throw UserError(file.string() + " is not run " + std::to_string(run) + " of " + id +
                    ": remove it (the same mm-sweep command runs it again)");
  return result;
}

std::map<std::string, std::vector<nlohmann::json>> CommandResults::read_runs() const {
  std::map<std::string, std::vector<nlohmann::json>> runs;
  for (const CommandConfiguration& c : configurations_) {
    auto& list = runs[c.id()];
    for (int run = 1; run <= this->runs(); run++)
      if (has_run(c.id(), run)) list.push_back(read_run(c.id(), run));
  }
  return runs;
}

CommandResults merge_command_results(const fs::path& out, const std::vector<fs::path>& inputs) {
  if (inputs.empty()) throw UsageError("--merge OUT DIR...: name at least one results directory to merge");
  std::vector<CommandResults> sources;
  std::error_code error;
  if (fs::exists(out / kManifestName, error)) sources.push_back(CommandResults::open_existing(out));
  for (const fs::path& dir : inputs) {
    if (fs::equivalent(dir, out, error)) continue;  // OUT itself: already included when it has a manifest
    sources.push_back(CommandResults::open_existing(dir));
  }
  if (sources.empty()) throw UsageError("--merge: the only directory to merge is OUT itself, which has no sweep yet");
  nlohmann::json merged = sources.front().manifest();
  for (const CommandResults& source : sources) {
    const nlohmann::json& m = source.manifest();
    for (const char* key : {"schemes", "server", "tcp_ecn", "runs", "timeout_s"}) {
      if (m.value(key, nlohmann::json()) != merged.value(key, nlohmann::json()))
        throw UserError("cannot merge " + source.dir().string() + " with " + sources.front().dir().string() +
                        ": their sweeps differ in \"" + key +
                        "\"; merge only sweeps of the same schemes, server, --tcp-ecn, --runs and --timeout");
    }
    for (const nlohmann::json& config : m["configurations"]) {
      bool known = false;
      for (const nlohmann::json& c : merged["configurations"]) known = known || c["id"] == config["id"];
      if (!known) merged["configurations"].push_back(config);
    }
  }
  fs::create_directories(out / "runs", error);
  if (error) throw UserError("cannot create " + (out / "runs").string() + ": " + error.message() + " (check OUT)");
  const CommandResults target(out, merged);  // validates the merged manifest
  // The runs before the manifest: an interrupted merge leaves OUT as it was, plus files.
  for (const CommandResults& source : sources) {
    if (fs::equivalent(source.dir(), out, error)) continue;
    for (const CommandConfiguration& c : source.configurations()) {
      const std::string id = c.id();
      for (int run = 1; run <= source.runs(); run++) {
        if (!source.has_run(id, run)) continue;
        source.read_run(id, run);  // refuse what is not a run before copying it
        const fs::path from = source.result_file(id, run), to = target.result_file(id, run);
        const std::string bytes =
            read_user_file(from.string(), "run file", kMaxResultFileBytes, "it is not one of mm-sweep's files");
        if (target.has_run(id, run)) {
          if (read_user_file(to.string(), "run file", kMaxResultFileBytes, "it is not one of mm-sweep's files") !=
              bytes)
            throw UserError(from.string() + " and " + to.string() + " both hold run " + std::to_string(run) + " of " +
                            id +
                            ", with different results: merge folders of different configurations, or remove one of "
                            "the two");
          continue;
        }
        target.prepare(id);
        write_file_atomically(to, bytes);
        for (const auto& [from_log, to_log] :
             {std::pair{source.log_file(id, run), target.log_file(id, run)},
              std::pair{source.server_log_file(id, run), target.server_log_file(id, run)}})
          if (fs::is_regular_file(from_log, error))  // diagnostics only: a plain copy
            fs::copy_file(from_log, to_log, fs::copy_options::overwrite_existing, error);
      }
    }
  }
  write_file_atomically(out / kManifestName, manifest_text(merged));
  return target;
}
