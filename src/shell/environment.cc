// SPDX-License-Identifier: GPL-3.0-or-later
// Capturing, clearing and giving back the user's environment (see environment.hh).
#include "shell/environment.hh"

#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include "util/file_descriptor.hh"

namespace {
// True if `entry` ("NAME=value") is the variable `name`.
bool names(const std::string& entry, std::string_view name) {
  return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=';
}
}  // namespace

UserEnvironment UserEnvironment::capture_and_clear() {
  UserEnvironment env;
  for (char** e = environ; e && *e; e++) env.entries_.emplace_back(*e);
  if (::getauxval(AT_SECURE)) {
    try {
      const std::string original = read_small_file("/proc/self/environ");  // bounded by the kernel's ARG_MAX
      const std::unordered_set<std::string_view> kept(env.entries_.begin(), env.entries_.end());
      for (size_t start = 0; start < original.size();) {
        size_t end = original.find('\0', start);
        if (end == std::string::npos) end = original.size();
        std::string entry = original.substr(start, end - start);
        start = end + 1;
        if (entry.find('=') == std::string::npos) continue;
        if (!kept.count(entry)) env.withheld_.push_back(std::move(entry));
      }
    } catch (const std::exception&) {
      // No /proc: the command gets what glibc left.
    }
  }
  clearenv();
  return env;
}

void UserEnvironment::restore_withheld() {
  for (const std::string& entry : withheld_) {
    const size_t equals = entry.find('=');
    if (!get(std::string_view(entry).substr(0, equals))) entries_.push_back(entry);
  }
  withheld_.clear();
}

const char* UserEnvironment::get(std::string_view name) const {
  for (const auto& entry : entries_) {
    if (names(entry, name)) return entry.c_str() + name.size() + 1;
  }
  return nullptr;
}

void UserEnvironment::set(std::string_view name, std::string_view value) {
  std::string entry = std::string(name) + "=" + std::string(value);
  for (auto& existing : entries_) {
    if (names(existing, name)) {
      existing = entry;
      return;
    }
  }
  entries_.push_back(entry);
}

void UserEnvironment::install() {
  pointers_.clear();
  for (auto& entry : entries_) pointers_.push_back(entry.data());
  pointers_.push_back(nullptr);
  environ = pointers_.data();
}
