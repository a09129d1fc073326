// SPDX-License-Identifier: GPL-3.0-or-later
// Per-device IPv4 forwarding behind one filter, changed only in root helpers (see forwarding.hh).
#include "shell/forwarding.hh"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <sstream>
#include <vector>

#include "shell/nat.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {

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

// A lock of `type` over the whole lock file (every address slot).
struct flock whole_file(short type) {
  struct flock all {};
  all.l_type = type;
  all.l_whence = SEEK_SET;
  all.l_start = 0;
  all.l_len = 0;  // to the end, however long
  return all;
}

// A lock of `type` over one byte: the address slot at `index`.
struct flock byte_lock(short type, off_t index) {
  struct flock one {};
  one.l_type = type;
  one.l_whence = SEEK_SET;
  one.l_start = index;
  one.l_len = 1;
  return one;
}

bool unlinked(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_nlink == 0;
}

// The whole file, locked with flock(), serialises the changes to the forwarding state.
class NamespaceLock {
 public:
  NamespaceLock() {
    // flock() is interrupted by a 100 ms interval timer (a single alarm could fire before flock
    // is reached and leave it waiting for good), and gives up at the deadline.
    struct sigaction action {};
    action.sa_handler = alarm_handler;  // no SA_RESTART: flock returns EINTR
    ::sigaction(SIGALRM, &action, nullptr);
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    ::sigprocmask(SIG_UNBLOCK, &alarm_only, nullptr);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kLockTimeoutSeconds);
    int err = 0;
    for (;;) {
      fd_ = open_namespace_lock_file();  // (before the timer: if it throws, no timer is left)
      const itimerval tick{{0, 100'000}, {0, 100'000}};
      ::setitimer(ITIMER_REAL, &tick, nullptr);
      while (::flock(fd_.get(), LOCK_EX) < 0) {
        err = errno;
        if (err != EINTR || std::chrono::steady_clock::now() >= deadline) break;
        err = 0;
      }
      const itimerval off{};
      ::setitimer(ITIMER_REAL, &off, nullptr);
      // The last shell of the namespace removed the file while we waited (remove_if_unused):
      // a lock on it guards nothing, so lock the file now at the path.
      if (err != 0 || !unlinked(fd_.get())) break;
    }
    if (err == EINTR) {
      throw UserError("another shell of this network namespace has been setting up or cleaning up for over " +
                      std::to_string(kLockTimeoutSeconds) + " s (" + namespace_lock_path() + " is locked); try again");
    }
    if (err != 0) throw SystemError("locking " + namespace_lock_path(), err);
  }

  // Removes the lock file if no shell holds an address slot in it, so that a file per namespace
  // ever used does not pile up in /run. A whole-file OFD write lock, taken without waiting, is
  // the proof: no slot is held, and none can be claimed while it stands (claim_address_slot sees it and
  // opens the path again, and a claim that raced the removal sees a file with no link).
  void remove_if_unused() {
    struct flock all = whole_file(F_WRLCK);
    if (::fcntl(fd_.get(), F_OFD_SETLK, &all) < 0) return;  // a shell holds or just claimed a slot
    const std::string path = namespace_lock_path();
    struct stat at_path {
    }, ours{};
    if (::stat(path.c_str(), &at_path) == 0 && ::fstat(fd_.get(), &ours) == 0 && at_path.st_ino == ours.st_ino &&
        at_path.st_dev == ours.st_dev) {
      ::unlink(path.c_str());
    }
    all.l_type = F_UNLCK;
    ::fcntl(fd_.get(), F_OFD_SETLK, &all);
  }

 private:
  FileDescriptor fd_;
};

// A shell's own outer device (<kind>-<pid>): never an "opened" device, even before its own
// helper has switched its forwarding on.
bool shell_device_name(const std::string& name) {
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash + 1 == name.size() ||
      name.find_first_not_of("0123456789", dash + 1) != std::string::npos)
    return false;
  const std::string kind = name.substr(0, dash);
  for (const char* k : {"delay", "loss", "onoff", "inter", "link", "record", "replay"}) {
    if (kind == k) return true;
  }
  return false;
}

