// SPDX-License-Identifier: GPL-3.0-or-later
#include "cumulus/bulk.hh"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "http/start_line.hh"
#include "util/address.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

namespace {
constexpr size_t kFrameHeader = 5;
constexpr size_t kMaxResponseHead = 16384;

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A header value as the request may carry it: printable bytes (and tabs), bounded.
std::string header_value(std::string_view value) {
  std::string out;
  for (const char c : value.substr(0, kMaxBulkHeaderValue)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) out += c;
  }
  return out;
}

std::string one_line(std::string_view value) {
  std::string out(value);
  for (char& c : out)
    if (c == '\r' || c == '\n') c = ' ';
  return out;
}
}  // namespace

std::string percent_encode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (unreserved(u)) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); i++) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = hex_value(text[i + 1]), low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

std::string new_bulk_token() {
  unsigned char bytes[kBulkTokenBytes];
  size_t have = 0;
  while (have < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + have, sizeof bytes - have, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("getrandom");
    }
    have += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool valid_bulk_token(std::string_view text) {
  if (text.size() < kMinBulkToken || text.size() > kMaxBulkToken) return false;
  for (const char c : text)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

bool same_bulk_token(std::string_view a, std::string_view b) {
  // Every byte of the longer is looked at whatever differs: the time says nothing of the token.
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; i++) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    differ |= static_cast<unsigned char>(x ^ y);
  }
  return differ == 0 && !a.empty();
}

std::string read_bulk_token_file(const std::string& file, bool create) {
  const std::string name = printable(file, 200);
  FileDescriptor fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid() && errno == ENOENT && create) {
    FileDescriptor out(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out.valid())
      throw UserError("cannot create the token file " + name + ": " + std::strerror(errno) +
                      " (give --token-file a path in a directory of yours)");
    const std::string token = new_bulk_token();
    const std::string line = token + "\n";
    if (::write(out.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) || ::fsync(out.get()) != 0) {
      const int err = errno;
      ::unlink(file.c_str());
      throw UserError("cannot write the token file " + name + ": " + std::strerror(err));
    }
    return token;
  }
  if (!fd.valid())
    throw UserError("cannot read the token file " + name + ": " + std::strerror(errno) +
                    (errno == ELOOP ? " (it is a symbolic link: give the file itself)" : ""));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw SystemError("fstat " + name);
  if (!S_ISREG(st.st_mode)) throw UserError("the token file " + name + " is not a regular file");
  if (st.st_uid != ::geteuid())
    throw UserError("the token file " + name + " is not yours (owner uid " + std::to_string(st.st_uid) +
                    "): use a file you made");
  if (st.st_mode & 077)
    throw UserError("the token file " + name + " can be read or written by others (mode " +
                    std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                    std::to_string(st.st_mode & 7) + "): chmod 600 " + name);
  std::string text(kMaxBulkTokenFile + 1, '\0');
  size_t have = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), text.data() + have, text.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UserError("cannot read the token file " + name + ": " + std::strerror(errno));
    if (n == 0 || (have += static_cast<size_t>(n)) == text.size()) break;
  }
  if (have > kMaxBulkTokenFile)
    throw UserError("the token file " + name + " is longer than " + std::to_string(kMaxBulkTokenFile) +
                    " bytes: it holds one token");
  text.resize(have);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const std::string token(trim_blanks(text));
  if (!valid_bulk_token(token))
    throw UserError("the token file " + name + " does not hold a token (" + std::to_string(kMinBulkToken) + " to " +
                    std::to_string(kMaxBulkToken) +
                    " letters, digits, - and _): remove it, and mm-cumulus-remote --token-file makes a new one");
  return token;
}

std::optional<BulkRemote> parse_bulk_remote(std::string_view text) {
  BulkRemote remote;
  if (const size_t at = text.rfind('@'); at != std::string_view::npos) {
    remote.token = std::string(text.substr(0, at));
    if (!valid_bulk_token(remote.token)) return std::nullopt;
    text.remove_prefix(at + 1);
  }
  if (!parse_ipv4_endpoint(text)) return std::nullopt;
  remote.address = std::string(text);
  return remote;
}

