// SPDX-License-Identifier: GPL-3.0-or-later
// mm-sweep --recording DIR [OPTION]... --out RESULTS: page loads of a recording over a grid of
// link rates, round-trip times and loss rates; mm-sweep --merge OUT DIR...: combines results.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "http/start_line.hh"
#include "packet/presets.hh"
#include "recording/record_file.hh"
#include "shell/command_lookup.hh"
#include "sweep/command_report.hh"
#include "sweep/command_results.hh"
#include "sweep/command_sweep.hh"
#include "sweep/slurm_submit.hh"
#include "sweep/sweep_grid.hh"
#include "sweep/sweep_report.hh"
#include "sweep/sweep_runner.hh"
#include "sweep/sweep_store.hh"
#include "util/args.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/text.hh"
#include "util/utf8.hh"

namespace fs = std::filesystem;

namespace {
const ProgramInfo kInfo{
    "mm-sweep",
    "--recording DIR [OPTION]... --out RESULTS\n       mm-sweep --command CMD | --scheme NAME=CMD... [OPTION]... --out "
    "RESULTS\n       mm-sweep --merge OUT DIR...",
    "Loads the page of a recording in mm-pageload (headless Chromium) once per run in every\n"
    "configuration of a grid of link rates, round-trip times and loss rates, each load in a fresh\n"
    "stack of shells:\n"
    "  mm-replay DIR [--single-server] [--http2|--http3] --ignore-user-agent mm-delay RTT/2\n"
    "    [mm-loss uplink P downlink P] mm-link rate:RMbit/s rate:RMbit/s [queue] --\n"
    "    mm-pageload --runs 1 --timeout S --json FILE URL\n"
    "plus the page in mm-replay alone (the 'unemulated' baseline: the browser time and site size\n"
    "of the optimal page-load time). Writes RESULTS/loads.csv (a row per load), RESULTS/summary.csv\n"
    "(per configuration: loads ok, median/p75/p95 PLT, median speed index, optimal PLT and the\n"
    "ratios to optimal) and RESULTS/plots/*.png and *.svg. Resumable: run the same command again\n"
    "after an interruption and only the missing loads run.\n"
    "\n"
    "With --command or --scheme, runs a command instead (a congestion control's sender, a\n"
    "transfer, any program) in every configuration of a grid of links, RTTs, presets, loss rates,\n"
    "queues and congestion controls, each run in a fresh stack of shells:\n"
    "  mm-delay RTT/2 [mm-loss uplink P downlink P] mm-link UP DOWN [queue] [congestion control]\n"
    "    -- CMD (run by sh, with the link logging both directions)\n"
    "with --server's command started first for each run outside the shells (in mm-sweep's own\n"
    "namespace, reached from inside at $MAHIMAHI_BASE; a shell of mm-sweep's own, mm-delay 0,\n"
    "which other users cannot connect into). Both get MM_SWEEP_PORT (a free port for\n"
    "the run), MM_SWEEP_SCHEME, MM_SWEEP_CC, MM_SWEEP_RUN and MM_SWEEP_CONFIGURATION. Each run's\n"
    "figures come from the link's logs: throughput, mean and 95th-percentile one-way delay (queue\n"
    "plus RTT/2), loss and ECN marks, throughput over time. Writes RESULTS/runs.csv, summary.csv\n"
    "and plots/ (throughput against p95 delay per path, Pantheon's figure; throughput over time).\n"
    "\n"
    "Options of page-load sweeps:\n"
    "  --recording DIR     the recording (mm-record's directory); required\n"
    "  --url URL           the page to load (default: the recording's main page, the first\n"
    "                      request, in recorded order, answered 2xx with text/html)\n"
    "  --rates LIST        link rates in Mbit/s, both directions (default 1,14,25)\n"
    "  --rtts LIST         minimum round-trip times in ms (default 30,120,300)\n"
    "  --loss LIST         loss rates, 0 to 0.99, each direction (default 0)\n"
    "  --queue TYPE[:ARGS] mm-link's queue, both directions (e.g. droptail:packets=100)\n"
    "  --tcp-ecn MODE      mm-replay --tcp-ecn MODE (on, accept or off): TCP's ECN in the\n"
    "                      replay and every shell inside, for the queues' ECN marking\n"
    "  --http2             mm-replay --http2 (h2 on every HTTPS server); loads hint --http2\n"
    "  --protocols LIST    every configuration once per protocol, of h1 (mm-pageload\n"
    "                      --no-http2), h2 (as --http2), h3 (mm-replay --http3, mm-pageload\n"
    "                      --http3: QUIC to every https origin) and cumulus (mm-cumulus-remote\n"
    "                      beside the replay's servers, the browser in mm-cumulus-local inside\n"
    "                      the link; its optimal is h1's), e.g. h1,h2,h3,cumulus (default h1)\n"
    "  --cumulus           add cumulus to the protocols (--protocols, else h1); RESULTS/cumulus.csv\n"
    "                      then gives each Cumulus load's bulk response and the Remote Proxy's\n"
    "                      load time and CPU time\n"
    "  --single-server     mm-replay --single-server\n"
    "  --match-user-agent  do not pass mm-replay --ignore-user-agent\n"
    "\n"
    "Options of command sweeps:\n"
    "  --command CMD       the command run inside the shells (sh -c), as the scheme \"command\"\n"
    "  --scheme NAME=CMD   a scheme, named (a-z, 0-9, ., _, -), its command; repeat for more\n"
    "  --server CMD        started (sh -c) for each run before the command, in this namespace;\n"
    "                      the run starts once something listens on $MM_SWEEP_PORT (TCP) or is\n"
    "                      bound to it (UDP), at most 10 s; ended (SIGTERM) after the command\n"
    "  --link [NAME=]UP[,DOWN]  a link: mm-link's UP and DOWN (trace files or rate:R; DOWN\n"
    "                      defaults to UP), named after the up trace; repeat for more\n"
    "  --rates LIST        links of these rates in Mbit/s, both ways\n"
    "  --presets LIST      mm-preset's profiles (e.g. wpt:3g,lighthouse:slow4g): each a link\n"
    "                      and an RTT of its own\n"
    "  --rtts LIST         RTTs in ms for --link and --rates's links (default 0)\n"
    "  --queue TYPE[:ARGS] repeat for a list of queues (default mm-link's, infinite)\n"
    "  --cc LIST           congestion controls of the command's namespace (mm-link\n"
    "                      --tcp-congestion-control), e.g. reno,bbr (default: the system's)\n"
    "  --keep-link-logs    keep each run's link logs (RESULTS/runs/ID/run-N.uplink.log, ...)\n"
    "  --runs, --timeout (default 120 s per run), --loss, --tcp-ecn, --jobs (default 1), --out,\n"
    "  --only, --emit-jobs, --job-program, --submit, --sbatch, --tasks,\n"
    "  --task-limit: as for page loads\n"
    "\n"
    "Options of both:\n"
    "  --runs N            loads per configuration (default 3; 1 to 10000)\n"
    "  --baseline-runs N   loads of the unemulated baseline (default: as --runs; 0 to 10000;\n"
    "                      0 leaves out the baseline, and with it the optimal and the ratios)\n"
    "  --timeout S         per load, in seconds (default 60; up to 3600)\n"
    "  --jobs J            loads at once (default: one per two CPUs, at least 1; up to 64)\n"
    "  --out RESULTS       the results directory (created; the same command continues it)\n"
    "  --emit-jobs FILE    write one mm-sweep command line per configuration to FILE (each\n"
    "                      --only ID --out RESULTS/parts/ID) instead of running the sweep;\n"
    "                      the lines run this mm-sweep, by its full path\n"
    "  --job-program PATH  the mm-sweep the emitted lines run instead (where the jobs' machines\n"
    "                      install mahimahi elsewhere)\n"
    "  --submit slurm      submit the sweep to Slurm instead of running it here: a job array\n"
    "                      running --emit-jobs's lines (RESULTS/slurm/) and a job merging\n"
    "                      their parts into RESULTS after it, whatever their ends\n"
    "  --sbatch OPTION     an option of sbatch for both jobs, as one word (a partition, a\n"
    "                      time limit, an account); repeat for more\n"
    "  --tasks N           the array's tasks (default: one per configuration, up to 1000);\n"
    "                      fewer packs configurations into each task\n"
    "  --task-limit N      at most N of the array's tasks running at once\n"
    "  --only ID           run only configuration ID (as --emit-jobs writes it); no CSV or plots\n"
    "  --merge OUT DIR...  combine results directories into OUT, then write its CSVs and plots\n"
    "  --help, --version\n"
    "\n"
    "Exit status: 0 when every load of the sweep is stored (whatever each load's status), 1 when\n"
    "the harness failed (a load gave no result), 2 for a usage error, 128+N when signal N\n"
    "interrupted it.\n"};

struct Options {
  std::optional<std::string> recording, url, out, emit_jobs, job_program, only, rates, rtts, loss, tcp_ecn, runs,
      baseline_runs, timeout, jobs, protocols, server, presets, cc, submit, tasks, task_limit;
  std::vector<std::string> queues, schemes, links, sbatch;
  bool http2 = false, cumulus = false, single_server = false, match_user_agent = false, merge = false,
       keep_link_logs = false;
  std::vector<std::string> operands;
};

// The page a recording was made for: the first request, in the order the requests started
// (mm-recording ls's order), whose response is 2xx with a text/html Content-Type.
std::string main_page_url(const fs::path& dir) {
  std::vector<RecordingEntry> entries = load_recording(dir).entries;
  std::stable_sort(entries.begin(), entries.end(), [](const RecordingEntry& a, const RecordingEntry& b) {
    return a.pair.request_start_us < b.pair.request_start_us;
  });
  for (const RecordingEntry& entry : entries) {
    const RecordedPair& pair = entry.pair;
    const auto status = three_digit_status(split_status_line(pair.response.first_line).code);
    const auto type = pair.response.header("Content-Type");
    if (!status || *status < 200 || *status > 299 || !type ||
        !starts_with_ignoring_case(trim_blanks(*type), "text/html"))
      continue;
    const std::string target(split_request_line(pair.request.first_line).target);
    if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) return target;
    const auto host = pair.request.header("Host");
    const std::string authority =
        host ? std::string(trim_blanks(*host)) : (pair.server_name.empty() ? pair.ip : pair.server_name);
    return std::string(pair.https ? "https" : "http") + "://" + authority + target;
  }
  throw UserError("the recording " + dir.string() +
                  " has no HTML page (a 2xx response with Content-Type text/html): give the page with --url");
}

