// SPDX-License-Identifier: GPL-3.0-or-later
// mm-sweep --submit slurm's pieces that run without a cluster: the sbatch options a user may pass,
// the array's size, and the task and merge scripts, run by sh as Slurm runs them.
#include <fstream>

#include "expect.hh"
#include "sweep/slurm_submit.hh"
#include "temp_files.hh"
#include "util/child_process.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;

namespace {
std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// Runs `script` by sh as task `task` of the array; its exit code.
int run_task(const fs::path& script, int task) {
  return run_for_output("/usr/bin/env", {"SLURM_ARRAY_TASK_ID=" + std::to_string(task), "sh", script.string()})
      .exit_code;
}
}  // namespace

TEST(SlurmSubmit, sbatch_options_are_single_words_and_not_the_ones_mm_sweep_sets) {
  for (const char* ok : {"--partition=short", "-pshort", "--time=2:00:00", "--account=lab", "--mem=4G", "--exclusive"})
    EXPECT_NO_THROW(check_sbatch_option(ok)) << ok;
  EXPECT_THROW_WITH(UsageError, check_sbatch_option("partition=short"), "one sbatch option");
  EXPECT_THROW_WITH(UsageError, check_sbatch_option("-"), "one sbatch option");
  EXPECT_THROW_WITH(UsageError, check_sbatch_option("--comment=a\nb"), "one sbatch option");
  EXPECT_THROW_WITH(UsageError, check_sbatch_option("--x=" + std::string(300, 'a')), "at most 200");
  for (const char* own :
       {"--array=1-5", "-a1-5", "--dependency=afterok:1", "-dafter:1", "--wrap=true", "--parsable", "--wait", "-W"})
    EXPECT_THROW_WITH(UsageError, check_sbatch_option(own), "sets the array");
}

TEST(SlurmSubmit, the_array_has_a_task_per_line_unless_asked_for_fewer_and_at_most_1000) {
  EXPECT_EQ(array_tasks(12, 0), 12);
  EXPECT_EQ(array_tasks(12, 5), 5);
  EXPECT_EQ(array_tasks(12, 40), 12);  // never an idle task
  EXPECT_EQ(array_tasks(5000, 0), kMaxArrayTasks);
  EXPECT_EQ(array_tasks(1, 0), 1);
  EXPECT_EQ(array_range(12, 0), "1-12");
  EXPECT_EQ(array_range(12, 2), "1-12%2");
}

TEST(SlurmSubmit, task_t_of_n_runs_lines_t_t_plus_n_and_fails_when_one_of_them_does) {
  TempDir dir;
  const fs::path log = dir.path / "ran", jobs = dir.path / "it's jobs.txt";
  std::string lines;
  for (int i = 1; i <= 7; i++)
    lines += (i == 6 ? "echo 6 >> '" + log.string() + "'; exit 3"
                     : "echo " + std::to_string(i) + " >> '" + log.string() + "'") +
             "\n";
  write_text(jobs, lines);
  const fs::path script = dir.path / "task.sh";
  write_text(script, slurm_task_script(jobs, 3));
  EXPECT_EQ(run_task(script, 1), 0);  // lines 1, 4, 7
  EXPECT_EQ(read_text(log), "1\n4\n7\n");
  EXPECT_EQ(run_task(script, 3), 1);  // lines 3, 6 (which fails): the task says so
  EXPECT_EQ(read_text(log), "1\n4\n7\n3\n6\n");
  EXPECT_EQ(run_task(script, 2), 0);
  EXPECT_EQ(read_text(log), "1\n4\n7\n3\n6\n2\n5\n");
  // Outside an array it refuses, naming why.
  const ProgramOutput alone = run_for_output("/bin/sh", {script.string()});
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.text.find("sbatch --array"), std::string::npos) << alone.text;
}

TEST(SlurmSubmit, the_merge_script_merges_every_part_or_the_results_alone) {
  TempDir dir;
  const fs::path results = dir.path / "res ults", program = dir.path / "fake merge";
  fs::create_directories(results);
  // A program that prints its arguments, one per line, in place of mm-sweep.
  write_text(program, "#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\n");
  fs::permissions(program, fs::perms::owner_all);
  const fs::path script = dir.path / "merge.sh";
  write_text(script, slurm_merge_script(program.string(), results));
  const std::string r = results.string();
  EXPECT_EQ(run_for_output("/bin/sh", {script.string()}).text, "[--merge]\n[" + r + "]\n[" + r + "]\n");
  fs::create_directories(results / "parts" / "b");
  fs::create_directories(results / "parts" / "a");
  EXPECT_EQ(run_for_output("/bin/sh", {script.string()}).text,
            "[--merge]\n[" + r + "]\n[" + r + "]\n[" + r + "/parts/a]\n[" + r + "/parts/b]\n");
}

TEST(SlurmSubmit, run_for_output_keeps_the_first_bytes_and_the_exit_code) {
  const ProgramOutput out =
      run_for_output("/bin/sh", {"-c", "echo out; echo err >&2; head -c 100000 /dev/zero; exit 4"}, 10);
  EXPECT_EQ(out.exit_code, 4);
  EXPECT_EQ(out.text, std::string("out\nerr\n\0\0", 10));
}