std::string encode_bulk_request(const BulkRequest& request, std::string_view host) {
  std::string out = "GET " + std::string(kBulkPath) + "?url=" + percent_encode(request.url) + " HTTP/1.1\r\n";
  out += "Host: " + header_value(host) + "\r\n";
  if (!request.token.empty()) out += "Authorization: Bearer " + header_value(request.token) + "\r\n";
  if (!request.user_agent.empty()) out += "User-Agent: " + header_value(request.user_agent) + "\r\n";
  if (!request.accept_language.empty()) out += "Accept-Language: " + header_value(request.accept_language) + "\r\n";
  out += "\r\n";
  return out;
}

std::optional<BulkRequest> parse_bulk_request(std::string_view head, std::string* why) {
  auto refuse = [why](std::string reason) -> std::optional<BulkRequest> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (head.size() > kMaxBulkRequest)
    return refuse("the request is longer than " + std::to_string(kMaxBulkRequest) + " bytes");
  const size_t line_end = head.find("\r\n");
  if (line_end == std::string_view::npos) return refuse("no request line");
  const RequestLine line = split_request_line(head.substr(0, line_end));
  if (line.method != "GET" || !line.version.starts_with("HTTP/1.")) return refuse("not a GET request line");
  const std::string prefix = std::string(kBulkPath) + "?url=";
  if (!line.target.starts_with(prefix)) return refuse("not " + std::string(kBulkPath) + "?url=...");
  const std::optional<std::string> url = percent_decode(line.target.substr(prefix.size()));
  if (!url) return refuse("a malformed %-escape in the URL");
  if (url->size() > kMaxBulkUrl) return refuse("the URL is longer than " + std::to_string(kMaxBulkUrl) + " bytes");
  if (!(url->starts_with("http://") || url->starts_with("https://")) || url->size() < 9)
    return refuse("the URL is not http:// or https://");
  for (const char c : *url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return refuse("the URL holds spaces or control bytes");
  BulkRequest request;
  request.url = *url;
  size_t pos = line_end + 2;
  while (pos < head.size()) {
    const size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos || end == pos) break;
    const std::string_view field = head.substr(pos, end - pos);
    pos = end + 2;
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos) return refuse("a header line without a colon");
    const std::string_view name = field.substr(0, colon);
    // Control bytes out first, then the blanks they hid (a bare line feed ends no line here),
    // then the bound, and blanks it may have left at the end: the value is then what
    // encode_bulk_request sends again (found by fuzz-bulk-request).
    std::string visible;
    for (const char c : field.substr(colon + 1))
      if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) visible += c;
    const std::string bounded(trim_blanks(visible).substr(0, kMaxBulkHeaderValue));
    const std::string value(trim_blanks(bounded));
    if (equals_ignoring_case(name, "User-Agent")) request.user_agent = value;
    if (equals_ignoring_case(name, "Accept-Language")) request.accept_language = value;
    if (equals_ignoring_case(name, "Authorization")) {
      const std::string_view credentials = value;
      if (credentials.size() > 7 && equals_ignoring_case(credentials.substr(0, 7), "Bearer "))
        request.token = std::string(trim_blanks(credentials.substr(7)));
    }
  }
  return request;
}

std::string bulk_response_head() {
  return "HTTP/1.1 200 OK\r\nContent-Type: " + std::string(kBulkContentType) +
         "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
}

std::string bulk_error_response(int status, std::string_view reason, std::string_view text) {
  const std::string body = std::string(text) + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

std::string encode_bulk_frame_header(BulkFrameKind kind, uint32_t length) {
  std::string out;
  out += static_cast<char>(kind);
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((length >> shift) & 0xff);
  return out;
}

std::string encode_bulk_frame(BulkFrameKind kind, std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeader + payload.size());
  out = encode_bulk_frame_header(kind, static_cast<uint32_t>(payload.size()));
  out.append(payload);
  return out;
}