// One load per two CPUs this process may use: a Chromium load keeps about two cores busy at its
// peak (browser, renderer and GPU processes), and loads that wait for a CPU report longer times.
int default_jobs() {
  cpu_set_t set;
  int cpus = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
  return std::max(1, cpus / 2);
}

// The programs a load runs: those next to this mm-sweep first (an installed prefix run by its
// path, from cron or a batch job with a minimal PATH, runs its own siblings), then PATH's.
SweepPrograms find_programs() {
  const char* path = std::getenv("PATH");
  SweepPrograms p;
  for (std::string* program :
       {&p.replay, &p.delay, &p.loss, &p.link, &p.pageload, &p.cumulus_remote, &p.cumulus_local}) {
    try {
      *program = resolve_program(*program, path);
    } catch (const StatusError& e) {
      const std::optional<std::string> self = own_executable();
      throw UserError(std::string(e.what()) + " (mm-sweep runs it from its own directory" +
                      (self ? ", " + fs::path(*self).parent_path().string() + "," : "") +
                      " or from PATH: install mahimahi, or add its bin directory to PATH)");
    }
  }
  return p;
}

constexpr size_t kMaxJobProgram = 4096;  // PATH_MAX

// The mm-sweep that --emit-jobs's lines run: --job-program, or this one by its full path (a
// cluster's nodes run the shared prefix's mm-sweep, whatever their jobs' PATH holds).
std::string job_program(const Options& o) {
  if (o.job_program) {
    const std::string& given = *o.job_program;
    if (given.empty() || given.size() > kMaxJobProgram || given.find_first_of("\r\n") != std::string::npos ||
        !is_valid_utf8(given))
      throw UsageError("--job-program \"" + printable(given, 200) + "\" is not a program's path (one line, up to " +
                       std::to_string(kMaxJobProgram) + " bytes)");
    return given;
  }
  if (const std::optional<std::string> self = own_executable()) return *self;
  return "mm-sweep";  // no /proc: the jobs find it in their PATH
}

