// SPDX-License-Identifier: GPL-3.0-or-later
// The administrator's root-owned configuration file: parsing and the ownership checks (see
// admin_config.hh).
#include "shell/admin_config.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "util/exception.hh"
#include "util/file_descriptor.hh"

#ifndef MAHIMAHI_CONFIG_FILE
#define MAHIMAHI_CONFIG_FILE "/etc/mahimahi.conf"
#endif

const char* const kAdministratorConfigPath = MAHIMAHI_CONFIG_FILE;

namespace {

constexpr size_t kMaxConfigBytes = 64 * 1024;
constexpr size_t kMaxAllowedPools = 256;
constexpr size_t kMaxAllowedInterfaces = 256;

bool only_root_can_write(const struct stat& st) { return st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0; }

}  // namespace

AdministratorConfig AdministratorConfig::parse(const std::string& text, const std::string& source) {
  AdministratorConfig config;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); number++) {
    const std::string where = source + ":" + std::to_string(number);
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string key, value, extra;
    if (!(words >> key)) continue;
    if (!(words >> value) || (words >> extra)) throw UserError(where + ": expected \"KEY VALUE\"");
    if (key == "allow-address-pool") {
      const auto pool = Ipv4Net::parse(value);
      if (!pool) throw UserError(where + ": \"" + value + "\" is not a subnet such as 198.18.0.0/15");
      if (config.allowed_pools.size() == kMaxAllowedPools)
        throw UserError(where + ": too many allow-address-pool lines");
      config.allowed_pools.push_back(*pool);
    } else if (key == "ferry-nice") {
      int nice = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), nice);
      if (ec != std::errc() || end != value.data() + value.size() || nice < -20 || nice > 19)
        throw UserError(where + ": ferry-nice must be a nice value from -20 to 19");
      config.ferry_nice = nice;
    } else if (key == "allow-interface") {
      if (!is_interface_name(value))
        throw UserError(where + ": \"" + value + "\" is not an interface's name (1 to 15 of a-z, A-Z, 0-9, . _ -)");
      if (config.interfaces.size() == kMaxAllowedInterfaces)
        throw UserError(where + ": too many allow-interface lines");
      config.interfaces.push_back(value);
    } else {
      throw UserError(where + ": unknown setting \"" + key +
                      "\" (known: allow-address-pool, ferry-nice, allow-interface)");
    }
  }
  return config;
}

bool is_interface_name(std::string_view name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

AdministratorConfig AdministratorConfig::load() { return load(kAdministratorConfigPath); }

AdministratorConfig AdministratorConfig::load(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return {};
    throw SystemError("reading the administrator's configuration " + path);
  }
  struct stat st {};
  check_syscall("fstat " + path, ::fstat(fd.get(), &st));
  const std::string directory = path.substr(0, path.rfind('/') + 1);
  struct stat dir_st {};
  const bool directory_safe =
      ::stat(directory.empty() ? "." : directory.c_str(), &dir_st) == 0 && only_root_can_write(dir_st);
  if (!S_ISREG(st.st_mode) || !only_root_can_write(st) || !directory_safe ||
      st.st_size > static_cast<off_t>(kMaxConfigBytes)) {
    throw UserError("the administrator's configuration " + path +
                    " is ignored and the shell refused: it must be a regular file of at most 64 KiB, owned by root and "
                    "writable by root only, in a directory writable by root only (chown root: and chmod go-w both)");
  }
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("reading " + path);
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes) throw UserError(path + " is larger than 64 KiB");
  }
  return parse(text, path);
}
