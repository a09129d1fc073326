// SPDX-License-Identifier: GPL-3.0-or-later
// Per-device IPv4 forwarding behind one filter, changed only in root helpers (see forwarding.hh).
#include "shell/forwarding.hh"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "shell/nat.hh"
#include "shell/nftables.hh"
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
  // Only if no other shell holds it now (held() says): for a clean-up that another shell's
  // own clean-up can do instead.
  struct IfFree {};
  explicit NamespaceLock(IfFree) {
    for (;;) {
      fd_ = open_namespace_lock_file();
      if (::flock(fd_.get(), LOCK_EX | LOCK_NB) < 0) {
        fd_ = FileDescriptor();
        return;
      }
      if (!unlinked(fd_.get())) return;  // (removed meanwhile by the last shell: the path's file)
    }
  }
  bool held() const { return fd_.valid(); }

  // closing: for a shell's clean-up (whose caller says what becomes of it), not its set-up.
  explicit NamespaceLock(bool closing) {
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
                      std::to_string(kLockTimeoutSeconds) + " s (" + namespace_lock_path() + " is locked)" +
                      (closing ? "" : "; try again"));
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

// The devices of this namespace whose IPv4 forwarding is off, shells' devices aside. A device
// that goes away while this runs (another shell's ferry exiting, a container's veth) is skipped.
std::vector<std::string> devices_not_forwarding() {
  std::vector<std::string> names;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(kConf), ::closedir);
  if (!dir) throw SystemError(std::string("listing ") + kConf);
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || name == "all" || name == "default" || name == "lo") continue;
    // (A shell's own device is no opened device, even before its helper has switched it on.)
    if (!safe_device_name(name) || is_shell_device_name(name)) continue;
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

// A slot's holder with no owner (a rootless shell's).
constexpr uint32_t kNoOwner = UINT32_MAX;

// Adds to transaction the additions (add) or deletions of the shell's elements: its device among
// the shells, its slot (the device's name and index, and its owner), its owner's right to
// connect into it, its NAT. Without name_keyed, not those keyed by the device's name alone.
void add_shell_elements(nft::Transaction& t, bool add, const ShellEntry& entry, bool name_keyed = true) {
  const nft::Bytes device = nft::Bytes().ifname(entry.device), inner = nft::Bytes().ipv4(entry.inner);
  const nft::Bytes index = nft::Bytes().number(entry.ifindex);
  const nft::Bytes holder =
      nft::Bytes().ifname(entry.device).number(entry.ifindex).number(entry.owner.value_or(kNoOwner));
  const nft::Bytes owner = nft::Bytes().number(entry.ifindex).number(entry.owner.value_or(kNoOwner));
  if (add) {
    t.add_element("shells", device);
    t.add_element("slots", inner, &holder);
    if (entry.owner) {
      t.add_element("guarded", index);
      t.add_element("owners", owner);
    }
  } else {
    if (name_keyed) t.delete_element("shells", device);
    t.delete_element("slots", inner);
    if (entry.owner) {
      t.delete_element("guarded", index);
      t.delete_element("owners", owner);
    }
  }
  add_nat_elements(t, add, entry, name_keyed);
}