// --tasks N, --task-limit N: 1 to kMaxArrayTasks; 0 when not given.
int tasks_of(const std::optional<std::string>& given, const char* name) {
  if (!given) return 0;
  const uint64_t tasks = parse_unsigned(*given, name);
  if (tasks < 1 || tasks > static_cast<uint64_t>(kMaxArrayTasks))
    throw UsageError(std::string(name) + " is from 1 to " + std::to_string(kMaxArrayTasks));
  return static_cast<int>(tasks);
}

// --job-program, --submit and what goes with it: checked before anything is read or made.
void check_job_options(const Options& o) {
  if (o.job_program && !o.emit_jobs && !o.submit)
    throw UsageError("--job-program names the mm-sweep of --emit-jobs's lines: give --emit-jobs or --submit too");
  if (!o.submit) {
    if (!o.sbatch.empty() || o.tasks || o.task_limit)
      throw UsageError(std::string(o.tasks        ? "--tasks"
                                   : o.task_limit ? "--task-limit"
                                                  : "--sbatch") +
                       " is for --submit slurm: give it too");
    return;
  }
  if (*o.submit != "slurm")
    throw UsageError("--submit " + printable(*o.submit, 40) +
                     ": the scheduler mm-sweep submits to is slurm "
                     "(for another, write the jobs with --emit-jobs)");
  for (const auto& [given, name] : std::vector<std::pair<bool, const char*>>{
           {o.emit_jobs.has_value(), "--emit-jobs"}, {o.only.has_value(), "--only"}, {o.jobs.has_value(), "--jobs"}})
    if (given)
      throw UsageError(std::string(name) +
                       " does not apply to --submit, which runs every configuration as its own "
                       "line, one run at a time (--tasks packs lines into fewer tasks)");
  if (o.sbatch.size() > kMaxSbatchOptions)
    throw UsageError("--sbatch: at most " + std::to_string(kMaxSbatchOptions) + " options");
  for (const std::string& option : o.sbatch) check_sbatch_option(option);
  (void)tasks_of(o.tasks, "--tasks");
  (void)tasks_of(o.task_limit, "--task-limit");
}

