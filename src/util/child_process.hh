#pragma once
// Forking children that run a function, and turning wait statuses into shell exit codes.
#include <sys/types.h>

#include <functional>
#include <string>

// Forks. The child runs body and _exits with its return value; an exception in the child is
// printed as "program: message" and the child exits 1. Returns the child's pid.
pid_t fork_child(const std::string& program, const std::function<int()>& body);

// What a shell reports for a finished process: its exit code, or 128+N if killed by signal N.
int shell_exit_code(int wait_status);
