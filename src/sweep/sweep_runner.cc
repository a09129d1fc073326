// SPDX-License-Identifier: GPL-3.0-or-later
// Running a sweep's loads (see sweep_runner.hh).
#include "sweep/sweep_runner.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>

#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/host_facts.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
std::string command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& word : argv) text += (text.empty() ? "" : " ") + shell_quote(word);
  return text;
}

std::string load_outcome(const LoadResult& load) {
  std::string text = status_name(load.status);
  if (load.plt_ms) text += ", PLT " + std::to_string(std::lround(*load.plt_ms)) + " ms";
  if (!load.reason.empty()) text += " (" + load.reason.substr(0, 200) + ")";
  return text;
}
}  // namespace

std::string tail_lines(const fs::path& path, size_t count) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line.substr(0, 300));
    if (lines.size() > count) lines.pop_front();
  }
  std::string text;
  for (const std::string& line : lines) text += "  | " + line + "\n";
  return text;
}

std::vector<LoadTask> pending_loads(const ResultStore& store, const std::vector<Configuration>& configs) {
  std::vector<LoadTask> tasks;
  for (bool baseline : {true, false}) {
    for (const Configuration& c : configs) {
      if (c.emulated == baseline) continue;
      for (int run = 1; run <= store.runs_of(c); run++)
        if (!store.has_load(c.id(), run)) tasks.push_back({c, run});
    }
  }
  return tasks;
}

TaskRun run_loads(const ResultStore& store, const SweepSettings& settings, const SweepPrograms& programs,
                  const std::vector<LoadTask>& tasks, int jobs, std::ostream& progress) {
  const FileDescriptor null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  std::vector<HostFacts> hosts(tasks.size());  // each load's, at its start
  TaskHooks hooks;
  hooks.launch = [&](size_t i) {
    const LoadTask& task = tasks[i];
    hosts[i] = host_facts();
    const std::string id = task.config.id();
    store.prepare(id);
    const fs::path pending = store.pending_file(id, task.run);
    std::error_code ignored;
    fs::remove(pending, ignored);  // from a load that was stopped
    const std::vector<std::string> argv = load_command(settings, task.config, programs, pending.string());
    const fs::path log = store.log_file(id, task.run);
    const FileDescriptor log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!log_fd.valid()) throw UserError("cannot create " + log.string() + ": " + std::strerror(errno));
    write_all(log_fd.get(), "# " + command_text(argv) + "\n");
    SpawnOptions options;
    options.stdin_fd = null_fd.get();
    options.stdout_fd = log_fd.get();
    options.stderr_fd = log_fd.get();
    options.close_other_fds = true;
    options.new_process_group = true;  // so that stopping it reaches every process it started
    options.default_signals = true;
    return spawn_program(argv.front(), std::vector<std::string>(argv.begin() + 1, argv.end()), options);
  };
  hooks.finish = [&](size_t i, int exit_code) {
    const LoadTask& task = tasks[i];
    const std::string id = task.config.id();
    const fs::path pending = store.pending_file(id, task.run);
    std::error_code ignored;
    LoadResult load;
    try {
      load = read_single_load(pending);
    } catch (const UserError& e) {
      fs::remove(pending, ignored);
      const std::vector<std::string> argv = load_command(settings, task.config, programs, pending.string());
      throw UserError("the load of " + id + " run " + std::to_string(task.run) + " gave no result (exit status " +
                      std::to_string(exit_code) + "; " + e.what() + "). Its command:\n  " + command_text(argv) +
                      "\nThe end of its log, " + store.log_file(id, task.run).string() + ":\n" +
                      tail_lines(store.log_file(id, task.run), 15) +
                      "Fix the cause and run the same mm-sweep command again: finished loads are kept.\n");
    }
    load.host = hosts[i];
    store.store_load(id, task.run, load);
    fs::remove(pending, ignored);
    return id + " run " + std::to_string(task.run) + ": " + load_outcome(load);
  };
  hooks.discard = [&](size_t i) {
    std::error_code ignored;
    fs::remove(store.pending_file(tasks[i].config.id(), tasks[i].run), ignored);
  };
  hooks.hung_message = [&](size_t i) {
    return "the load of " + tasks[i].config.id() + " run " + std::to_string(tasks[i].run) + " ran " +
           number_text(settings.timeout_s + kHungLoadSeconds) + " s, " + number_text(kHungLoadSeconds) +
           " s beyond --timeout: its shells are stopped (see " +
           store.log_file(tasks[i].config.id(), tasks[i].run).string() + ")";
  };
  return run_tasks(tasks.size(), jobs, seconds_to_nanos(settings.timeout_s + kHungLoadSeconds), hooks, "load",
                   progress);
}
