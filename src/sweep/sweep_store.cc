// SPDX-License-Identifier: GPL-3.0-or-later
// The resumable results directory of a sweep (see sweep_store.hh).
#include "sweep/sweep_store.hh"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace fs = std::filesystem;

namespace {
// The fields two sweeps must share to be merged: the rest (grid lists, protocol) is combined.
const char* const kMergeKeys[] = {"url", "runs", "timeout_s", "queue", "tcp_ecn", "match_user_agent"};

}  // namespace

nlohmann::json read_json_file(const fs::path& path, const std::string& what) {
  const std::string text =
      read_user_file(path.string(), what, kMaxResultFileBytes, "it is not one of mm-sweep's files");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(what + " " + path.string() + " is not valid JSON (" + e.what() +
                    "): remove it, or give another directory");
  }
}

std::string manifest_text(const nlohmann::json& manifest) { return manifest.dump(2) + "\n"; }

namespace {

std::string read_bytes(const fs::path& path) {
  return read_user_file(path.string(), "result file", kMaxResultFileBytes, "it is not one of mm-sweep's files");
}

// Values of two sorted number lists, merged and sorted.
nlohmann::json union_of(const nlohmann::json& a, const nlohmann::json& b) {
  std::set<double> values;
  for (const auto& v : a) values.insert(v.get<double>());
  for (const auto& v : b) values.insert(v.get<double>());
  return nlohmann::json(std::vector<double>(values.begin(), values.end()));
}
}  // namespace

void write_file_atomically(const fs::path& path, const std::string& content) {
  const fs::path temporary =
      path.parent_path() / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  try {
    FileDescriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd.valid()) throw SystemError("creating " + temporary.string());
    write_all(fd.get(), content);
    if (::fsync(fd.get()) != 0) throw SystemError("syncing " + temporary.string());
    fd.close();
    if (::rename(temporary.c_str(), path.c_str()) != 0) throw SystemError("renaming it to " + path.string());
  } catch (const SystemError& e) {
    ::unlink(temporary.c_str());
    throw UserError(std::string("cannot write ") + path.string() + ": " + e.what() +
                    " (is the disk full, or the directory not writable?)");
  }
}

ResultStore::ResultStore(fs::path dir, nlohmann::json manifest) : dir_(std::move(dir)), manifest_(std::move(manifest)) {
  configurations_ = manifest_configurations(manifest_, (dir_ / kManifestName).string());
  if (!manifest_.contains("runs") || !manifest_["runs"].is_number_integer() || manifest_["runs"].get<int>() < 1 ||
      manifest_["runs"].get<int>() > kMaxRuns)
    throw UserError((dir_ / kManifestName).string() +
                    " has no valid \"runs\": give mm-sweep a results directory it made");
  if (manifest_.contains("baseline_runs") &&
      (!manifest_["baseline_runs"].is_number_integer() || manifest_["baseline_runs"].get<int>() < 0 ||
       manifest_["baseline_runs"].get<int>() > kMaxRuns))
    throw UserError((dir_ / kManifestName).string() +
                    " has an invalid \"baseline_runs\": give mm-sweep a results directory it made");
}

nlohmann::json open_results_manifest(const fs::path& dir, const nlohmann::json& manifest, const std::string& subdir) {
  const fs::path file = dir / kManifestName;
  std::error_code error;
  if (fs::exists(file, error)) {
    const nlohmann::json existing = read_json_file(file, "manifest");
    if (existing != manifest) {
      std::string fields;
      for (const std::string& name : manifest_differences(existing, manifest))
        fields += (fields.empty() ? "" : ", ") + name;
      throw UserError(dir.string() + " holds another sweep (it differs in: " + fields + "; see " + file.string() +
                      "): give the same options as before to continue that sweep, or another --out for this one");
    }
    return existing;
  }
  fs::create_directories(dir / subdir, error);
  if (error) throw UserError("cannot create " + (dir / subdir).string() + ": " + error.message() + " (check --out)");
  write_file_atomically(file, manifest_text(manifest));
  return manifest;
}

nlohmann::json read_results_manifest(const fs::path& dir) {
  const fs::path file = dir / kManifestName;
  std::error_code error;
  if (!fs::is_directory(dir, error))
    throw UserError(dir.string() + " is not a directory: give mm-sweep's results directories");
  if (!fs::exists(file, error))
    throw UserError(dir.string() + " has no " + kManifestName + ": it is not the results directory of an mm-sweep run");
  return read_json_file(file, "manifest");
}

ResultStore ResultStore::open_for_sweep(const fs::path& dir, const nlohmann::json& manifest) {
  return ResultStore(dir, open_results_manifest(dir, manifest, "loads"));
}

ResultStore ResultStore::open_existing(const fs::path& dir) { return ResultStore(dir, read_results_manifest(dir)); }

int ResultStore::runs() const { return manifest_["runs"].get<int>(); }
int ResultStore::baseline_runs() const {
  return manifest_.contains("baseline_runs") ? manifest_["baseline_runs"].get<int>() : runs();
}
std::string ResultStore::queue() const {
  return manifest_.contains("queue") && manifest_["queue"].is_string() ? manifest_["queue"].get<std::string>() : "";
}

fs::path ResultStore::load_file(const std::string& id, int run) const {
  return dir_ / "loads" / id / ("run-" + std::to_string(run) + ".json");
}
fs::path ResultStore::log_file(const std::string& id, int run) const {
  return dir_ / "loads" / id / ("run-" + std::to_string(run) + ".log");
}
fs::path ResultStore::pending_file(const std::string& id, int run) const {
  return dir_ / "loads" / id / (".run-" + std::to_string(run) + ".pageload.json");
}