// --submit slurm: the sweep's lines as a Slurm job array and a merge job after it; RESULTS holds
// the whole sweep's manifest already (so the merge names what never finished).
int submit(const Options& o, const std::vector<std::string>& lines, const fs::path& out) {
  SlurmSubmission submission{
      out, lines, job_program(o), o.sbatch, tasks_of(o.tasks, "--tasks"), tasks_of(o.task_limit, "--task-limit")};
  const SubmittedSweep done = submit_to_slurm(submission);
  std::cerr << "mm-sweep: " << count_of(lines.size(), "configuration") << " submitted to Slurm as job array "
            << done.array_job << " (" << count_of(static_cast<size_t>(done.tasks), "task") << "), and job "
            << done.merge_job << " to merge them after it\n  squeue -j " << done.array_job << "," << done.merge_job
            << "  shows them; " << (out / "summary.csv").string() << " and plots/ are written when job "
            << done.merge_job << " ends (its output: " << (out / "slurm").string() << "/merge-" << done.merge_job
            << ".out). Submitting the same command again runs only what is missing.\n";
  return 0;
}

// The results directory of --submit, absolute: the jobs may start elsewhere.
fs::path absolute_out(const Options& o) { return fs::absolute(*o.out).lexically_normal(); }

void only_with_sweep(const Options& o) {
  for (const auto& [given, name] :
       std::vector<std::pair<bool, const char*>>{{o.recording.has_value(), "--recording"},
                                                 {o.url.has_value(), "--url"},
                                                 {o.out.has_value(), "--out"},
                                                 {o.emit_jobs.has_value(), "--emit-jobs"},
                                                 {o.submit.has_value(), "--submit"},
                                                 {!o.sbatch.empty(), "--sbatch"},
                                                 {o.tasks.has_value(), "--tasks"},
                                                 {o.task_limit.has_value(), "--task-limit"},
                                                 {o.job_program.has_value(), "--job-program"},
                                                 {o.only.has_value(), "--only"},
                                                 {o.rates.has_value(), "--rates"},
                                                 {o.rtts.has_value(), "--rtts"},
                                                 {o.loss.has_value(), "--loss"},
                                                 {!o.queues.empty(), "--queue"},
                                                 {!o.schemes.empty(), "--command or --scheme"},
                                                 {o.server.has_value(), "--server"},
                                                 {!o.links.empty(), "--link"},
                                                 {o.presets.has_value(), "--presets"},
                                                 {o.cc.has_value(), "--cc"},
                                                 {o.keep_link_logs, "--keep-link-logs"},
                                                 {o.tcp_ecn.has_value(), "--tcp-ecn"},
                                                 {o.runs.has_value(), "--runs"},
                                                 {o.baseline_runs.has_value(), "--baseline-runs"},
                                                 {o.timeout.has_value(), "--timeout"},
                                                 {o.jobs.has_value(), "--jobs"},
                                                 {o.http2, "--http2"},
                                                 {o.cumulus, "--cumulus"},
                                                 {o.protocols.has_value(), "--protocols"},
                                                 {o.single_server, "--single-server"},
                                                 {o.match_user_agent, "--match-user-agent"}}) {
    if (given) throw UsageError(std::string(name) + " does not apply to --merge, which takes OUT DIR... only");
  }
}

