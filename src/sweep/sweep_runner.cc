// SPDX-License-Identifier: GPL-3.0-or-later
// Running a sweep's loads (see sweep_runner.hh).
#include "sweep/sweep_runner.hh"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <map>

#include "util/child_process.hh"
#include "util/clock.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
struct RunningLoad {
  LoadTask task;
  Nanos started;
  bool stopped = false;  // we signalled it: its result, if any, is not a measurement
  Nanos kill_at = kNever;
};

std::string command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& word : argv) text += (text.empty() ? "" : " ") + shell_quote(word);
  return text;
}

// The last `count` lines of a file, for a failure's message.
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

std::string load_outcome(const LoadResult& load) {
  std::string text = status_name(load.status);
  if (load.plt_ms) text += ", PLT " + std::to_string(std::lround(*load.plt_ms)) + " ms";
  if (!load.reason.empty()) text += " (" + load.reason.substr(0, 200) + ")";
  return text;
}
}  // namespace

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

std::string duration_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return "about " + std::to_string(s) + " s";
  if (s < 3600) return "about " + std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return "about " + std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

SweepRun run_loads(const ResultStore& store, const SweepSettings& settings, const SweepPrograms& programs,
                   const std::vector<LoadTask>& tasks, int jobs, std::ostream& progress) {
  SweepRun result;
  const SignalSet signals{SIGINT, SIGTERM, SIGHUP, SIGCHLD};
  const sigset_t previous_mask = signals.block();
  struct RestoreMask {
    const sigset_t& mask;
    ~RestoreMask() { ::pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous_mask};
  const SignalFd signal_fd(signals);
  const FileDescriptor null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));

  std::map<pid_t, RunningLoad> running;
  size_t next = 0, finished = 0;
  bool stopping = false;
  const Nanos start = monotonic_now();
  const Nanos hung_after = seconds_to_nanos(settings.timeout_s + kHungLoadSeconds);

  auto stop = [&](pid_t pid, RunningLoad& load) {
    if (load.stopped) return;
    load.stopped = true;
    load.kill_at = monotonic_now() + seconds_to_nanos(kStopGraceSeconds);
    ::kill(-pid, SIGTERM);
  };
  auto stop_all = [&] {
    stopping = true;
    for (auto& [pid, load] : running) stop(pid, load);
  };
  auto fail = [&](const std::string& message) {
    progress << "mm-sweep: " << message << std::flush;
    result.outcome = SweepRun::Outcome::Failed;
    stopping = true;  // running loads finish; no new one starts
  };

  auto launch = [&](const LoadTask& task) {
    const std::string id = task.config.id();
    store.prepare(id);
    const fs::path pending = store.pending_file(id, task.run);
    std::error_code ignored;
    fs::remove(pending, ignored);  // from a load that was stopped
    const std::vector<std::string> argv = load_command(settings, task.config, programs, pending.string());
    const fs::path log = store.log_file(id, task.run);
    const FileDescriptor log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!log_fd.valid()) throw UserError("cannot create " + log.string() + ": " + std::strerror(errno));
    const std::string line = "# " + command_text(argv) + "\n";
    write_all(log_fd.get(), line);
    SpawnOptions options;
    options.stdin_fd = null_fd.get();
    options.stdout_fd = log_fd.get();
    options.stderr_fd = log_fd.get();
    options.close_other_fds = true;
    options.new_process_group = true;  // so that stopping it reaches every process it started
    options.default_signals = true;
    const pid_t pid = spawn_program(argv.front(), std::vector<std::string>(argv.begin() + 1, argv.end()), options);
    running.emplace(pid, RunningLoad{task, monotonic_now()});
  };

  auto finish = [&](pid_t pid, int exit_code) {
    const RunningLoad load = running.at(pid);
    running.erase(pid);
    const std::string id = load.task.config.id();
    const fs::path pending = store.pending_file(id, load.task.run);
    std::error_code ignored;
    if (load.stopped) {
      fs::remove(pending, ignored);
      return;
    }
    LoadResult result_load;
    try {
      result_load = read_single_load(pending);
    } catch (const UserError& e) {
      const std::vector<std::string> argv = load_command(settings, load.task.config, programs, pending.string());
      fail("the load of " + id + " run " + std::to_string(load.task.run) + " gave no result (exit status " +
           std::to_string(exit_code) + "; " + e.what() + "). Its command:\n  " + command_text(argv) +
           "\nThe end of its log, " + store.log_file(id, load.task.run).string() + ":\n" +
           tail_lines(store.log_file(id, load.task.run), 15) +
           "Fix the cause and run the same mm-sweep command again: finished loads are kept.\n");
      fs::remove(pending, ignored);
      return;
    }
    store.store_load(id, load.task.run, result_load);
    fs::remove(pending, ignored);
    finished++;
    result.stored++;
    const double elapsed = nanos_to_ms(monotonic_now() - start) / 1000;
    const size_t left = tasks.size() - finished;
    progress << "mm-sweep: [" << finished << "/" << tasks.size() << "] " << id << " run " << load.task.run << ": "
             << load_outcome(result_load);
    if (left > 0) progress << "; " << left << " left, " << duration_text(elapsed / finished * left);
    progress << "\n" << std::flush;
  };

  while (true) {
    while (!stopping && running.size() < static_cast<size_t>(jobs) && next < tasks.size()) {
      try {
        launch(tasks[next]);
        next++;
      } catch (const std::exception& e) {
        fail(std::string(e.what()) + "\n");
      }
    }
    if (running.empty()) break;
    // Sleep until a signal arrives or the earliest deadline (a hung load, a SIGKILL) passes.
    Nanos deadline = kNever;
    for (const auto& [pid, load] : running)
      deadline = std::min(deadline, load.stopped ? load.kill_at : load.started + hung_after);
    const Nanos now = monotonic_now();
    const int timeout_ms =
        deadline == kNever ? -1 : static_cast<int>(std::clamp<Nanos>((deadline - now) / kNanosPerMs + 1, 0, 60000));
    pollfd fd{signal_fd.fd(), POLLIN, 0};
    const int ready = ::poll(&fd, 1, timeout_ms);
    if (ready < 0 && errno != EINTR) throw SystemError("poll");
    if (ready > 0) {
      const signalfd_siginfo info = signal_fd.read_signal();
      if (info.ssi_signo != SIGCHLD) {
        if (result.signal == 0)
          progress << "mm-sweep: interrupted: stopping " << running.size()
                   << " running load(s); every finished load is kept, and the same command continues the sweep\n"
                   << std::flush;
        if (result.outcome != SweepRun::Outcome::Failed) result.outcome = SweepRun::Outcome::Interrupted;
        result.signal = static_cast<int>(info.ssi_signo);
        stop_all();
      }
    }
    // Reap whatever ended (SIGCHLD signals coalesce: check every child).
    for (auto it = running.begin(); it != running.end();) {
      const pid_t pid = it->first;
      ++it;
      int status = 0;
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) finish(pid, shell_exit_code(status));
    }
    const Nanos later = monotonic_now();
    for (auto& [pid, load] : running) {
      if (load.stopped && later >= load.kill_at) {
        ::kill(-pid, SIGKILL);
        load.kill_at = kNever;
      } else if (!load.stopped && later >= load.started + hung_after) {
        fail("the load of " + load.task.config.id() + " run " + std::to_string(load.task.run) + " ran " +
             number_text(settings.timeout_s + kHungLoadSeconds) + " s, " + number_text(kHungLoadSeconds) +
             " s beyond --timeout: its shells are stopped (see " +
             store.log_file(load.task.config.id(), load.task.run).string() + ")\n");
        stop(pid, load);
      }
    }
  }
  return result;
}