// The whole table, for the first shell, with create_table: the transaction fails if the table
// is there (no second copy of the rules).
void add_table_definition(nft::Transaction& t) {
  using namespace nft;
  t.create_table();
  t.add_set("opened", kIfnameType, 16);
  t.add_set("shells", kIfnameType, 16);
  t.add_set("slots", kIpv4Type, 4, concatenation(concatenation(kIfnameType, kIfindexType), kUidType), 16 + 4 + 4);
  t.add_set("guarded", kIfindexType, 4);
  t.add_set("owners", concatenation(kIfindexType, kUidType), 4 + 4);
  // What did not come in on an opened device is none of this table's business; from a shell,
  // anything goes out (the shell's own traffic); into a shell, only replies to its connections
  // (and their ICMP errors); everything else coming in on an opened device is what the host did
  // not forward before: dropped.
  t.add_base_chain("forward", "filter", NF_INET_FORWARD, -1);
  Rule not_opened, from_shell, reply, related, drop;
  not_opened.meta(NFT_META_IIFNAME, kReg1).lookup(kReg1, "opened", true).verdict(NF_ACCEPT);
  from_shell.meta(NFT_META_IIFNAME, kReg1).lookup(kReg1, "shells").verdict(NF_ACCEPT);
  const uint8_t reply_direction = 1;  // IP_CT_DIR_REPLY
  reply.meta(NFT_META_OIFNAME, kReg1)
      .lookup(kReg1, "shells")
      .ct(NFT_CT_DIRECTION, kReg1)
      .equals(kReg1, &reply_direction, 1)
      .verdict(NF_ACCEPT);
  const uint32_t zero = 0;
  related.meta(NFT_META_OIFNAME, kReg1)
      .lookup(kReg1, "shells")
      .ct(NFT_CT_STATE, kReg1)
      .bitwise_and(kReg1, NF_CT_STATE_BIT(IP_CT_RELATED))
      .equals(kReg1, &zero, 4, true)
      .verdict(NF_ACCEPT);
  drop.verdict(NF_DROP);
  for (Rule* rule : {&not_opened, &from_shell, &reply, &related, &drop}) t.add_rule("forward", *rule);
  // A connection from the caller's namespace into a guarded shell (one with an owner) is opened
  // by its owner or by root, nobody else: another user's socket may not reach the command's
  // servers, as it could not reach a rootless shell's. Replies and ICMP errors to the shell's own
  // connections are not new, and the kernel's own packets (no socket: skuid finds none, and the
  // rule does not match) are not judged.
  t.add_base_chain("output", "filter", NF_INET_LOCAL_OUT, 0);
  Rule stranger;
  const uint32_t root = 0;
  stranger.ct(NFT_CT_STATE, kReg1)
      .bitwise_and(kReg1, NF_CT_STATE_BIT(IP_CT_NEW))
      .equals(kReg1, &zero, 4, true)
      .meta(NFT_META_OIF, kReg1)
      .lookup(kReg1, "guarded")
      .meta(NFT_META_SKUID, kReg32_01)
      .equals(kReg32_01, &root, 4, true)
      .lookup(kReg1, "owners", true)  // oif . skuid
      .verdict(NF_DROP);
  t.add_rule("output", stranger);
  add_nat_definitions(t);
}

// The shell that holds `inner` in the table's slots, if any (or no table): its device's name and
// index, and its owner.
std::optional<ShellEntry> slot_holder(Ipv4 inner) {
  try {
    const nft::Bytes key = nft::Bytes().ipv4(inner);
    for (const auto& [slot, holder] : nft::elements(kSharedTable, "slots")) {
      if (!(slot == key) || holder.size != IFNAMSIZ + 8) continue;
      ShellEntry entry{nft::ifname_of(holder), 0, inner, Intercept{inner, 0, true}, std::nullopt};
      uint32_t owner = 0;
      std::memcpy(&entry.ifindex, holder.data + IFNAMSIZ, 4);
      std::memcpy(&owner, holder.data + IFNAMSIZ + 4, 4);
      if (owner != kNoOwner) entry.owner = owner;
      // Its interception listener, if it had one: the `listeners` element is keyed by it.
      const nft::Bytes intercept_key = nft::Bytes().ifname(entry.device).ipv4(inner);
      for (const auto& [from, to] : nft::elements(kSharedTable, "intercepts")) {
        if (!(from == intercept_key) || to.size != 8) continue;
        uint32_t outer = 0;
        uint16_t port = 0;
        std::memcpy(&outer, to.data, 4);
        std::memcpy(&port, to.data + 4, 2);
        entry.intercept = Intercept{Ipv4{ntohl(outer)}, ntohs(port), true};
      }
      return entry;
    }
  } catch (const SystemError&) {
  }
  return std::nullopt;
}

// Deletes each of the shell's elements on its own, whatever is there of them.
void delete_each_element(const ShellEntry& entry, bool name_keyed = true) {
  nft::Transaction each(kSharedTable);
  add_shell_elements(each, false, entry, name_keyed);
  each.commit_each();
}

