// SPDX-License-Identifier: GPL-3.0-or-later
// The Remote Proxy's loaders (remote_proxy.hh): the ready one started ahead, the current load's
// pair files streamed to its client as mm-record links them, its end and its result.
#include <fcntl.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>

#include "cumulus/remote_proxy_parts.hh"
#include "pageload/load_report.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/text.hh"

namespace fs = std::filesystem;
using namespace remote_proxy;

void RemoteProxy::start_spare() {
  auto l = std::make_unique<Loader>();
  l->number = next_load_++;
  l->dir = options_.work_directory / ("load-" + std::to_string(l->number));
  l->result = options_.work_directory / ("load-" + std::to_string(l->number) + ".json");
  int input[2], errors[2];
  check_syscall("pipe2", ::pipe2(input, O_CLOEXEC));
  FileDescriptor input_read(input[0]);
  l->input = FileDescriptor(input[1]);
  check_syscall("pipe2", ::pipe2(errors, O_CLOEXEC));
  l->errors = FileDescriptor(errors[0]);
  FileDescriptor errors_write(errors[1]);
  (void)::fcntl(l->errors.get(), F_SETFL, O_NONBLOCK);
  std::vector<std::string> words;
  for (std::string word : options_.loader) {
    for (size_t at = word.find("{dir}"); at != std::string::npos; at = word.find("{dir}"))
      word.replace(at, 5, l->dir.string());
    for (size_t at = word.find("{json}"); at != std::string::npos; at = word.find("{json}"))
      word.replace(at, 6, l->result.string());
    words.push_back(word);
  }
  SpawnOptions spawn;
  spawn.stdin_fd = input_read.get();
  spawn.stdout_fd = errors_write.get();
  spawn.stderr_fd = errors_write.get();
  spawn.new_process_group = true;
  spawn.default_signals = true;
  const std::vector<std::string> arguments(words.begin() + 1, words.end());
  l->pid = spawn_program(words.front(), arguments, spawn);
  l->pidfd = FileDescriptor(open_pidfd(l->pid));
  if (!l->pidfd.valid()) throw SystemError("pidfd_open");
  epoll_.add(l->pidfd.get(), EPOLLIN, kSpareExitKey);
  epoll_.add(l->errors.get(), EPOLLIN, kSpareErrorsKey);
  if (options_.verbose)
    options_.say("loader " + std::to_string(l->number) + " starting (pid " + std::to_string(l->pid) + ")");
  spare_ = std::move(l);
}

void RemoteProxy::drain_stderr(Loader& l) {
  if (!l.errors.valid()) return;
  for (;;) {
    const ssize_t n = ::read(l.errors.get(), buffer_.data(), buffer_.size());
    if (n <= 0) {
      if (n == 0 || errno != EAGAIN) {
        epoll_.remove(l.errors.get());
        l.errors = FileDescriptor();
      }
      return;
    }
    l.tail.append(buffer_.data(), static_cast<size_t>(n));
    if (l.tail.size() > kMaxTail) l.tail.erase(0, l.tail.size() - kMaxTail);
  }
}

// The loader has ended (its pidfd said so): its last words, its status and its tree's usage.
bool RemoteProxy::reap(Loader& l) {
  drain_stderr(l);
  int status = 0;
  if (::wait4(l.pid, &status, 0, &l.usage) != l.pid) return false;
  l.exited = true;
  l.status = shell_exit_code(status);
  epoll_.remove(l.pidfd.get());
  return true;
}

void RemoteProxy::start_next_load() {
  Client* next = nullptr;
  for (auto& c : clients_) {
    if (!c->gone && !c->ending && c->requested && !c->started) {
      next = c.get();
      break;
    }
  }
  if (!next) return;
  if (!spare_) start_spare();
  current_ = std::move(spare_);
  epoll_.remove(current_->errors.get());
  if (current_->errors.valid()) epoll_.add(current_->errors.get(), EPOLLIN, kCurrentErrorsKey);
  next->started = true;
  next->out = bulk_response_head();
  current_->load_started = monotonic_now();
  if (options_.verbose)
    options_.say("load " + std::to_string(current_->number) + ": " + printable(next->request.url, 300));
  if (current_->exited) {
    send_new_pairs();
    return;
  }
  epoll_.remove(current_->pidfd.get());
  epoll_.add(current_->pidfd.get(), EPOLLIN, kCurrentExitKey);
  const std::string line = field(next->request.url) + "\t" + field(next->request.user_agent) + "\t" +
                           field(next->request.accept_language) + "\n";
  if (::write(current_->input.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) && options_.verbose)
    options_.say("the loader did not take the URL");
  current_->input = FileDescriptor();
  watch_directory();
  send_new_pairs();
  flush_client(*next);
}

void RemoteProxy::watch_directory() {
  // mm-record makes the directory when its shell starts (if it has not yet, the work directory's
  // watch calls this again); this watch sees each pair's file linked in.
  if (::inotify_add_watch(inotify_.get(), current_->dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) >= 0)
    current_->watched = true;
}

