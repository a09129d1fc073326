// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Finding the program a shell runs, before anything is set up: as bash finds it, with the caller's
// rights, so that a mistyped command costs no namespace, and reports what bash would report.
#include <string>

// The default search path when PATH is unset (bash's and glibc's choice for ordinary users).
inline constexpr const char* kDefaultCommandPath = "/usr/local/bin:/usr/bin:/bin";

// The longest PATH searched; a longer one is refused (every input has a bound).
inline constexpr size_t kMaxCommandPath = 64 * 1024;

// Resolves `name` (argv[0] of the command) to the path to execute. A name with a slash is used as
// it is; any other is searched in `path_variable` (colon-separated; an empty entry is the current
// directory; nullptr: kDefaultCommandPath), and the first regular file the caller may execute
// wins; a directory the caller cannot search is passed over, as bash does. Checks use access(2),
// which applies the REAL user and group IDs: in a setuid program, the caller's rights.
// Throws StatusError: "NAME: command not found" (127), "NAME: No such file or directory" (127),
// "NAME: Permission denied" (126, a file found but not executable), "NAME: Is a directory" (126).
std::string resolve_command(const std::string& name, const char* path_variable);