// Deletes what a dead shell left under `inner` (which of the elements it had, interception or
// QUIC, is not known: each on its own). Only the holder of the slot calls this. Its elements keyed
// by its address or its device's index are its own; those keyed by its device's name alone are
// another shell's if a device of that name is there now with another index (a live shell of the
// same pid, in another pid namespace or after the pid was used again): left to that shell.
void remove_dead_shell(const ShellEntry& dead) {
  if (!safe_device_name(dead.device)) return;
  const unsigned now = ::if_nametoindex(dead.device.c_str());
  delete_each_element(dead, now == 0 || now == dead.ifindex);
}

// Deletes the elements keyed by this shell's device name alone that are there before it adds its
// own: a dead shell's of the same name (its device is gone, or this one could not have its name).
void remove_dead_namesake(const ShellEntry& entry) {
  nft::Transaction each(kSharedTable);
  each.delete_element("shells", nft::Bytes().ifname(entry.device));
  each.delete_element("quic_refused", nft::Bytes().ifname(entry.device));
  each.commit_each();
}

std::string refused(const std::string& what, int error) {
  return "nftables refused " + what + " (table ip " + kSharedTable + "): " + std::strerror(error);
}

// Adds the shell's elements, and the devices to open; the first shell makes the table with
// them. They are refused if one of them is there already (EEXIST): the shell's slot still names
// the shell that held it before, or its device's name is a dead shell's too; either ended
// without cleaning up (its elements go first).
void add_elements(const ShellEntry& entry, const std::vector<std::string>& open) {
  const auto transaction = [&](bool with_table) {
    nft::Transaction t(kSharedTable);
    if (with_table) add_table_definition(t);
    add_shell_elements(t, true, entry);
    // (A device's opening is shared: it may be there, opened by a shell that has ended.)
    for (const std::string& device : open)
      t.add_element("opened", nft::Bytes().ifname(device), nullptr, nft::IfPresent::Keep);
    return t.commit();
  };
  // Asked first: a transaction refused for the table's absence would cost a grace period
  // (see nft::table_exists), at every first shell of a namespace.
  const bool with_table = !nft::table_exists(kSharedTable);
  int error = transaction(with_table);
  if (error == EEXIST && !with_table) {
    // This shell holds the slot and its device's name, and has added nothing yet: whatever is
    // there under either is a dead shell's.
    if (const std::optional<ShellEntry> holder = slot_holder(entry.inner)) remove_dead_shell(*holder);
    remove_dead_namesake(entry);
    error = transaction(false);
  }
  if ((error == ENOENT && !with_table) || (error == EEXIST && with_table)) {
    throw UserError(std::string("the nftables table ip ") + kSharedTable +
                    " of this network namespace lacks a part (was it changed by hand?); delete it when no shell "
                    "runs: nft delete table ip " +
                    kSharedTable);
  }
  if (error != 0 && with_table)
    throw std::runtime_error(refused("the shells' table", error) +
                             " (is CONFIG_NF_TABLES with NAT and MASQUERADE in this kernel?)");
  if (error != 0) throw std::runtime_error(refused("the shell's elements", error));
}

// Under the lock: one small transaction, and the opened devices' forwarding switched on (there
// are any only when a device has appeared, or for the namespace's first shell).
void open_locked(const ShellEntry& entry) {
  const std::vector<std::string> off = devices_not_forwarding();
  add_elements(entry, off);  // the filter holds before any device forwards
  for (const std::string& device : off) set_forwarding(device, "1");
}

