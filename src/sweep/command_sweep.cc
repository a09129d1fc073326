// SPDX-License-Identifier: GPL-3.0-or-later
// A command sweep's runs and report (see command_sweep.hh).
#include "sweep/command_sweep.hh"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "sweep/command_report.hh"
#include "sweep/command_results.hh"
#include "sweep/command_run.hh"
#include "sweep/sweep_runner.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
constexpr const char* kInPrivateShell = "MM_SWEEP_IN_PRIVATE_SHELL";

struct RunTask {
  CommandConfiguration config;
  int run;
};
}  // namespace

bool needs_private_shell(const CommandSweepSettings& settings) {
  return !settings.server.empty() && !std::getenv("MAHIMAHI_BASE") && !std::getenv(kInPrivateShell);
}

void run_in_private_shell(const CommandPrograms& programs, int argc, char** argv) {
  std::vector<std::string> words = {"0", "--", own_executable().value_or(argv[0])};
  for (int i = 1; i < argc; i++) words.emplace_back(argv[i]);
  std::vector<char*> pointers = {const_cast<char*>(programs.delay.c_str())};
  for (std::string& word : words) pointers.push_back(word.data());
  pointers.push_back(nullptr);
  ::setenv(kInPrivateShell, "1", 1);
  ::execv(programs.delay.c_str(), pointers.data());
  throw SystemError("running " + programs.delay + " (the sweep's own shell)");
}

int run_command_sweep(const CommandSweepRequest& request, std::ostream& progress) {
  const CommandSweepSettings& s = request.settings;
  const std::vector<CommandConfiguration> all = command_configurations(s);
  std::vector<CommandConfiguration> chosen = all;
  if (request.only) {
    const auto found = std::find_if(all.begin(), all.end(), [&](const auto& c) { return c.id() == *request.only; });
    if (found == all.end())
      throw UsageError("--only " + printable(*request.only, 100) + " is not a configuration of this sweep (e.g. " +
                       all.back().id() + "; --emit-jobs - lists them)");
    chosen = {*found};
  }
  const CommandResults results = CommandResults::open_for_sweep(request.out, command_manifest(s));
  std::vector<RunTask> tasks;
  for (const CommandConfiguration& c : chosen)
    for (int run = 1; run <= s.runs; run++)
      if (!results.has_run(c.id(), run)) tasks.push_back({c, run});
  progress << "mm-sweep: " << count_of(chosen.size(), "configuration") << " x " << count_of(s.runs, "run") << "; "
           << count_of(chosen.size() * static_cast<size_t>(s.runs) - tasks.size(), "run") << " already done, "
           << count_of(tasks.size(), "run") << " to do, " << request.jobs << " at a time\n"
           << std::flush;

  TaskHooks hooks;
  hooks.launch = [&](size_t i) {
    const RunTask& task = tasks[i];
    const std::string id = task.config.id();
    results.prepare(id);
    const CommandRunFiles files{results.result_file(id, task.run), results.log_file(id, task.run),
                                results.server_log_file(id, task.run), results.link_log_file(id, task.run, "uplink"),
                                results.link_log_file(id, task.run, "downlink")};
    const uint16_t port = free_port();
    const pid_t pid = fork_child("mm-sweep", [&] {
      ::setpgid(0, 0);
      return run_command_once(
          CommandRun{s, task.config, task.run, request.programs, files, port, request.keep_link_logs});
    });
    ::setpgid(pid, pid);  // both sides: the group exists before the runner may signal it
    return pid;
  };
  hooks.finish = [&](size_t i, int exit_code) {
    const RunTask& task = tasks[i];
    const std::string id = task.config.id();
    if (!results.has_run(id, task.run)) {
      throw UserError("run " + std::to_string(task.run) + " of " + id + " gave no result (exit status " +
                      std::to_string(exit_code) + "): its shells did not run the link. The end of its log, " +
                      results.log_file(id, task.run).string() + ":\n" + tail_lines(results.log_file(id, task.run), 15) +
                      "Fix the cause and run the same mm-sweep command again: finished runs are kept.\n");
    }
    return id + " run " + std::to_string(task.run) + ": " + command_run_outcome(results.read_run(id, task.run));
  };
  hooks.discard = [&](size_t i) {
    std::error_code ignored;
    for (const char* direction : {"uplink", "downlink"})
      fs::remove(results.link_log_file(tasks[i].config.id(), tasks[i].run, direction), ignored);
  };
  hooks.hung_message = [&](size_t i) {
    return "run " + std::to_string(tasks[i].run) + " of " + tasks[i].config.id() + " ran " +
           number_text(s.timeout_s + kHungRunSeconds) + " s, " + number_text(kHungRunSeconds) +
           " s beyond --timeout: it is stopped (see " + results.log_file(tasks[i].config.id(), tasks[i].run).string() +
           ")";
  };
  const TaskRun run =
      run_tasks(tasks.size(), request.jobs, seconds_to_nanos(s.timeout_s + kHungRunSeconds), hooks, "run", progress);
  if (run.outcome == TaskRun::Outcome::Interrupted) {
    progress << "mm-sweep: stopped; " << count_of(run.stored, "run") << " stored in this sweep. Continue with the "
             << "same command.\n";
    return 128 + run.signal;
  }
  if (run.outcome == TaskRun::Outcome::Failed) return 1;
  if (request.only) {
    progress << "mm-sweep: " << *request.only << " done in " << results.dir().string()
             << "; mm-sweep --merge OUT DIR... combines the parts and writes the CSVs and plots\n";
    return 0;
  }
  const std::vector<CommandSummaryRow> rows = write_command_report(results);
  size_t ok = 0, stored = 0;
  for (const CommandSummaryRow& row : rows) {
    ok += static_cast<size_t>(row.ok);
    stored += static_cast<size_t>(row.stored);
  }
  progress << "mm-sweep: " << count_of(stored, "run") << " stored, " << ok << " ok; wrote "
           << (results.dir() / "runs.csv").string() << ", summary.csv and plots/\n";
  return 0;
}