// The devices of this namespace whose IPv4 forwarding is off, shells' devices aside. A device
// that goes away while this runs (another shell's ferry exiting, a container's veth) is skipped.
std::vector<std::string> devices_not_forwarding() {
  std::vector<std::string> names;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(kConf), ::closedir);
  if (!dir) throw SystemError(std::string("listing ") + kConf);
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || name == "all" || name == "default" || name == "lo") continue;
    if (!safe_device_name(name) || shell_device_name(name)) continue;
    try {
      if (read_small_file(forwarding_path(name)).rfind('0', 0) == 0) names.push_back(name);
    } catch (const SystemError&) {
      // Gone meanwhile.
    }
  }
  return names;
}

// Switches a device's forwarding; false if the device has gone.
bool set_forwarding(const std::string& device, const char* value) {
  try {
    write_existing_file(forwarding_path(device), value);
    return true;
  } catch (const SystemError& e) {
    if (e.error() == ENOENT || e.error() == ENODEV) return false;
    throw SystemError("switching the forwarding of " + device, e.error());
  }
}

// The quoted names in the listing of a set ("elements = { "a", "b" }").
std::vector<std::string> set_elements(const std::string& listing) {
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

// Releases every lock this shell's claim holds (its address slot); the descriptor stays open.
void release_claim(int slot_claim) {
  struct flock all = whole_file(F_UNLCK);
  check_syscall("releasing the shell's address slot", ::fcntl(slot_claim, F_OFD_SETLK, &all));
}

// Whether any other shell of the namespace holds an address slot: slots are one-byte OFD locks
// on the namespace's lock file, and our own description's lock does not conflict with itself.
// Dead shells hold none, whatever they left behind.
bool other_shells_alive(int slot_claim) {
  struct flock probe = whole_file(F_WRLCK);
  check_syscall("probing the other shells' slots", ::fcntl(slot_claim, F_OFD_GETLK, &probe));
  return probe.l_type != F_UNLCK;
}

// The shell's elements of the forwarding part: its device among the shells, and its slot.
std::string forward_elements(const std::string& verb, const ShellEntry& entry) {
  const std::string e = verb + " element ip " + std::string(kSharedTable);
  const std::string device = "\"" + entry.device + "\"";
  std::string s = e + " shells { " + device + " }\n" + e + " slots { " + entry.inner.str();
  if (verb != "delete") s += " : " + device;
  return s + " }\n";
}

std::string shell_elements(const std::string& verb, const ShellEntry& entry) {
  return forward_elements(verb, entry) + nat_elements(verb, kSharedTable, entry);
}

// The whole table, for the first shell: made with "create", so that it fails if the table is
// there (no second copy of the rules).
std::string table_definition() {
  const std::string t = std::string(" ip ") + kSharedTable;
  std::ostringstream s;
  s << "create table" << t << "\n"
    << "add set" << t << " opened { type ifname; }\n"
    << "add set" << t << " shells { type ifname; }\n"
    << "add map" << t << " slots { type ipv4_addr : ifname; }\n"
    << "add chain" << t
    << " forward { type filter hook forward priority -1; policy accept; }\n"
    // What did not come in on an opened device is none of this table's business; from a
    // shell, anything goes out (the shell's own traffic); into a shell, only replies to its
    // connections (and their ICMP errors); everything else coming in on an opened device
    // is what the host did not forward before: dropped.
    << "add rule" << t << " forward iifname != @opened accept\n"
    << "add rule" << t << " forward iifname @shells accept\n"
    << "add rule" << t << " forward oifname @shells ct direction reply accept\n"
    << "add rule" << t << " forward oifname @shells ct state related accept\n"
    << "add rule" << t << " forward drop\n"
    << nat_definitions(kSharedTable);
  return s.str();
}

// The device that holds `inner` in the table's slots, or "" if none (or no table).
std::string slot_holder(Ipv4 inner) {
  std::string listing;
  try {
    listing = run_nft("get element ip " + std::string(kSharedTable) + " slots { " + inner.str() + " }");
  } catch (const std::runtime_error&) {
    return "";
  }
  // "... elements = { 10.0.0.2 : "delay-12" } ..."
  const size_t colon = listing.find(" : \"");
  if (colon == std::string::npos) return "";
  const size_t end = listing.find('"', colon + 4);
  return end == std::string::npos ? "" : listing.substr(colon + 4, end - colon - 4);
}

// Deletes what a dead shell left under `inner`: each element on its own, since which of them
// it had (interception, QUIC) is not known. Only the holder of the slot calls this.
void remove_dead_shell(const std::string& device, Ipv4 inner) {
  if (!safe_device_name(device)) return;
  const ShellEntry dead{device, inner, Intercept{inner, 0, true}};
  std::istringstream lines(shell_elements("delete", dead));
  std::string line;
  while (std::getline(lines, line)) {
    try {
      run_nft(line);
    } catch (const std::runtime_error&) {
      // It had none of those.
    }
  }
}

// Adds the shell's elements. They are refused if the table is missing (the first shell makes
// it, with them) or if the shell's slot still names a device: the shell that held the slot
// before, which ended without cleaning up (its elements go first).
void add_shell_elements(const std::string& elements, const ShellEntry& entry) {
  try {
    run_nft(elements);
    return;
  } catch (const std::runtime_error& first) {
    const std::string holder = slot_holder(entry.inner);
    if (holder.empty()) {
      try {
        run_nft(table_definition() + elements);
        return;
      } catch (const std::runtime_error& making) {
        // "create table" refused: the table was there, and the first error says what was wrong;
        // else the table could not be made, and this error says why.
        if (std::string(making.what()).find("File exists") != std::string::npos) throw first;
        throw;
      }
    }
    // This shell holds the slot and has added nothing yet: whatever is there is a dead shell's
    // (whose pid may even have been this shell's, with other elements).
    remove_dead_shell(holder, entry.inner);
  }
  run_nft(elements);
}

// Under the lock: one small transaction, and the opened devices' forwarding switched on (there
// are any only when a device has appeared, or for the namespace's first shell).
void open_locked(const ShellEntry& entry) {
  const std::vector<std::string> off = devices_not_forwarding();
  std::ostringstream elements;
  elements << shell_elements("add", entry);
  if (!off.empty()) {
    elements << "add element ip " << kSharedTable << " opened { ";
    for (size_t i = 0; i < off.size(); i++) elements << (i ? ", " : "") << '"' << off[i] << '"';
    elements << " }\n";
  }
  add_shell_elements(elements.str(), entry);  // the filter holds before any device forwards
  for (const std::string& device : off) set_forwarding(device, "1");
}

void close_locked(const ShellEntry& entry, int slot_claim) {
  const std::string t = std::string(" ip ") + kSharedTable;
  // This shell gives up its claim first: two shells closing at once would otherwise each see
  // the other's claim, and both leave the shared table behind.
  release_claim(slot_claim);
  std::string listing;
  bool last = !other_shells_alive(slot_claim);
  if (last) {
    try {
      listing = run_nft("list set" + t + " opened");
    } catch (const std::exception&) {
      // No table (a flushed ruleset), or it cannot be read: leave it, filter included.
      last = false;
    }
  }
  if (last) {
    // If forwarding was switched on for every device meanwhile (an administrator, a container
    // runtime), the host now wants it: leave the devices as they are.
    const bool now_forwarding = read_small_file("/proc/sys/net/ipv4/conf/all/forwarding").rfind('1', 0) == 0;
    for (const std::string& device : set_elements(listing)) {
      if (!now_forwarding && safe_device_name(device)) set_forwarding(device, "0");
    }
  }
  const std::string ours = last ? "delete table" + t + "\n" : shell_elements("delete", entry);
  try {
    run_nft(ours);
    return;
  } catch (const std::exception&) {
    // Something was gone already (removed by hand, or a flushed ruleset): each part on its own,
    // whatever is left.
  }
  std::istringstream lines(ours);
  std::string line;
  while (std::getline(lines, line)) {
    try {
      run_nft(line);
    } catch (const std::exception&) {
    }
  }
}

}  // namespace