// ", 3 runs missing (see summary.csv)" when a merge lacks some of what its sweeps asked for.
std::string missing_text(size_t missing, const char* what) {
  return missing ? ", " + count_of(missing, what) + " missing (see summary.csv)" : "";
}

int merge(const Options& o) {
  only_with_sweep(o);
  if (o.operands.size() < 2) throw UsageError("--merge needs OUT and at least one results DIR to merge into it");
  std::vector<fs::path> inputs(o.operands.begin() + 1, o.operands.end());
  if (is_command_manifest(read_results_manifest(inputs.front()))) {
    const CommandResults results = merge_command_results(o.operands.front(), inputs);
    const std::vector<CommandSummaryRow> rows = write_command_report(results);
    size_t runs = 0, missing = 0;
    for (const CommandSummaryRow& row : rows) {
      runs += static_cast<size_t>(row.stored);
      missing += static_cast<size_t>(std::max(row.runs - row.stored, 0));
    }
    std::cerr << "mm-sweep: " << results.dir().string() << ": " << count_of(rows.size(), "configuration") << ", "
              << count_of(runs, "run") << missing_text(missing, "run") << "; wrote runs.csv, summary.csv and plots/\n";
    return 0;
  }
  const ResultStore store = merge_results(o.operands.front(), inputs);
  const std::vector<SummaryRow> rows = write_sweep_report(store);
  size_t loads = 0, missing = 0;
  for (const SummaryRow& row : rows) {
    loads += row.loads_total;
    missing += row.loads_asked - std::min(row.loads_asked, row.loads_total);
  }
  std::cerr << "mm-sweep: " << store.dir().string() << ": " << count_of(rows.size(), "configuration") << ", "
            << count_of(loads, "load") << missing_text(missing, "load")
            << "; wrote loads.csv, summary.csv and plots/\n";
  return 0;
}

int jobs_of(const Options& o, int default_value) {
  if (!o.jobs) return default_value;
  const uint64_t j = parse_unsigned(*o.jobs, "--jobs");
  if (j < 1 || j > 64) throw UsageError("--jobs is from 1 to 64");
  return static_cast<int>(j);
}

int runs_of(const Options& o) {
  if (!o.runs) return 3;
  const uint64_t runs = parse_unsigned(*o.runs, "--runs");
  if (runs < 1 || runs > static_cast<uint64_t>(kMaxRuns)) throw UsageError("--runs is from 1 to 10000");
  return static_cast<int>(runs);
}

std::string tcp_ecn_of(const Options& o) {
  if (!o.tcp_ecn) return "";
  if (*o.tcp_ecn != "on" && *o.tcp_ecn != "accept" && *o.tcp_ecn != "off")
    throw UsageError("--tcp-ecn must be on, accept or off (as the shells' --tcp-ecn), not \"" +
                     printable(*o.tcp_ecn, 40) + "\"");
  return *o.tcp_ecn;
}

