// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The privilege mode, apart from the set-up (privileged.hh) so that the root helpers
// (root_helper.hh) can ask it without including the set-up they serve.

// Where a shell's rights come from; decided once, by acquire_privileges, before any set-up.
enum class PrivilegeMode {
  Root,      // run by root: every process is root and nothing is dropped
  Setuid,    // installed setuid root, run by a user: root's rights serve the set-up only
  Rootless,  // neither, or MAHIMAHI_ROOTLESS=1: user namespaces of the user's own (rootless.hh)
};

// The mode acquire_privileges (privileged.hh) decided (Setuid before it has).
PrivilegeMode privilege_mode();
