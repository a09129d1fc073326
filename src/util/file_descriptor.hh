#pragma once
// Owning wrapper of a file descriptor, plus small whole-file helpers.
#include <string>
#include <string_view>

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
// Reads a whole file the user named ("-": standard input); throws UserError
// "cannot read WHAT PATH: reason".
std::string read_user_file(const std::string& path, const std::string& what);
// Overwrites a /proc/sys entry (or any existing file) with value.
void write_existing_file(const std::string& path, std::string_view value);