// The sweep the options ask for, checked.
SweepSettings settings_of(const Options& o) {
  if (!o.operands.empty())
    throw UsageError("unexpected argument \"" + o.operands.front() + "\" (options only; see --help)");
  for (const auto& [given, name] : std::vector<std::pair<bool, const char*>>{{o.server.has_value(), "--server"},
                                                                             {!o.links.empty(), "--link"},
                                                                             {o.presets.has_value(), "--presets"},
                                                                             {o.cc.has_value(), "--cc"},
                                                                             {o.keep_link_logs, "--keep-link-logs"}})
    if (given) throw UsageError(std::string(name) + " is for command sweeps: give --command or --scheme too");
  if (!o.recording)
    throw UsageError(
        "--recording DIR is required: the recording to replay (made by mm-record); or --command CMD to "
        "sweep a command");
  check_job_options(o);
  if (!o.out) throw UsageError("--out RESULTS is required: the directory for the results");
  SweepSettings s;
  std::error_code error;
  if (!fs::is_directory(*o.recording, error))
    throw UserError("--recording " + *o.recording + " is not a directory: give a recording made by mm-record");
  s.recording = fs::absolute(*o.recording).lexically_normal().string();
  while (s.recording.size() > 1 && s.recording.back() == '/') s.recording.pop_back();
  s.rates_mbps = parse_number_list(o.rates.value_or("1,14,25"), "--rates", kMinRateMbps, kMaxRateMbps);
  s.rtts_ms = parse_number_list(o.rtts.value_or("30,120,300"), "--rtts", 0, kMaxRttMs);
  s.losses = parse_number_list(o.loss.value_or("0"), "--loss", 0, kMaxLoss);
  if (o.queues.size() > 1) throw UsageError("--queue is given once for page loads (a list is for command sweeps)");
  if (!o.queues.empty()) s.queue = parse_queue_spec(o.queues.front());
  s.tcp_ecn = tcp_ecn_of(o);
  if (o.http2 && o.protocols)
    throw UsageError("--http2 is --protocols h2: give one of them (--protocols h1,h2,h3 runs all three)");
  if (o.protocols) s.protocols = parse_protocol_list(*o.protocols);
  if (o.http2) s.protocols = {Protocol::kH2};
  if (o.cumulus) {
    if (std::find(s.protocols.begin(), s.protocols.end(), Protocol::kCumulus) != s.protocols.end())
      throw UsageError("--cumulus adds cumulus to --protocols, which lists it already: give one of them");
    s.protocols.push_back(Protocol::kCumulus);
  }
  s.single_server = o.single_server;
  s.match_user_agent = o.match_user_agent;
  s.runs = runs_of(o);
  if (o.baseline_runs) {
    const uint64_t runs = parse_unsigned(*o.baseline_runs, "--baseline-runs");
    if (runs > static_cast<uint64_t>(kMaxRuns)) throw UsageError("--baseline-runs is from 0 to 10000");
    s.baseline_runs = static_cast<int>(runs);
  }
  if (o.timeout) {
    s.timeout_s = parse_nonnegative(*o.timeout, "--timeout");
    if (s.timeout_s < 1 || s.timeout_s > kMaxTimeoutS) throw UsageError("--timeout is from 1 to 3600 seconds");
  }
  if (o.url) {
    if (o.url->empty() || o.url->size() > kMaxUrl || o.url->find_first_of(" \t\r\n") != std::string::npos ||
        (o.url->rfind("http://", 0) != 0 && o.url->rfind("https://", 0) != 0))
      throw UsageError("--url \"" + printable(*o.url, 200) + "\" is not an http:// or https:// URL");
    s.url = *o.url;
  } else {
    s.url = main_page_url(s.recording);
  }
  return s;
}

// A link's trace file: absolute, and readable now (rate:R is mm-link's own).
std::string trace_argument(const std::string& given) {
  if (given.rfind("rate:", 0) == 0) return given;
  std::error_code error;
  if (!fs::is_regular_file(given, error) || ::access(given.c_str(), R_OK) != 0)
    throw UserError("--link: " + given +
                    " is not a readable trace file (give a file of mm-link's trace format, or rate:R)");
  return fs::absolute(given).lexically_normal().string();
}

