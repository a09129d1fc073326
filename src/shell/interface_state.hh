// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An interface's state and where it is (mm-eth, attached_device.hh): the network namespaces of a
// process and its ancestors, a thread's visit to one, and what an interface has there (link
// state, MTU, its bridge or bond, addresses and routes, as rtnetlink messages) that it loses in
// another: captured before it is moved, written to a note, and put back after. Root's acts.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/file_descriptor.hh"

ino_t inode_of(const FileDescriptor& fd);

// The network namespaces of this process and of its ancestors, nearest first, each once.
std::vector<FileDescriptor> ancestor_namespaces();

// This thread in `ns` for the object's life.
class InNamespace {
 public:
  explicit InNamespace(const FileDescriptor& ns);
  ~InNamespace();  // back to the thread's namespace before (or std::terminate: nothing is safe after)
  InNamespace(const InNamespace&) = delete;
  InNamespace& operator=(const InNamespace&) = delete;

 private:
  FileDescriptor back_;
};

struct InterfaceState {
  unsigned mtu = 0;
  bool up = false;
  unsigned master = 0;                         // the bridge or bond it was a port of (its index, in the same namespace)
  std::vector<std::string> addresses, routes;  // RTM_NEWADDR, RTM_NEWROUTE payloads
};

// What a shell's note says: the interface, the namespaces it came from and went to (inodes),
// dnsmasq's pid, and its state before.
struct SavedNote {
  std::string interface;
  ino_t source = 0, shell = 0;
  pid_t dnsmasq = -1;
  InterfaceState state;
};

// What the interface of index `index` has in the current namespace.
InterfaceState capture_state(unsigned index);
// The note's text (parse_note reads it back: bounded, checked, as untrusted).
std::string state_text(const std::string& interface, const InterfaceState& state, ino_t source, ino_t shell);
std::optional<SavedNote> parse_note(std::string_view text);

// Sets the link's MTU (0: unchanged) and whether it is up (nullopt: unchanged).
void set_link(unsigned index, std::optional<unsigned> mtu, std::optional<bool> up, const std::string& what);
// Puts the state back (the current namespace: where the interface came from); what cannot be put
// back is said on standard error and the rest still done.
void restore_state(const std::string& interface, const InterfaceState& state);
// Moves the interface of index `index` of the current namespace into the namespace `to`.
void move_interface(unsigned index, const FileDescriptor& to, const std::string& what);
// Whether the interface carries a default route of the current namespace.
bool carries_default_route(unsigned index);