std::string encode_bulk_end(const std::map<std::string, std::string>& fields) {
  std::string out;
  for (const auto& [key, value] : fields) out += one_line(key) + "=" + one_line(value) + "\n";
  return out;
}

std::map<std::string, std::string> parse_bulk_end(std::string_view payload) {
  std::map<std::string, std::string> fields;
  size_t pos = 0;
  while (pos < payload.size() && fields.size() < 64) {
    size_t end = payload.find('\n', pos);
    if (end == std::string_view::npos) end = payload.size();
    const std::string_view line = payload.substr(pos, end - pos);
    pos = end + 1;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    fields.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1, kMaxBulkHeaderValue)));
  }
  return fields;
}

bool BulkDecoder::take_head() {
  const size_t end = buffer_.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (buffer_.size() > kMaxResponseHead) {
      error_ = "the Remote Proxy's answer has no header section within " + std::to_string(kMaxResponseHead) + " bytes";
      return false;
    }
    return true;
  }
  const std::string status_line = buffer_.substr(0, buffer_.find("\r\n"));
  if (!status_line.starts_with("HTTP/1.1 200") && !status_line.starts_with("HTTP/1.0 200")) {
    error_ = "the Remote Proxy answered \"" + printable(status_line, 200) + "\"";
    const std::string body = buffer_.substr(end + 4, 300);
    if (!body.empty()) error_ += ": " + printable(trim_blanks(body), 300);
    return false;
  }
  if (ascii_lowercase(buffer_.substr(0, end)).find(kBulkContentType) == std::string::npos) {
    error_ = "the Remote Proxy's answer is not " + std::string(kBulkContentType);
    return false;
  }
  offset_ = end + 4;
  head_done_ = true;
  return true;
}

bool BulkDecoder::feed(std::string_view data) {
  if (!error_.empty()) return false;
  bytes_ += data.size();
  if (ended_) {
    if (!data.empty()) error_ = "bytes after the end frame";
    return data.empty();
  }
  // What was taken is dropped before more is appended: the buffer holds at most a frame and a read.
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > (1u << 20) && offset_ * 2 > buffer_.size()) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  buffer_.append(data);
  if (!head_done_ && !take_head()) return false;
  uint32_t length;
  return frame_header(&length) || error_.empty();
}

// The header of the frame at offset_: false, with error_ set, for one outside the protocol; false
// with no error while its five bytes have not all come.
bool BulkDecoder::frame_header(uint32_t* length) {
  if (!head_done_ || buffer_.size() - offset_ < kFrameHeader) return false;
  const auto kind = static_cast<BulkFrameKind>(buffer_[offset_]);
  if (kind != BulkFrameKind::Pair && kind != BulkFrameKind::End) {
    error_ = "a frame of unknown kind " + std::to_string(static_cast<unsigned char>(buffer_[offset_]));
    return false;
  }
  uint32_t n = 0;
  for (size_t i = 1; i < kFrameHeader; i++) n = (n << 8) | static_cast<unsigned char>(buffer_[offset_ + i]);
  if (n > kMaxBulkFrame) {
    error_ = "a frame of " + std::to_string(n) + " bytes (at most " + std::to_string(kMaxBulkFrame) + ")";
    return false;
  }
  *length = n;
  return true;
}

std::optional<BulkDecoder::Frame> BulkDecoder::next() {
  if (!error_.empty() || ended_) return std::nullopt;
  uint32_t n;
  if (!frame_header(&n)) return std::nullopt;
  const auto kind = static_cast<BulkFrameKind>(buffer_[offset_]);
  if (buffer_.size() - offset_ - kFrameHeader < n) {
    if (buffer_.capacity() < offset_ + kFrameHeader + n) buffer_.reserve(offset_ + kFrameHeader + n);
    return std::nullopt;
  }
  Frame frame{kind, buffer_.substr(offset_ + kFrameHeader, n)};
  offset_ += kFrameHeader + n;
  if (kind == BulkFrameKind::End) {
    ended_ = true;
    if (offset_ != buffer_.size()) error_ = "bytes after the end frame";
  }
  return frame;
}