// The command sweep the options ask for, checked.
CommandSweepSettings command_settings_of(const Options& o) {
  if (!o.operands.empty())
    throw UsageError("unexpected argument \"" + o.operands.front() + "\" (options only; see --help)");
  for (const auto& [given, name] :
       std::vector<std::pair<bool, const char*>>{{o.recording.has_value(), "--recording"},
                                                 {o.url.has_value(), "--url"},
                                                 {o.http2, "--http2"},
                                                 {o.cumulus, "--cumulus"},
                                                 {o.protocols.has_value(), "--protocols"},
                                                 {o.single_server, "--single-server"},
                                                 {o.match_user_agent, "--match-user-agent"},
                                                 {o.baseline_runs.has_value(), "--baseline-runs"}})
    if (given) throw UsageError(std::string(name) + " is for page-load sweeps, not with --command or --scheme");
  if (!o.out) throw UsageError("--out RESULTS is required: the directory for the results");
  check_job_options(o);
  CommandSweepSettings s;
  for (const std::string& text : o.schemes) {
    s.schemes.push_back(parse_scheme(text, text.rfind("command=", 0) == 0 ? "--command" : "--scheme"));
    for (size_t i = 0; i + 1 < s.schemes.size(); i++)
      if (s.schemes[i].name == s.schemes.back().name)
        throw UsageError("two schemes are named " + s.schemes.back().name + " (--command is the scheme \"command\")");
  }
  if (s.schemes.size() > kMaxSchemes) throw UsageError("more than " + std::to_string(kMaxSchemes) + " schemes");
  if (o.server) {
    if (o.server->empty() || o.server->size() > kMaxCommandText)
      throw UsageError("--server needs a command (sh -c runs it), of up to " + std::to_string(kMaxCommandText) +
                       " bytes");
    s.server = *o.server;
  }
  for (const std::string& text : o.links) {
    CommandLink link = parse_link(text);
    link.up = trace_argument(link.up);
    link.down = trace_argument(link.down);
    s.links.push_back(std::move(link));
  }
  if (o.rates)
    for (double rate : parse_number_list(*o.rates, "--rates", kMinRateMbps, kMaxRateMbps))
      s.links.push_back(rate_link(rate));
  if (o.presets) {
    for (std::string_view rest = *o.presets; !rest.empty();) {
      const std::string name(rest.substr(0, rest.find(',')));
      rest = rest.find(',') == std::string_view::npos ? std::string_view() : rest.substr(rest.find(',') + 1);
      const std::optional<NetworkPreset> p = find_network_preset(name);
      if (!p) throw UsageError("--presets: no profile \"" + printable(name, 60) + "\" (mm-preset --list lists them)");
      s.preset_paths.push_back({p->name,
                                {label_text(p->name), "rate:" + number_text(p->up_bps / 1e6) + "Mbit/s",
                                 "rate:" + number_text(p->down_bps / 1e6) + "Mbit/s"},
                                p->rtt_ms});
    }
  }
  if (s.links.empty() && s.preset_paths.empty())
    throw UsageError("a command sweep needs links: --link UP[,DOWN], --rates LIST or --presets LIST");
  s.rtts_ms = parse_number_list(o.rtts.value_or("0"), "--rtts", 0, kMaxRttMs);
  s.losses = parse_number_list(o.loss.value_or("0"), "--loss", 0, kMaxLoss);
  for (const std::string& queue : o.queues) s.queues.push_back(queue == "infinite" ? "" : parse_queue_spec(queue));
  if (o.cc) s.ccs = parse_cc_list(*o.cc);
  s.tcp_ecn = tcp_ecn_of(o);
  s.runs = runs_of(o);
  if (o.timeout) {
    s.timeout_s = parse_nonnegative(*o.timeout, "--timeout");
    if (s.timeout_s < 1 || s.timeout_s > kMaxTimeoutS) throw UsageError("--timeout is from 1 to 3600 seconds");
  }
  command_configurations(s);  // the grid's own checks (its size, ids apart)
  return s;
}

CommandPrograms find_command_programs() {
  const SweepPrograms found = find_programs();
  return CommandPrograms{found.delay, found.loss, found.link};
}

// --emit-jobs FILE ("-": standard output): the lines, and how to merge what they make.
int emit_jobs(const Options& o, const std::vector<std::string>& lines) {
  if (o.only) throw UsageError("--emit-jobs writes every configuration's line: leave out --only");
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  if (*o.emit_jobs == "-") {
    std::cout << text << std::flush;
  } else {
    write_file_atomically(*o.emit_jobs, text);
  }
  std::cerr << "mm-sweep: " << count_of(lines.size(), "job") << "; merge their results with\n  mm-sweep --merge "
            << shell_quote(*o.out) << " " << shell_quote(*o.out) << "/parts/*\n";
  return 0;
}

int command_sweep(const Options& o, int argc, char** argv) {
  CommandSweepRequest request{command_settings_of(o), {}, *o.out, o.only, jobs_of(o, 1), o.keep_link_logs};
  if (o.emit_jobs) return emit_jobs(o, command_job_lines(job_program(o), request.settings, *o.out));
  if (o.submit) {
    CommandResults::open_for_sweep(absolute_out(o), command_manifest(request.settings));
    return submit(o, command_job_lines(job_program(o), request.settings, absolute_out(o)), absolute_out(o));
  }
  request.programs = find_command_programs();
  if (needs_private_shell(request.settings)) run_in_private_shell(request.programs, argc, argv);
  return run_command_sweep(request, std::cerr);
}

