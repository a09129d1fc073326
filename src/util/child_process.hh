// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Child processes, one way each: starting another program (posix_spawn, safe from a process with
// threads), forking a child that runs a function (the shells' privileged helpers), waiting for a
// child (or watching it end through a pidfd), and turning wait statuses into shell exit codes.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

// How spawn_program sets up the new program.
struct SpawnOptions {
  std::string argv0;  // its argv[0]; empty: the program's path
  // Descriptors to place on standard input, output and error; -1: this process's own is inherited.
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  bool close_other_fds = false;  // close 3 and up, even those without close-on-exec
  // Its whole environment ("NAME=value" each); nullopt: this process's environment.
  std::optional<std::vector<std::string>> environment;
  bool new_process_group = false;  // leads a process group of its own (stopping it stops its children)
  bool default_signals = false;    // nothing blocked, every signal's action the default (not inherited)
};

// Starts `program` (a path: no PATH search) with `arguments` after argv[0] and returns its pid.
// A program that cannot be run (missing, not executable) is a SystemError naming it, with the
// reason exec gave, before anything has run.
pid_t spawn_program(const std::filesystem::path& program, const std::vector<std::string>& arguments,
                    const SpawnOptions& options = {});

// Forks. The child runs body and _exits with its return value; an exception in the child is
// printed as "program: message" and the child exits 1. Returns the child's pid.
pid_t fork_child(const std::string& program, const std::function<int()>& body);

// Waits for the child `pid` to end (retrying when a signal interrupts) and returns
// shell_exit_code() of how it ended.
int wait_for_exit(pid_t pid);

// A pidfd of the process `pid` (pidfd_open): readable once it has ended. -1, with errno, if the
// kernel gives none.
int open_pidfd(pid_t pid);

// What a shell reports for a finished process: its exit code, or 128+N if killed by signal N.
int shell_exit_code(int wait_status);
// How a process ended, from shell_exit_code(): "exited with status 1", "was killed by SIGKILL".
std::string how_it_ended(int shell_code);

// The calling process's children (of every thread), living or not yet reaped, from
// /proc/self/task/*/children. A child's pid stays its own until this process reaps it, so the
// pids can be signalled safely by the only process that reaps them.
std::vector<pid_t> list_children();

// Whether the process is already on its way out: a zombie, in its exit, or with SIGKILL pending
// (as a shell's ferry is when its supervisor has just ended: PR_SET_PDEATHSIG). False if it is
// gone or cannot be read.
bool process_is_ending(pid_t pid);

// This program's own file, as the kernel knows it (/proc/self/exe: absolute, symbolic links
// resolved; where it has been replaced since, the path it had), or nullopt where /proc cannot
// tell. Programs that run their siblings look next to it first, as git looks in its exec path:
// an installed prefix works when run by its path, whatever PATH holds.
std::optional<std::string> own_executable();

// Runs `program` (as spawn_program, its standard input /dev/null) to its end and returns its
// exit code (shell_exit_code) and what it printed on standard output and error together, the
// first max_bytes of it (the rest is read and dropped, so the program never blocks on it).
struct ProgramOutput {
  int exit_code = 0;
  std::string text;
};
ProgramOutput run_for_output(const std::filesystem::path& program, const std::vector<std::string>& arguments,
                             size_t max_bytes = 64 * 1024);

// The first regular, executable file `name` in the directories of $PATH (an empty entry is the
// current directory), or nullopt.
std::optional<std::string> find_program(const std::string& name);
