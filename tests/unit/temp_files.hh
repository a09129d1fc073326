// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Temporary files and directories for unit tests: made under /tmp, removed with everything in
// them when the object goes, so that a test leaves nothing behind even when it fails.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

// A fresh directory: TempDir dir; dir.path / "file".
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/mm-unit-test-XXXXXX";
    if (!::mkdtemp(name)) throw std::runtime_error("mkdtemp failed");
    path = name;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// A file holding `text`: TempFile file("1\n2\n"); file.path.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/mm-unit-test-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    path = name;
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    if (done != text.size()) throw std::runtime_error("writing a temporary file failed");
  }
  ~TempFile() { ::unlink(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};
