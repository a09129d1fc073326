// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The administrator's settings for the setuid programs: a root-owned file (SYSCONFDIR/mahimahi.conf)
// that is the only way to widen what root's rights do for an ordinary user. Nothing in the
// user's environment or command line can.
//
//   # comment
//   allow-address-pool 198.18.0.0/15   # ranges ordinary users may give in MAHIMAHI_ADDRESS_POOL
//   ferry-nice -20                      # priority any user's packet ferry may take
//   allow-interface usb0                # a host interface mm-eth may take for a user (one per line)
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/address.hh"

struct AdministratorConfig {
  std::vector<Ipv4Net> allowed_pools;   // besides private and shared address space
  std::optional<int> ferry_nice;        // -20..19
  std::vector<std::string> interfaces;  // mm-eth may take these for any user (allow-interface)

  // Parses the text of a configuration file; throws UserError naming the line of `source`.
  static AdministratorConfig parse(const std::string& text, const std::string& source);

  // Reads the installed file if it exists and can only have been written by root (owned by
  // root, not writable by group or others, in a directory with the same property); an absent
  // file is an empty configuration, an untrustworthy one is an error for the administrator.
  static AdministratorConfig load();
  static AdministratorConfig load(const std::string& path);
};

extern const char* const kAdministratorConfigPath;

// Whether `name` is spelt as an interface the shells take (1-15 of a-z, A-Z, 0-9, '.', '_', '-';
// not "." or ".."): the kernel's own rule, less the characters it allows that no tool writes.
bool is_interface_name(std::string_view name);