std::string namespace_lock_path() {
  struct stat ns {};
  check_syscall("stat /proc/self/ns/net", ::stat("/proc/self/ns/net", &ns));
  return std::string(kStateDirectory) + "/netns-" + std::to_string(ns.st_ino) + ".lock";
}

FileDescriptor open_namespace_lock_file() {
  if (::mkdir(kStateDirectory, 0755) < 0 && errno != EEXIST)
    throw SystemError(std::string("creating ") + kStateDirectory);
  struct stat dir {};
  check_syscall(std::string("lstat ") + kStateDirectory, ::lstat(kStateDirectory, &dir));
  if (!S_ISDIR(dir.st_mode) || dir.st_uid != 0 || (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw UserError(std::string(kStateDirectory) +
                    " must be a directory owned by root and writable by root only; remove it");
  }
  const std::string path = namespace_lock_path();
  FileDescriptor fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) throw SystemError("opening " + path);
  return fd;
}

FileDescriptor claim_address_slot(off_t index) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kLockTimeoutSeconds);
  for (;;) {
    FileDescriptor file = open_namespace_lock_file();
    struct flock slot = byte_lock(F_WRLCK, index);
    if (::fcntl(file.get(), F_OFD_SETLK, &slot) == 0) {
      // Claimed, but in a file the last shell removed between our open and our claim: again.
      if (!unlinked(file.get())) return file;
    } else {
      const int err = errno;
      if (err != EAGAIN && err != EACCES)
        throw SystemError("claiming an address slot in " + namespace_lock_path(), err);
      struct flock holder = byte_lock(F_WRLCK, index);
      check_syscall("probing an address slot", ::fcntl(file.get(), F_OFD_GETLK, &holder));
      // A slot's lock covers one byte; a whole-file lock is the last shell removing the file
      // (for microseconds, in a root helper no user can stop): open the path again.
      if (holder.l_type != F_UNLCK && !(holder.l_start == 0 && holder.l_len == 0)) return FileDescriptor();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw UserError("another shell of this network namespace kept " + namespace_lock_path() + " locked for over " +
                      std::to_string(kLockTimeoutSeconds) + " s; try again");
    }
    const timespec pause{0, 1'000'000};
    ::nanosleep(&pause, nullptr);
  }
}

void open_forwarding(const ShellEntry& entry, int slot_claim) {
  if (!safe_device_name(entry.device)) throw std::logic_error("bad shell device name " + entry.device);
  load_nftables();  // (not under the lock)
  {
    NamespaceLock lock;
    try {
      open_locked(entry);
    } catch (...) {
      close_locked(entry, slot_claim);  // all or nothing: the caller has nothing to undo
      lock.remove_if_unused();
      throw;
    }
  }
  // The shell's own device is no opened device and no other shell's business: switched on
  // outside the lock (writing a forwarding switch waits for the kernel's rtnl lock, which any
  // namespace's device changes hold).
  bool vanished = false;
  try {
    vanished = !set_forwarding(entry.device, "1");
  } catch (...) {
    close_forwarding(entry, slot_claim);
    throw;
  }
  if (vanished) {
    close_forwarding(entry, slot_claim);
    throw UserError("the shell's device " + entry.device + " vanished");
  }
}

void close_forwarding(const ShellEntry& entry, int slot_claim) {
  load_nftables();
  NamespaceLock lock;
  close_locked(entry, slot_claim);
  lock.remove_if_unused();
}