void ResultStore::prepare(const std::string& id) const {
  std::error_code error;
  fs::create_directories(dir_ / "loads" / id, error);
  if (error) throw UserError("cannot create " + (dir_ / "loads" / id).string() + ": " + error.message());
}

bool ResultStore::has_load(const std::string& id, int run) const {
  std::error_code error;
  return fs::is_regular_file(load_file(id, run), error);
}

void ResultStore::store_load(const std::string& id, int run, LoadResult load) const {
  load.run = run;
  std::ostringstream text;
  write_load_json({load}, text);
  write_file_atomically(load_file(id, run), text.str());
}

LoadResult read_single_load(const fs::path& file) {
  const std::string text =
      read_user_file(file.string(), "load file", kMaxResultFileBytes, "it is not one of mm-sweep's files");
  std::istringstream in(text);
  std::vector<LoadResult> loads = read_load_json(in, file.string());
  if (loads.size() != 1) throw UserError(file.string() + " holds " + std::to_string(loads.size()) + " loads, not one");
  return loads.front();
}

std::map<std::string, std::vector<LoadResult>> ResultStore::read_loads() const {
  std::map<std::string, std::vector<LoadResult>> loads;
  for (const Configuration& c : configurations_) {
    auto& list = loads[c.id()];
    for (int run = 1; run <= runs_of(c); run++) {
      if (!has_load(c.id(), run)) continue;
      LoadResult load = read_single_load(load_file(c.id(), run));
      load.run = run;
      list.push_back(std::move(load));
    }
  }
  return loads;
}

ResultStore merge_results(const fs::path& out, const std::vector<fs::path>& inputs) {
  if (inputs.empty()) throw UsageError("--merge OUT DIR...: name at least one results directory to merge");
  std::vector<ResultStore> stores;
  std::error_code error;
  if (fs::exists(out / kManifestName, error)) stores.push_back(ResultStore::open_existing(out));
  for (const fs::path& dir : inputs) {
    if (fs::equivalent(dir, out, error)) continue;  // OUT itself: already included when it has a manifest
    stores.push_back(ResultStore::open_existing(dir));
  }
  if (stores.empty()) throw UsageError("--merge: the only directory to merge is OUT itself, which has no sweep yet");
  nlohmann::json merged = stores.front().manifest();
  nlohmann::json sources = nlohmann::json::array();
  for (const ResultStore& store : stores) {
    const nlohmann::json& m = store.manifest();
    for (const char* key : kMergeKeys) {
      if (m.value(key, nlohmann::json()) != merged.value(key, nlohmann::json()))
        throw UserError("cannot merge " + store.dir().string() + " with " + stores.front().dir().string() +
                        ": their sweeps differ in \"" + key + "\" (" + m.value(key, nlohmann::json()).dump() + " and " +
                        merged.value(key, nlohmann::json()).dump() +
                        "); merge only sweeps of the same page with the same --runs, --timeout, --queue, --tcp-ecn "
                        "and --match-user-agent");
    }
    for (const char* key : {"rates_mbps", "rtts_ms", "loss"}) merged[key] = union_of(merged[key], m[key]);
    // The baseline's loads of every input are kept: as many runs as the one with the most.
    const int baseline_runs = std::max(store.baseline_runs(), merged.value("baseline_runs", merged["runs"].get<int>()));
    if (baseline_runs == merged["runs"].get<int>()) {
      merged.erase("baseline_runs");
    } else {
      merged["baseline_runs"] = baseline_runs;
    }
    for (const char* key : {"http2", "protocols", "single_server"})  // "mixed" once two sweeps differ
      if (m.value(key, nlohmann::json()) != merged.value(key, nlohmann::json())) merged[key] = "mixed";
    for (const nlohmann::json& config : m["configurations"]) {
      bool known = false;
      for (const nlohmann::json& c : merged["configurations"]) known = known || c["id"] == config["id"];
      if (!known) merged["configurations"].push_back(config);
    }
    if (m.contains("merged_from")) {
      for (const auto& s : m["merged_from"]) sources.push_back(s);
    } else if (&store != &stores.front() || !fs::equivalent(store.dir(), out, error)) {
      sources.push_back(fs::absolute(store.dir()).lexically_normal().string());
    }
  }
  merged["merged_from"] = sources;
  fs::create_directories(out / "loads", error);
  if (error) throw UserError("cannot create " + (out / "loads").string() + ": " + error.message() + " (check OUT)");
  // Copy the loads before the manifest: an interrupted merge leaves OUT as it was, plus files.
  const ResultStore target(out, merged);  // validates the merged manifest
  for (const ResultStore& store : stores) {
    if (fs::equivalent(store.dir(), out, error)) continue;
    for (const Configuration& c : store.configurations()) {
      for (int run = 1; run <= store.runs_of(c); run++) {
        if (!store.has_load(c.id(), run)) continue;
        const fs::path from = store.load_file(c.id(), run), to = target.load_file(c.id(), run);
        read_single_load(from);  // refuse what is not a load before copying it
        const std::string bytes = read_bytes(from);
        if (target.has_load(c.id(), run)) {
          if (read_bytes(to) != bytes)
            throw UserError(from.string() + " and " + to.string() + " both hold run " + std::to_string(run) + " of " +
                            c.id() +
                            ", with different results: merge folders of different configurations, or "
                            "remove one of the two");
          continue;
        }
        target.prepare(c.id());
        write_file_atomically(to, bytes);
        const fs::path log = store.log_file(c.id(), run);
        if (fs::is_regular_file(log, error))  // diagnostics only: a plain copy
          fs::copy_file(log, target.log_file(c.id(), run), fs::copy_options::overwrite_existing, error);
      }
    }
  }
  write_file_atomically(out / kManifestName, manifest_text(merged));
  return target;
}
