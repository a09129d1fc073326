#include "environment.hh"

#include <cstdlib>
#include <unistd.h>

UserEnvironment UserEnvironment::capture_and_clear() {
  UserEnvironment env;
  for (char** e = environ; e && *e; e++) env.entries_.emplace_back(*e);
  clearenv();
  return env;
}

const char* UserEnvironment::get(std::string_view name) const {
  for (const auto& entry : entries_) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=')
      return entry.c_str() + name.size() + 1;
  }
  return nullptr;
}

void UserEnvironment::set(std::string_view name, std::string_view value) {
  std::string entry = std::string(name) + "=" + std::string(value);
  for (auto& existing : entries_) {
    if (existing.size() > name.size() && existing.compare(0, name.size(), name) == 0 && existing[name.size()] == '=') {
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
