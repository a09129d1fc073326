// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Owning wrapper of a file descriptor, plus small whole-file helpers.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { close(); }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void close();

 private:
  int fd_ = -1;
};

// Writes all of data, retrying on EINTR and short writes. Throws SystemError.
void write_all(int fd, std::string_view data);
// Reads a whole (small) file such as a /proc entry; throws SystemError naming the path.
std::string read_small_file(const std::string& path);
// A kernel setting's text (/proc/sys/...) without its trailing newline and spaces, or nullopt if
// it cannot be read (a kernel without that setting).
std::optional<std::string> read_setting(const std::string& path);
// Reads a whole file the user named ("-": standard input) of at most max_bytes bytes. Regular
// files, pipes and FIFOs (e.g. <(command)) are read; opening a FIFO never blocks; a device
// (/dev/zero, also as standard input unless a terminal), directory or socket is refused. Throws
// UserError "cannot read WHAT PATH: reason", or "WHAT PATH is larger than LIMIT (the limit); FIX"
// without reading more than the limit (a pipe's text grows by doubling: at most twice the limit
// in memory).
std::string read_user_file(const std::string& path, const std::string& what, uint64_t max_bytes, std::string_view fix);
// How messages name a file operand: "standard input" for "-", the path otherwise.
std::string user_file_name(const std::string& path);
// A file the user asked a program to write: "-" is standard output (a duplicate of it); else
// created with mode 0644, and an existing one refused unless `force` (then truncated). Throws
// UserError naming the path and the fix (another name, or --force).
FileDescriptor create_output_file(const std::string& path, bool force);
// The largest message protobuf parses (INT_MAX bytes): the bound of a recording file.
inline constexpr uint64_t kMaxProtobufBytes = 2147483647;
// "128 MiB", "2 GiB", "1.5 KiB", "100 bytes": a size for messages.
std::string format_size(uint64_t bytes);
// Overwrites a /proc/sys entry (or any existing file) with value.
void write_existing_file(const std::string& path, std::string_view value);

// Sends `fds` (at most kMaxPassedDescriptors) with one byte over a Unix socket (SCM_RIGHTS).
constexpr size_t kMaxPassedDescriptors = 64;
void send_descriptors(int socket, const std::vector<int>& fds);
// Receives what send_descriptors sent (throws at end-of-file or if some were cut off).
std::vector<FileDescriptor> receive_descriptors(int socket);
