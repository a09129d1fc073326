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

// Resolves `name` as resolve_command does, but the name of one of mahimahi's programs (mm-delay,
// mm-link, ...; no slash) is first looked for next to this program (own_executable(), symbolic links resolved):
// a nested shell ("mm-delay 50 mm-link ...") and mm-sweep's loads run the programs installed
// beside the one that starts them, whatever PATH holds (a prefix of the user's own, cron, a batch
// job's minimal PATH), as git runs its commands from its exec path. Not there: PATH, as bash.
std::string resolve_program(const std::string& name, const char* path_variable);
