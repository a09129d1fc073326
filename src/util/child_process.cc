#include "util/child_process.hh"

#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <string>

#include "util/exception.hh"

pid_t fork_child(const std::string& program, const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid < 0) throw SystemError("fork");
  if (pid > 0) return pid;
  int code = 1;
  try {
    code = body();
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << std::endl;
  }
  std::cout.flush();
  ::_exit(code);
}

int shell_exit_code(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}
