// SPDX-License-Identifier: GPL-3.0-or-later
// Running a sweep's tasks (see task_runner.hh).
#include "sweep/task_runner.hh"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>

#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/signals.hh"

namespace {
struct RunningTask {
  size_t index;
  Nanos started;
  bool stopped = false;  // we signalled it: whatever it left is not a measurement
  Nanos kill_at = kNever;
};
}  // namespace

std::string duration_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return "about " + std::to_string(s) + " s";
  if (s < 3600) return "about " + std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return "about " + std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

TaskRun run_tasks(size_t count, int jobs, Nanos hung_after, const TaskHooks& hooks, const std::string& noun,
                  std::ostream& progress) {
  TaskRun result;
  const SignalSet signals{SIGINT, SIGTERM, SIGHUP, SIGCHLD};
  const sigset_t previous_mask = signals.block();
  struct RestoreMask {
    const sigset_t& mask;
    ~RestoreMask() { ::pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous_mask};
  const SignalFd signal_fd(signals);

  std::map<pid_t, RunningTask> running;
  size_t next = 0, finished = 0;
  bool stopping = false;
  const Nanos start = monotonic_now();

  auto stop = [&](pid_t pid, RunningTask& task) {
    if (task.stopped) return;
    task.stopped = true;
    task.kill_at = monotonic_now() + seconds_to_nanos(kStopGraceSeconds);
    ::kill(-pid, SIGTERM);
  };
  auto fail = [&](const std::string& message) {
    progress << "mm-sweep: " << message << std::flush;
    result.outcome = TaskRun::Outcome::Failed;
    stopping = true;  // running tasks finish; no new one starts
  };
  auto finish = [&](pid_t pid, int exit_code) {
    const RunningTask task = running.at(pid);
    running.erase(pid);
    if (task.stopped) {
      hooks.discard(task.index);
      return;
    }
    std::string line;
    try {
      line = hooks.finish(task.index, exit_code);
    } catch (const UserError& e) {
      fail(e.what());
      return;
    }
    finished++;
    result.stored++;
    const double elapsed = nanos_to_ms(monotonic_now() - start) / 1000;
    const size_t left = count - finished;
    progress << "mm-sweep: [" << finished << "/" << count << "] " << line;
    if (left > 0) progress << "; " << left << " left, " << duration_text(elapsed / finished * left);
    progress << "\n" << std::flush;
  };

  while (true) {
    while (!stopping && running.size() < static_cast<size_t>(jobs) && next < count) {
      try {
        const pid_t pid = hooks.launch(next);
        running.emplace(pid, RunningTask{next, monotonic_now()});
        next++;
      } catch (const std::exception& e) {
        fail(std::string(e.what()) + "\n");
      }
    }
    if (running.empty()) break;
    // Sleep until a signal arrives or the earliest deadline (a hung task, a SIGKILL) passes.
    Nanos deadline = kNever;
    for (const auto& [pid, task] : running)
      deadline = std::min(deadline, task.stopped ? task.kill_at : task.started + hung_after);
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
          progress << "mm-sweep: interrupted: stopping " << running.size() << " running " << noun
                   << "(s); every finished " << noun << " is kept, and the same command continues the sweep\n"
                   << std::flush;
        if (result.outcome != TaskRun::Outcome::Failed) result.outcome = TaskRun::Outcome::Interrupted;
        result.signal = static_cast<int>(info.ssi_signo);
        stopping = true;
        for (auto& [pid, task] : running) stop(pid, task);
      }
    }
    // Reap whatever ended (SIGCHLD signals coalesce: check every child).
    for (auto it = running.begin(); it != running.end();) {
      const pid_t pid = it->first;
      ++it;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) finish(pid, shell_exit_code(status));
    }
    const Nanos later = monotonic_now();
    for (auto& [pid, task] : running) {
      if (task.stopped && later >= task.kill_at) {
        ::kill(-pid, SIGKILL);
        task.kill_at = kNever;
      } else if (!task.stopped && later >= task.started + hung_after) {
        fail(hooks.hung_message(task.index) + "\n");
        stop(pid, task);
      }
    }
  }
  return result;
}