int sweep(const Options& o) {
  const SweepSettings s = settings_of(o);
  const int jobs = jobs_of(o, default_jobs());
  const std::vector<Configuration> all = sweep_configurations(s);

  if (o.emit_jobs) return emit_jobs(o, job_lines(job_program(o), s, *o.out));
  if (o.submit) {
    ResultStore::open_for_sweep(absolute_out(o), sweep_manifest(s));
    return submit(o, job_lines(job_program(o), s, absolute_out(o)), absolute_out(o));
  }

  std::vector<Configuration> chosen = all;
  if (o.only) {
    const auto found = std::find_if(all.begin(), all.end(), [&](const Configuration& c) { return c.id() == *o.only; });
    if (found == all.end())
      throw UsageError("--only " + printable(*o.only, 100) + " is not a configuration of this sweep (e.g. " +
                       all.back().id() + "; --emit-jobs - lists them)");
    chosen = {*found};
  }
  const SweepPrograms programs = find_programs();
  const ResultStore store = ResultStore::open_for_sweep(*o.out, sweep_manifest(s));
  const std::vector<LoadTask> tasks = pending_loads(store, chosen);
  size_t total = 0;
  for (const Configuration& c : chosen) total += static_cast<size_t>(store.runs_of(c));
  std::cerr << "mm-sweep: " << s.url << ": " << count_of(chosen.size(), "configuration") << " x "
            << count_of(static_cast<size_t>(s.runs), "run") << "; " << count_of(total - tasks.size(), "load")
            << " already done, " << count_of(tasks.size(), "load") << " to do, " << jobs << " at a time\n";
  const TaskRun run = run_loads(store, s, programs, tasks, jobs, std::cerr);
  if (run.outcome == TaskRun::Outcome::Interrupted) {
    std::cerr << "mm-sweep: stopped; " << count_of(run.stored, "load") << " stored in this run. Continue with the same "
              << "command.\n";
    return 128 + run.signal;
  }
  if (run.outcome == TaskRun::Outcome::Failed) return 1;
  if (o.only) {
    std::cerr << "mm-sweep: " << *o.only << " done in " << store.dir().string()
              << "; mm-sweep --merge OUT DIR... combines the parts and writes the CSVs and plots\n";
    return 0;
  }
  write_sweep_report(store);
  std::cerr << "mm-sweep: wrote " << (store.dir() / "loads.csv").string() << ", summary.csv and plots/\n";
  return 0;
}

int run(int argc, char** argv) {
  Options o;
  auto value = [](std::optional<std::string>& field) {
    return [&field](std::string_view v) { field = std::string(v); };
  };
  auto flag = [](bool& field) { return [&field](std::string_view) { field = true; }; };
  ArgScanner scanner(kInfo,
                     {{"recording", true, value(o.recording)},
                      {"url", true, value(o.url)},
                      {"out", true, value(o.out)},
                      {"emit-jobs", true, value(o.emit_jobs)},
                      {"submit", true, value(o.submit)},
                      {"sbatch", true, [&o](std::string_view v) { o.sbatch.emplace_back(v); }},
                      {"tasks", true, value(o.tasks)},
                      {"task-limit", true, value(o.task_limit)},
                      {"job-program", true, value(o.job_program)},
                      {"only", true, value(o.only)},
                      {"rates", true, value(o.rates)},
                      {"rtts", true, value(o.rtts)},
                      {"loss", true, value(o.loss)},
                      {"queue", true, [&o](std::string_view v) { o.queues.emplace_back(v); }},
                      {"command", true, [&o](std::string_view v) { o.schemes.push_back("command=" + std::string(v)); }},
                      {"scheme", true, [&o](std::string_view v) { o.schemes.emplace_back(v); }},
                      {"server", true, value(o.server)},
                      {"link", true, [&o](std::string_view v) { o.links.emplace_back(v); }},
                      {"presets", true, value(o.presets)},
                      {"cc", true, value(o.cc)},
                      {"keep-link-logs", false, flag(o.keep_link_logs)},
                      {"tcp-ecn", true, value(o.tcp_ecn)},
                      {"runs", true, value(o.runs)},
                      {"baseline-runs", true, value(o.baseline_runs)},
                      {"timeout", true, value(o.timeout)},
                      {"jobs", true, value(o.jobs)},
                      {"http2", false, flag(o.http2)},
                      {"cumulus", false, flag(o.cumulus)},
                      {"protocols", true, value(o.protocols)},
                      {"single-server", false, flag(o.single_server)},
                      {"match-user-agent", false, flag(o.match_user_agent)},
                      {"merge", false, flag(o.merge)}});
  const std::vector<std::string> rest = scanner.scan(argc, argv, [&](std::string_view word) {
    o.operands.emplace_back(word);
    return true;
  });
  o.operands.insert(o.operands.end(), rest.begin(), rest.end());
  if (o.merge) return merge(o);
  return o.schemes.empty() ? sweep(o) : command_sweep(o, argc, argv);
}
}  // namespace

int main(int argc, char** argv) {
  return run_tool("mm-sweep", usage_line(kInfo) + "\n", [&] { return run(argc, argv); });
}
