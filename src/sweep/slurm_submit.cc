// SPDX-License-Identifier: GPL-3.0-or-later
// A sweep submitted to Slurm (see slurm_submit.hh).
#include "sweep/slurm_submit.hh"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sweep/sweep_store.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
// sbatch --parsable prints "ID" or "ID;CLUSTER": the id, or "" when the output is not that.
std::string parsed_job_id(const std::string& output) {
  std::string line = output.substr(0, output.find('\n'));
  line = line.substr(0, line.find(';'));
  if (line.empty() || line.size() > 20 || !std::all_of(line.begin(), line.end(), ::isdigit)) return "";
  return line;
}

std::string sbatch_failure(const std::string& what, const ProgramOutput& out) {
  return "sbatch refused " + what + " (" + how_it_ended(out.exit_code) +
         "): " + printable(std::string(trim_blanks(out.text)), 600) +
         "\nFix what it names (a partition, a time limit: --sbatch OPTION passes them on) and run the same "
         "command again: what the sweep stored is kept.";
}
}  // namespace

void check_sbatch_option(const std::string& option) {
  if (option.size() < 2 || option[0] != '-' || option.size() > kMaxSbatchOptionLength ||
      std::any_of(option.begin(), option.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    throw UsageError("--sbatch \"" + printable(option, 60) + "\": give one sbatch option, as one word (e.g. " +
                     "--sbatch=--partition=short), of at most " + std::to_string(kMaxSbatchOptionLength) +
                     " characters");
  const std::string name = option.substr(0, option.find('='));
  for (const char* own : {"-a", "--array", "-d", "--dependency", "--parsable", "--wrap", "-W", "--wait"})
    if (name == own || (std::string_view(own).size() == 2 && option.rfind(own, 0) == 0))
      throw UsageError("--sbatch " + printable(option, 60) + ": mm-sweep --submit sets the array, the merge job's " +
                       "dependency and the scripts itself; leave " + own + " out");
}

std::string array_range(int tasks, int task_limit) {
  return "1-" + std::to_string(tasks) + (task_limit > 0 ? "%" + std::to_string(task_limit) : "");
}

int array_tasks(size_t lines, int wanted) {
  const size_t cap = std::min<size_t>(lines, kMaxArrayTasks);
  if (wanted <= 0) return static_cast<int>(std::max<size_t>(cap, 1));
  return static_cast<int>(std::clamp<size_t>(static_cast<size_t>(wanted), 1, std::max<size_t>(cap, 1)));
}

std::string slurm_task_script(const fs::path& jobs_file, int tasks) {
  return "#!/bin/sh\n"
         "# mm-sweep --submit slurm: task T of the array runs lines T, T+" +
         std::to_string(tasks) +
         ", ... of jobs.txt, one configuration each.\n"
         "# Each continues what its configuration stored already: a requeued task redoes nothing.\n"
         "jobs=" +
         shell_quote(jobs_file.string()) + "\ntasks=" + std::to_string(tasks) +
         "\n"
         "line=${SLURM_ARRAY_TASK_ID:?run by sbatch --array, as mm-sweep --submit slurm does}\n"
         "lines=$(wc -l < \"$jobs\") || exit 1\n"
         "status=0\n"
         "while [ \"$line\" -le \"$lines\" ]; do\n"
         "  sh -c \"$(sed -n \"${line}p\" \"$jobs\")\" < /dev/null || status=1\n"
         "  line=$((line + tasks))\n"
         "done\n"
         "exit $status\n";
}

std::string slurm_merge_script(const std::string& program, const fs::path& results) {
  const std::string out = shell_quote(results.string());
  return "#!/bin/sh\n"
         "# mm-sweep --submit slurm: after the array (whatever its tasks' ends), its parts into the\n"
         "# sweep's results, then the CSV files and plots; a configuration never finished shows as missing.\n"
         "set -- " +
         out + "/parts/*\n[ -e \"$1\" ] || set --\nexec " + shell_quote(program) + " --merge " + out + " " + out +
         " \"$@\"\n";
}

SubmittedSweep submit_to_slurm(const SlurmSubmission& s) {
  const std::optional<std::string> sbatch = find_program("sbatch");
  if (!sbatch)
    throw UserError(
        "--submit slurm: sbatch is not on PATH; run mm-sweep where Slurm's commands are (Debian's "
        "slurm-client), or write the jobs with --emit-jobs and submit them yourself");
  if (s.lines.empty()) throw UserError("--submit slurm: the sweep has no configuration to run");
  if (s.results.string().find('%') != std::string::npos)
    throw UserError("--out " + s.results.string() +
                    ": a '%' would be taken for one of Slurm's file name patterns; "
                    "choose a results directory without one");
  const fs::path dir = s.results / "slurm";
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw UserError("cannot create " + dir.string() + ": " + error.message() + " (check --out)");
  SubmittedSweep submitted;
  submitted.tasks = array_tasks(s.lines.size(), s.tasks);
  std::string jobs;
  for (const std::string& line : s.lines) jobs += line + "\n";
  write_file_atomically(dir / "jobs.txt", jobs);
  write_file_atomically(dir / "task.sh", slurm_task_script(dir / "jobs.txt", submitted.tasks));
  write_file_atomically(dir / "merge.sh", slurm_merge_script(s.program, s.results));

  std::vector<std::string> array = {"--parsable",
                                    "--array=" + array_range(submitted.tasks, s.task_limit),
                                    "--requeue",
                                    "--job-name=mm-sweep",
                                    "--cpus-per-task=" + std::to_string(s.cpus_per_task),
                                    "--output=" + (dir / "task-%A_%a.out").string()};
  array.insert(array.end(), s.options.begin(), s.options.end());
  array.push_back((dir / "task.sh").string());
  const ProgramOutput array_out = run_for_output(*sbatch, array);
  submitted.array_job = parsed_job_id(array_out.text);
  if (array_out.exit_code != 0 || submitted.array_job.empty())
    throw UserError(sbatch_failure("the sweep's job array", array_out));

  std::vector<std::string> merge = {"--parsable", "--dependency=afterany:" + submitted.array_job,
                                    "--kill-on-invalid-dep=yes", "--job-name=mm-sweep-merge",
                                    "--output=" + (dir / "merge-%j.out").string()};
  merge.insert(merge.end(), s.options.begin(), s.options.end());
  merge.push_back((dir / "merge.sh").string());
  const ProgramOutput merge_out = run_for_output(*sbatch, merge);
  submitted.merge_job = parsed_job_id(merge_out.text);
  if (merge_out.exit_code != 0 || submitted.merge_job.empty()) {
    if (const std::optional<std::string> scancel = find_program("scancel"))
      (void)run_for_output(*scancel, {submitted.array_job});
    throw UserError(sbatch_failure("the merge job (the array " + submitted.array_job + " is cancelled)", merge_out));
  }
  const nlohmann::json record = {{"array_job", submitted.array_job},
                                 {"merge_job", submitted.merge_job},
                                 {"tasks", submitted.tasks},
                                 {"configurations", s.lines.size()}};
  write_file_atomically(dir / "submitted.json", record.dump(2) + "\n");
  return submitted;
}
