// SPDX-License-Identifier: GPL-3.0-or-later
// The user's environment: captured and cleared, read and amended, installed for the command.
#include <cstdlib>
#include <string>
#include <vector>

#include "expect.hh"
#include "shell/environment.hh"

namespace {
// Puts this process's environment back as it was when the test began.
class SavedEnvironment {
 public:
  SavedEnvironment() {
    for (char** e = environ; e && *e; e++) entries_.emplace_back(*e);
  }
  ~SavedEnvironment() {
    clearenv();
    for (const std::string& entry : entries_) {
      const size_t equals = entry.find('=');
      ::setenv(entry.substr(0, equals).c_str(), entry.substr(equals + 1).c_str(), 1);
    }
  }

 private:
  std::vector<std::string> entries_;
};
}  // namespace

TEST(Environment, captured_cleared_amended_and_installed) {
  SavedEnvironment saved;
  ::setenv("MM_UNIT_VARIABLE", "one", 1);
  {
    UserEnvironment env = UserEnvironment::capture_and_clear();
    ASSERT_EQ(std::getenv("MM_UNIT_VARIABLE"), nullptr);  // nothing privileged sees it
    ASSERT_EQ(std::string(env.get("MM_UNIT_VARIABLE")), "one");
    ASSERT_EQ(env.get("MM_UNIT"), nullptr);  // a prefix of a name is not the name
    env.set("MM_UNIT_VARIABLE", "two");
    env.set("MM_UNIT_OTHER", "three");
    env.restore_withheld();  // not setuid: glibc withheld nothing
    env.install();
    ASSERT_EQ(std::string(std::getenv("MM_UNIT_VARIABLE")), "two");
    ASSERT_EQ(std::string(std::getenv("MM_UNIT_OTHER")), "three");
    clearenv();  // before env's storage goes
  }
}
