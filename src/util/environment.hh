#pragma once
// The user's environment, captured at start and removed from the (possibly setuid) process so
// that nothing privileged sees it; given back, amended, to the user's command.
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

 private:
  std::vector<std::string> entries_;  // "NAME=value"
  std::vector<char*> pointers_;
};