void close_locked(const ShellEntry& entry, int slot_claim) {
  // This shell gives up its claim first: two shells closing at once would otherwise each see
  // the other's claim, and both leave the shared table behind.
  release_claim(slot_claim);
  std::vector<std::pair<nft::Bytes, nft::Bytes>> opened;
  bool last = !other_shells_alive(slot_claim);
  if (last) {
    try {
      opened = nft::elements(kSharedTable, "opened");
    } catch (const SystemError&) {
      // No table (a flushed ruleset), or it cannot be read: leave it, filter included.
      last = false;
    }
  }
  if (last) {
    // If forwarding was switched on for every device meanwhile (an administrator, a container
    // runtime), the host now wants it: leave the devices as they are.
    const bool now_forwarding = read_small_file("/proc/sys/net/ipv4/conf/all/forwarding").rfind('1', 0) == 0;
    for (const auto& [key, unused] : opened) {
      const std::string device = nft::ifname_of(key);
      if (!now_forwarding && safe_device_name(device)) set_forwarding(device, "0");
    }
    nft::Transaction t(kSharedTable);
    t.delete_table();
    if (t.commit() == 0) return;
  } else {
    nft::Transaction t(kSharedTable);
    add_shell_elements(t, false, entry);
    if (t.commit() == 0) return;
  }
  // Something was gone already (removed by hand, or a flushed ruleset): each part on its own,
  // whatever is left.
  delete_each_element(entry);
}

}  // namespace

namespace {
std::string rootless_directory;  // empty: kStateDirectory, root's
}

void use_rootless_state_directory(const std::string& directory) { rootless_directory = directory; }

std::string state_directory() { return rootless_directory.empty() ? kStateDirectory : rootless_directory; }

std::string namespace_lock_path() {
  struct stat ns {};
  check_syscall("stat /proc/self/ns/net", ::stat("/proc/self/ns/net", &ns));
  return state_directory() + "/netns-" + std::to_string(ns.st_ino) + ".lock";
}

FileDescriptor open_namespace_lock_file() {
  if (rootless_directory.empty()) {  // the rootless one was checked when it was chosen
    if (::mkdir(kStateDirectory, 0755) < 0 && errno != EEXIST)
      throw SystemError(std::string("creating ") + kStateDirectory);
    struct stat dir {};
    check_syscall(std::string("lstat ") + kStateDirectory, ::lstat(kStateDirectory, &dir));
    if (!S_ISDIR(dir.st_mode) || dir.st_uid != 0 || (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      throw UserError(std::string(kStateDirectory) +
                      " must be a directory owned by root and writable by root only; remove it");
    }
  }
  const std::string path = namespace_lock_path();
  FileDescriptor fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) throw SystemError("opening " + path);
  return fd;
}

void remove_unused_lock_files() {
  const std::string directory_path = state_directory();
  DIR* directory = ::opendir(directory_path.c_str());
  if (!directory) return;
  size_t seen = 0;
  while (const dirent* entry = ::readdir(directory)) {
    const std::string name = entry->d_name;
    if (name.rfind("netns-", 0) != 0 || name.size() < 11 || name.compare(name.size() - 5, 5, ".lock") != 0) continue;
    if (++seen > 10000) break;  // a bound: the rest wait for the next shell
    const std::string path = directory_path + "/" + name;
    FileDescriptor fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    // Not while a shell sets up or cleans up there (flock), nor while one holds a slot (OFD).
    if (!fd.valid() || ::flock(fd.get(), LOCK_EX | LOCK_NB) < 0) continue;
    struct flock all = whole_file(F_WRLCK);
    if (::fcntl(fd.get(), F_OFD_SETLK, &all) < 0) continue;
    struct stat at_path {
    }, ours{};
    if (::stat(path.c_str(), &at_path) == 0 && ::fstat(fd.get(), &ours) == 0 && at_path.st_ino == ours.st_ino &&
        at_path.st_dev == ours.st_dev) {
      ::unlink(path.c_str());
    }
  }
  ::closedir(directory);
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
  {
    NamespaceLock lock(false);
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
  {
    NamespaceLock lock(true);
    close_locked(entry, slot_claim);
    lock.remove_if_unused();
  }
  // The files of namespaces whose last shell never reached its clean-up (killed during its
  // set-up, or with its namespace): nobody else would ever remove them.
  remove_unused_lock_files();
}

void close_forwarding_unless_busy(const ShellEntry& entry, int slot_claim) {
  {
    NamespaceLock lock{NamespaceLock::IfFree{}};
    if (!lock.held()) return;  // another shell is setting up or cleaning up: its end removes what is left
    close_locked(entry, slot_claim);
    lock.remove_if_unused();
  }
  remove_unused_lock_files();
}
