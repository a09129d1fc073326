// SPDX-License-Identifier: GPL-3.0-or-later
// Replay's daemons together: checks what they need, starts every Apache (in parallel) and the
// dnsmasq, waits until all answer, stops them together. See replay_servers.hh.
#include "replay/replay_servers.hh"

#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "replay/apache_config.hh"
#include "replay/apache_server.hh"
#include "replay/dnsmasq_server.hh"
#include "replay/replay_daemon.hh"
#include "replay/replay_guardian.hh"
#include "util/address.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr auto kStopGrace = std::chrono::seconds(2);
constexpr auto kPollInterval = std::chrono::milliseconds(5);

void require_executable(const fs::path& program, const std::string& what, const std::string& install) {
  if (::access(program.c_str(), X_OK) != 0) {
    throw UserError("replay needs " + what + ", but " + program.string() + " cannot be run (" + std::strerror(errno) +
                    "); " + install);
  }
}

// The addresses and ports asked for, checked: IPv4, no port 0, no server twice.
void require_valid_specs(const std::vector<ReplayServerSpec>& servers, const ReplayDns& dns) {
  std::set<std::pair<std::string, uint16_t>> endpoints;
  for (const ReplayServerSpec& spec : servers) {
    if (!Ipv4::parse(spec.ip)) throw UserError("replay server address " + spec.ip + " is not an IPv4 address");
    if (spec.port == 0) throw UserError("replay server " + spec.ip + " has port 0");
    if (!endpoints.insert({spec.ip, spec.port}).second) {
      throw UserError("replay server " + spec.ip + ":" + std::to_string(spec.port) + " is listed twice");
    }
  }
  for (const std::string& address : dns.listen) {
    if (!Ipv4::parse(address)) throw UserError("DNS listening address " + address + " is not an IPv4 address");
  }
}

}  // namespace

// Where the programs are: Debian's by default, anything else through the environment.
struct ReplayServers::Programs {
  fs::path apache, modules, dnsmasq;

  static Programs find() {
    auto from_env = [](const char* variable, const char* fallback) {
      const char* value = std::getenv(variable);
      return fs::path(value && *value ? value : fallback);
    };
    return {from_env("MAHIMAHI_APACHE2", "/usr/sbin/apache2"),
            from_env("MAHIMAHI_APACHE_MODULES", "/usr/lib/apache2/modules"),
            from_env("MAHIMAHI_DNSMASQ", "/usr/sbin/dnsmasq")};
  }

  // UserError naming the package unless every program (and module) serving these needs is there.
  void require(const std::vector<ReplayServerSpec>& servers, const ReplayDns& dns) const {
    if (!servers.empty()) {
      require_executable(
          apache, "Apache httpd",
          "install it (Debian/Ubuntu: apt-get install apache2-bin), or set MAHIMAHI_APACHE2 to your httpd");
    }
    for (const std::string& module : required_apache_modules(servers)) {
      if (::access((modules / module).c_str(), R_OK) != 0) {
        throw UserError(
            "replay needs Apache's " + module + ", but " + (modules / module).string() + " cannot be read (" +
            std::strerror(errno) +
            "); install Apache (Debian/Ubuntu: apt-get install apache2-bin), or set MAHIMAHI_APACHE_MODULES");
      }
    }
    if (!dns.listen.empty()) {
      require_executable(dnsmasq, "dnsmasq",
                         "install it (Debian/Ubuntu: apt-get install dnsmasq-base), or set MAHIMAHI_DNSMASQ");
    }
  }
};

ReplayServers::ReplayServers(const std::vector<ReplayServerSpec>& servers, const ReplayDns& dns,
                             CertificateAuthority& ca, const fs::path& fastcgi_socket, const fs::path& work_dir) {
  const fs::path work = fs::absolute(work_dir);
  const fs::path socket = fs::absolute(fastcgi_socket);
  if (socket.string().size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw UserError("the matcher's socket path " + socket.string() +
                    " is too long for a unix socket; set TMPDIR to a shorter directory such as /tmp");
  }
  require_plain_path(work);
  require_plain_path(socket);
  require_valid_specs(servers, dns);
  const Programs programs = Programs::find();
  programs.require(servers, dns);

  guardian_ = std::make_unique<ReplayGuardian>(servers.size() + 1, work);
  try {
    if (!dns.listen.empty()) dnsmasq_ = std::make_unique<DnsmasqServer>(dns, programs.dnsmasq, work, *guardian_);
    start_apaches(servers, programs, ca, socket, work);
    wait_until_ready();
  } catch (...) {
    apaches_.clear();  // SIGKILL: nothing they hold is worth a graceful stop
    dnsmasq_.reset();
    guardian_.reset();
    throw;
  }
}