// Queues the directory's new files, then sends as many as the client's connection takes.
void RemoteProxy::send_new_pairs() {
  if (!current_) return;
  Client* client = nullptr;
  for (auto& c : clients_)
    if (c->started) client = c.get();
  std::error_code error;
  std::vector<std::pair<fs::file_time_type, std::string>> fresh;
  for (fs::directory_iterator it(current_->dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("save.") || current_->seen.contains(name)) continue;
    current_->seen.insert(name);
    std::error_code ignored;
    fresh.emplace_back(fs::last_write_time(it->path(), ignored), name);
    const uintmax_t size = fs::file_size(it->path(), ignored);
    if (!ignored) current_->written += size;
  }
  std::sort(fresh.begin(), fresh.end());
  for (auto& [time, name] : fresh) current_->queued.push_back(current_->dir / name);
  if (current_->written > options_.max_load_bytes && !current_->over_cap && !current_->exited) {
    // What the load writes is bounded (it lives in memory, /dev/shm): stopped, it ends with an error.
    current_->over_cap = true;
    options_.say("load " + std::to_string(current_->number) + ": its pairs passed " +
                 std::to_string(options_.max_load_bytes >> 20) + " MiB (--max-load): stopped");
    ::kill(current_->pid, SIGTERM);
  }
  if (!client || client->gone) {
    current_->queued.clear();
    if (current_->exited) finish_load();
    return;
  }
  fill(*client);
  if (client->gone) return;
  if (current_->exited && current_->queued.empty() && !client->file.valid()) {
    finish_load();
    return;
  }
  if (!client->out.empty()) flush_client(*client);
}

// The load's result as mm-pageload wrote it (--json={json}), if it did (a loader that failed
// before the load wrote none).
std::optional<LoadResult> RemoteProxy::read_result(const Loader& l) const {
  std::ifstream in(l.result);
  if (!in) return std::nullopt;
  try {
    std::vector<LoadResult> loads = read_load_json(in, l.result.filename().string(), kMaxResultBytes);
    if (loads.size() == 1) return loads.front();
    options_.say("load " + std::to_string(l.number) + ": the loader reported " + std::to_string(loads.size()) +
                 " loads, not one");
  } catch (const UserError& e) {
    options_.say("load " + std::to_string(l.number) + ": " + e.what());
  }
  return std::nullopt;
}

void RemoteProxy::finish_load() {
  // Called when the loader has exited and whenever the client's connection took more: the end
  // frame goes only after every pair (mm-record wrote its last ones before it exited).
  Loader& l = *current_;
  if (!l.exited) return;
  Client* client = nullptr;
  for (auto& c : clients_)
    if (c->started) client = c.get();
  if (client && !client->gone && (!l.queued.empty() || client->file.valid())) return;
  std::map<std::string, std::string> fields;
  // mm-record --refuse-upstream's lines: the user learns what was kept out, and how to allow it.
  std::string last, refused;
  size_t pos = 0, refusals = 0;
  while (pos < l.tail.size()) {
    size_t end = l.tail.find('\n', pos);
    if (end == std::string::npos) end = l.tail.size();
    const std::string line = l.tail.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    last = line;
    if (line.starts_with("mm-record: refused a connection to ") && refusals++ == 0) refused = line.substr(11);
  }
  if (!refused.empty())
    options_.say("load " + std::to_string(l.number) + ": " + printable(refused, 200) +
                 (refusals > 1 ? " and " + std::to_string(refusals - 1) + " more" : "") +
                 " (--allow-private lets the loads reach such addresses)");
  const Nanos took = monotonic_now() - l.load_started;
  std::string status = l.status == 0 && !l.over_cap ? "ok" : "error";
  std::string reason;
  if (const std::optional<LoadResult> load = read_result(l)) {
    // mm-pageload's own account of the load (--json): its status, why not ok, and its PLT.
    if (load->status == LoadResult::Status::Timeout) status = "timeout";
    if (l.status != 0)
      reason = printable(status_name(load->status) + (load->reason.empty() ? "" : " (" + load->reason + ")"), 300);
    if (load->plt_ms) {
      char ms[32];
      std::snprintf(ms, sizeof ms, "%.0f", *load->plt_ms);
      fields["load_ms"] = ms;
    }
  } else if (l.status != 0) {
    reason = "the loader " + how_it_ended(l.status) + (last.empty() ? "" : ": " + printable(last, 300));
  }
  if (l.over_cap) reason = "its pairs passed " + std::to_string(options_.max_load_bytes >> 20) + " MiB (--max-load)";
  if (l.left_out > 0) fields["left_out"] = std::to_string(l.left_out);
  const double cpu_ms = (static_cast<double>(l.usage.ru_utime.tv_sec + l.usage.ru_stime.tv_sec) * 1e3 +
                         static_cast<double>(l.usage.ru_utime.tv_usec + l.usage.ru_stime.tv_usec) / 1e3);
  fields["status"] = status;
  if (!reason.empty()) fields["reason"] = reason;
  fields["pairs"] = std::to_string(l.pairs);
  fields["bytes"] = std::to_string(l.bytes);
  fields["cpu_ms"] = std::to_string(static_cast<uint64_t>(cpu_ms));
  fields["wall_ms"] = std::to_string(took / 1'000'000);
  options_.say("load " + std::to_string(l.number) + " " + status + ": " + count_of(l.pairs, "pair") + ", " +
               std::to_string(l.bytes >> 10) + " KiB, " + std::to_string(took / 1'000'000) + " ms, CPU " +
               fields["cpu_ms"] + " ms" + (reason.empty() ? "" : " (" + reason + ")"));
  epoll_.remove(l.pidfd.get());
  if (l.errors.valid()) epoll_.remove(l.errors.get());
  std::error_code ignored;
  fs::remove_all(l.dir, ignored);
  fs::remove(l.result, ignored);
  current_.reset();
  if (client) {
    client->started = false;
    if (!client->gone) {
      client->out += encode_bulk_frame(BulkFrameKind::End, encode_bulk_end(fields));
      client->ending = true;
      flush_client(*client);
    }
  }
  if (!spare_) start_spare();
}
