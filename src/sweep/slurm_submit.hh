// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-sweep --submit slurm: a sweep as a Slurm job array and a merge job that runs after it.
// The array's tasks run --emit-jobs's lines (one configuration each: mm-sweep --only ID --out
// RESULTS/parts/ID), task T of N the lines T, T+N, T+2N... (deterministic shards; N below the
// number of lines packs short configurations into fewer tasks). Each line continues what its
// configuration stored already, so a task that Slurm requeues (its node failed) or that is run
// again rewrites its own part only. The merge job waits for the array whatever its tasks' ends
// (afterany): RESULTS holds the whole sweep's manifest, so a configuration whose task never
// finished is in the summary, as missing, not a silent hole. Files, in RESULTS/slurm/: jobs.txt,
// task.sh, merge.sh, submitted.json (the job ids), and the jobs' output (task-ARRAY_T.out,
// merge-ID.out).
#include <filesystem>
#include <string>
#include <vector>

inline constexpr int kMaxArrayTasks = 1000;  // Slurm's default MaxArraySize is 1001
inline constexpr size_t kMaxSbatchOptions = 32, kMaxSbatchOptionLength = 200;

struct SlurmSubmission {
  std::filesystem::path results;     // absolute; holds the sweep's manifest already
  std::vector<std::string> lines;    // --emit-jobs's, one per configuration
  std::string program;               // the mm-sweep that the merge job runs
  std::vector<std::string> options;  // the user's sbatch options (check_sbatch_option), after ours
  int tasks = 0;                     // array tasks; 0: one per line, at most kMaxArrayTasks
  int task_limit = 0;                // at most this many running at once (0: as Slurm schedules them)
  int cpus_per_task = 2;
};

struct SubmittedSweep {
  std::string array_job, merge_job;
  int tasks = 0;
};

// UsageError unless `option` is one sbatch option word for both jobs ("--partition=short",
// "--time=2:00:00"): it starts with '-', has no control character, is at most
// kMaxSbatchOptionLength long and is none of those mm-sweep sets itself (the array, the
// dependency, the script).
void check_sbatch_option(const std::string& option);

// sbatch's --array value: "1-TASKS", or "1-TASKS%LIMIT" (the array's throttle).
std::string array_range(int tasks, int task_limit);

// The array's size for `lines` lines and `wanted` tasks (0: as many as lines), at most
// kMaxArrayTasks.
int array_tasks(size_t lines, int wanted);

// The scripts' texts.
std::string slurm_task_script(const std::filesystem::path& jobs_file, int tasks);
std::string slurm_merge_script(const std::string& program, const std::filesystem::path& results);

// Writes RESULTS/slurm/'s files and submits both jobs with `sbatch` (found on PATH). UserError
// naming the problem and the fix when sbatch is missing or refuses (the array is cancelled with
// scancel when the merge job cannot be submitted).
SubmittedSweep submit_to_slurm(const SlurmSubmission& submission);
