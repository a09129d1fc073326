// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The user's environment, captured at start and removed from the (possibly setuid) process so
// that nothing privileged sees it; given back, amended, to the user's command.
//
// For a setuid program glibc removes, before main, the variables it deems unsafe for a
// privileged process (LD_*, TMPDIR, LOCALDOMAIN, HOSTALIASES, RES_OPTIONS, GCONV_PATH, ...).
// They are recovered from /proc/self/environ (the kernel's copy of what the caller passed) and
// given back to the command only, which runs with the user's rights and nothing more: there
// they are as safe as in any program the user starts.
#include <string>
#include <string_view>
#include <vector>

class UserEnvironment {
 public:
  static UserEnvironment capture_and_clear();

  const char* get(std::string_view name) const;  // nullptr if unset
  void set(std::string_view name, std::string_view value);
  // Installs this environment as the process's own (for execvp's PATH search) .
  void install();
  // Adds back the variables glibc withheld from the setuid process (call in the command only).
  void restore_withheld();

 private:
  std::vector<std::string> entries_;   // "NAME=value"
  std::vector<std::string> withheld_;  // removed by glibc's secure mode
  std::vector<char*> pointers_;
};
