#include "forwarding.hh"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <sstream>
#include <vector>

#include "exception.hh"
#include "file_descriptor.hh"
#include "nat.hh"

namespace {

constexpr const char* kTable = "mahimahi_forward";
constexpr const char* kConf = "/proc/sys/net/ipv4/conf/";

// Interface names as the kernel allows them are nearly arbitrary; only these go into nft scripts.
bool safe_device_name(const std::string& name) {
  if (name.empty() || name.size() >= IFNAMSIZ) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.' || c == '@';
    if (!ok) return false;
  }
  return true;
}

std::string forwarding_path(const std::string& device) { return std::string(kConf) + device + "/forwarding"; }

void alarm_handler(int) {}  // only interrupts flock()

// The per-namespace lock: a root-owned file in /run/mahimahi named after the namespace's inode.
class NamespaceLock {
 public:
  NamespaceLock() {
    struct stat ns {};
    check_syscall("stat /proc/self/ns/net", ::stat("/proc/self/ns/net", &ns));
    const std::string directory = "/run/mahimahi";
    if (::mkdir(directory.c_str(), 0755) < 0 && errno != EEXIST) throw SystemError("creating " + directory);
    struct stat dir {};
    check_syscall("lstat " + directory, ::lstat(directory.c_str(), &dir));
    if (!S_ISDIR(dir.st_mode) || dir.st_uid != 0 || (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      throw UserError(directory + " must be a directory owned by root and writable by root only; remove it");
    }
    const std::string path = directory + "/netns-" + std::to_string(ns.st_ino) + ".lock";
    fd_ = FileDescriptor(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd_.valid()) throw SystemError("opening " + path);
    struct sigaction action {};
    action.sa_handler = alarm_handler;  // no SA_RESTART: flock returns EINTR
    ::sigaction(SIGALRM, &action, nullptr);
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    ::sigprocmask(SIG_UNBLOCK, &alarm_only, nullptr);
    ::alarm(kLockTimeoutSeconds);
    const int locked = ::flock(fd_.get(), LOCK_EX);
    const int err = errno;
    ::alarm(0);
    if (locked < 0) {
      if (err == EINTR) {
        throw UserError("another shell of this network namespace has been setting up or cleaning up for over " +
                        std::to_string(kLockTimeoutSeconds) + " s (" + path + " is locked); try again");
      }
      throw SystemError("locking " + path, err);
    }
  }

 private:
  FileDescriptor fd_;
};

std::vector<std::string> devices() {
  std::vector<std::string> names;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(kConf), ::closedir);
  if (!dir) throw SystemError(std::string("listing ") + kConf);
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || name == "all" || name == "default" || name == "lo") continue;
    if (safe_device_name(name)) names.push_back(name);
  }
  return names;
}

// The quoted names of one set of the table ("elements = { "a", "b" }"); empty if there is none.
std::vector<std::string> set_elements(const std::string& set) {
  std::string listing;
  try {
    listing = run_nft("list set ip " + std::string(kTable) + " " + set);
  } catch (const std::exception&) {
    return {};
  }
  std::vector<std::string> names;
  const size_t elements = listing.find("elements");
  if (elements == std::string::npos) return names;
  for (size_t open = listing.find('"', elements); open != std::string::npos; open = listing.find('"', open + 1)) {
    const size_t close = listing.find('"', open + 1);
    if (close == std::string::npos) break;
    names.push_back(listing.substr(open + 1, close - open - 1));
    open = close;
  }
  return names;
}

bool device_exists(const std::string& name) { return ::if_nametoindex(name.c_str()) != 0; }

}  // namespace

namespace {

void open_locked(const std::string& shell_device) {
  std::ostringstream script;
  script << "add table ip " << kTable << "\n"
         << "add set ip " << kTable << " opened { type ifname; }\n"
         << "add set ip " << kTable << " shells { type ifname; }\n"
         << "add chain ip " << kTable << " forward { type filter hook forward priority -1; policy accept; }\n"
         << "flush chain ip " << kTable << " forward\n"
         << "add rule ip " << kTable << " forward iifname @opened iifname != @shells oifname != @shells drop\n"
         << "add element ip " << kTable << " shells { \"" << shell_device << "\" }\n";
  run_nft(script.str());
  write_existing_file(forwarding_path(shell_device), "1");  // its own device: gone with it
  for (const std::string& device : devices()) {
    if (device == shell_device || read_small_file(forwarding_path(device)).rfind('0', 0) != 0) continue;
    // Into the set first, so that the filter holds before the device forwards anything.
    run_nft("add element ip " + std::string(kTable) + " opened { \"" + device + "\" }\n");
    write_existing_file(forwarding_path(device), "1");
  }
}

void close_locked(const std::string& shell_device) {
  for (const std::string& shell : set_elements("shells")) {
    if (shell != shell_device && device_exists(shell)) continue;
    try {
      run_nft("delete element ip " + std::string(kTable) + " shells { \"" + shell + "\" }\n");
    } catch (const std::exception&) {
      // Not a safe name (never added by a shell) or already gone.
    }
  }
  if (!set_elements("shells").empty()) return;  // other shells still need the forwarding
  for (const std::string& device : set_elements("opened")) {
    if (!safe_device_name(device) || !device_exists(device)) continue;
    try {
      write_existing_file(forwarding_path(device), "0");
    } catch (const SystemError&) {
      // The device went away meanwhile.
    }
  }
  try {
    run_nft("delete table ip " + std::string(kTable));
  } catch (const std::exception&) {
    // Already gone.
  }
}

}  // namespace

void open_forwarding(const std::string& shell_device) {
  if (!safe_device_name(shell_device)) throw std::logic_error("bad shell device name " + shell_device);
  NamespaceLock lock;
  try {
    open_locked(shell_device);
  } catch (...) {
    close_locked(shell_device);  // all or nothing: the caller has nothing to undo
    throw;
  }
}

void close_forwarding(const std::string& shell_device) {
  NamespaceLock lock;
  close_locked(shell_device);
}