// The certificates first, by several threads, because writing one waits for the disk
// (CertificateAuthority::write_leaf syncs each file): about 1.3 ms per HTTPS server, which one
// thread would add up. Then the instances (apache_groups: one for up to 128 IP:ports), all at
// once: an Apache's start-up is mostly CPU (loading modules, reading its configuration twice).
void ReplayServers::start_apaches(const std::vector<ReplayServerSpec>& servers, const Programs& programs,
                                  CertificateAuthority& ca, const fs::path& socket, const fs::path& work) {
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto work_through = [&] {
    for (size_t i = next++; i < servers.size(); i = next++) {
      try {
        write_apache_certificate(servers[i], ca, work);
      } catch (...) {
        const std::lock_guard<std::mutex> guard(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = servers.size();  // the others stop too
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t k = 1; k < std::min<size_t>(servers.size(), 8); k++) {
    try {
      helpers.emplace_back(work_through);
    } catch (const std::system_error&) {
      break;  // fewer helpers, then
    }
  }
  work_through();
  for (std::thread& t : helpers) t.join();
  if (failure) std::rethrow_exception(failure);
  const std::vector<std::vector<ReplayServerSpec>> groups = apache_groups(servers);
  for (const std::vector<ReplayServerSpec>& group : groups) {
    apaches_.push_back(std::make_unique<ApacheServer>(group, programs.apache, programs.modules, socket, work,
                                                      *guardian_, groups.size()));
  }
}

void ReplayServers::wait_until_ready() {
  const auto deadline = Clock::now() + kStartTimeout;
  std::deque<ApacheServer*> pending;
  for (auto& a : apaches_) pending.push_back(a.get());
  bool dns_pending = dnsmasq_ != nullptr;
  for (;;) {
    for (auto it = pending.begin(); it != pending.end();) {
      if ((*it)->daemon().ended())
        throw(*it)->failure("stopped while starting (" + (*it)->daemon().how_it_ended() + ")");
      it = (*it)->ready() ? pending.erase(it) : it + 1;
    }
    if (dns_pending) {
      if (dnsmasq_->daemon().ended())
        throw dnsmasq_->failure("stopped while starting (" + dnsmasq_->daemon().how_it_ended() + ")");
      dns_pending = !dnsmasq_->ready();
    }
    if (pending.empty() && !dns_pending) return;
    if (Clock::now() > deadline) {
      const std::string seconds =
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kStartTimeout).count());
      if (!pending.empty()) {
        throw pending.front()->failure("was not accepting connections after " + seconds + " s (" +
                                       std::to_string(pending.size()) + " of " + std::to_string(apaches_.size()) +
                                       " servers were not); is the machine overloaded?");
      }
      throw dnsmasq_->failure("was not answering after " + seconds + " s");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

ReplayServers::~ReplayServers() { stop(); }

std::optional<std::string> ReplayServers::ended_unexpectedly() {
  auto describe = [](const std::string& what, const std::string& program, ReplayDaemon& d) {
    return what + " (" + program + ", pid " + std::to_string(d.pid()) + ") " + d.how_it_ended() +
           " while replaying:" + quoted_daemon_log(d.log());
  };
  for (auto& a : apaches_) {
    if (a && a->daemon().ended()) return describe("the replay server for " + a->endpoint(), "apache2", a->daemon());
  }
  if (dnsmasq_ && dnsmasq_->daemon().ended()) return describe("the replay's DNS server", "dnsmasq", dnsmasq_->daemon());
  return std::nullopt;
}

void ReplayServers::stop() {
  std::vector<ReplayDaemon*> running;
  for (auto& a : apaches_) {
    if (a) running.push_back(&a->daemon());
  }
  if (dnsmasq_) running.push_back(&dnsmasq_->daemon());
  // Apache stops its workers itself on SIGTERM; whatever is left after the grace period, or
  // lingers once the leader has exited, goes with its process group.
  for (ReplayDaemon* d : running) d->terminate();
  const auto deadline = Clock::now() + kStopGrace;
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      if ((*it)->ended()) {
        (*it)->kill_and_reap();
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    if (running.empty() || Clock::now() > deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  for (ReplayDaemon* d : running) d->kill_and_reap();
}
