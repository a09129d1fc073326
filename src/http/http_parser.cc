// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/http_parser.hh"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

#include "http/chunked.hh"
#include "http/start_line.hh"
#include "util/text.hh"

namespace {

// How many leading bytes of a start line are checked as they arrive, so that a stream which is
// not HTTP (TLS, binary) fails on its first bytes instead of after a line end that never comes.
constexpr size_t kStartLinePrefix = 40;
// Longer than any registered method (the WebDAV ones top out near 20 characters).
constexpr size_t kMaxMethodLength = 32;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
// Methods are tokens; in practice uppercase letters, with '-' or '_' in some extensions
// (VERSION-CONTROL). Anything else on the first byte means "not an HTTP request".
bool is_method_char(char c) { return is_upper(c) || c == '-' || c == '_'; }
bool is_ows(char c) { return c == ' ' || c == '\t'; }

// RFC 9110 tchar: what a field name may contain.
bool is_tchar(char c) {
  if (is_digit(c) || is_upper(c) || (c >= 'a' && c <= 'z')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

// The request target: visible characters (bytes past ASCII tolerated, as some clients send raw UTF-8).
bool is_target_char(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte > 0x20 && byte != 0x7f;
}

// A complete line without its terminator (LF, or CRLF).
std::string_view without_line_end(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// "HTTP/1.x": this parser speaks HTTP/1.0 and 1.1 framing (any minor digit is accepted).
bool is_http1_version(std::string_view v) { return v.size() == 8 && v.substr(0, 7) == "HTTP/1." && is_digit(v[7]); }

enum class TransferCoding { Absent, ChunkedLast, Other };

// Transfer-Encoding may be split over several fields; only the final coding decides framing.
TransferCoding transfer_coding(const HttpMessage& message) {
  bool present = false;
  std::string_view last;
  for (const HttpHeader& field : message.headers) {
    if (!equals_ignoring_case(field.key, "Transfer-Encoding")) continue;
    present = true;
    std::string_view rest = field.value;
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view element = trim_blanks(rest.substr(0, comma));
      if (!element.empty()) last = element;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (!present) return TransferCoding::Absent;
  const std::string_view coding = trim_blanks(last.substr(0, last.find(';')));  // drop parameters
  return equals_ignoring_case(coding, "chunked") ? TransferCoding::ChunkedLast : TransferCoding::Other;
}

struct ContentLength {
  bool present = false;
  bool valid = true;
  uint64_t value = 0;
};

// All Content-Length fields (and comma-separated repeats within one) must agree (RFC 9110 8.6).
ContentLength content_length(const HttpMessage& message) {
  ContentLength result;
  for (const HttpHeader& field : message.headers) {
    if (!equals_ignoring_case(field.key, "Content-Length")) continue;
    std::string_view rest = field.value;
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view element = trim_blanks(rest.substr(0, comma));
      uint64_t value = 0;
      bool digits_ok = !element.empty();
      for (char c : element) {
        if (!is_digit(c) || value > (UINT64_MAX - static_cast<uint64_t>(c - '0')) / 10) {
          digits_ok = false;
          break;
        }
        value = value * 10 + static_cast<uint64_t>(c - '0');
      }
      if (!digits_ok || (result.present && value != result.value)) {
        result.valid = false;
        return result;
      }
      result.present = true;
      result.value = value;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return result;
}

// Finds the end of the line starting at data[pos]: the position just past its LF, or data.size()
// (with *complete false) if the line continues in a later feed.
size_t line_end(std::string_view data, size_t pos, bool* complete) {
  const void* lf = std::memchr(data.data() + pos, '\n', data.size() - pos);
  *complete = lf != nullptr;
  return lf ? static_cast<size_t>(static_cast<const char*>(lf) - data.data()) + 1 : data.size();
}

}  // namespace

HttpParser::HttpParser(Direction direction) : direction_(direction) {}

void HttpParser::expect_response_to(std::string_view method) { expected_methods_.emplace_back(method); }

HttpParser::Completed HttpParser::pop_completed() {
  if (completed_.empty()) throw std::logic_error("HttpParser::pop_completed: no completed message");
  Completed oldest = std::move(completed_.front());
  completed_.pop_front();
  return oldest;
}

size_t HttpParser::feed(std::string_view data) { return consume(data, false); }

size_t HttpParser::feed_step(std::string_view data) { return consume(data, true); }

const HttpMessage* HttpParser::head() const {
  return state_ == State::Http && phase_ != Phase::Head ? &current_ : nullptr;
}

const HttpParser::Completed& HttpParser::front_completed() const {
  if (completed_.empty()) throw std::logic_error("HttpParser::front_completed: no completed message");
  return completed_.front();
}

size_t HttpParser::consume(std::string_view data, bool one_step) {
  if (state_ != State::Http) return 0;
  size_t pos = 0;
  size_t boundary = 0;  // where the last complete message (or skipped empty line) of this call ends
  while (pos < data.size() && state_ == State::Http) {
    const Phase phase_before = phase_;
    const size_t completed_before = completed_.size();
    switch (phase_) {
      case Phase::Head:
        pos = consume_head(data, pos);
        break;
      case Phase::FixedBody:
      case Phase::ChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(body_remaining_, data.size() - pos));
        current_.body.append(data.data() + pos, n);
        pos += n;
        body_remaining_ -= n;
        if (body_remaining_ == 0) {
          if (phase_ == Phase::FixedBody) {
            complete_message(false);
          } else {
            phase_ = Phase::ChunkDataEnd;
            saw_cr_ = false;
          }
        }
        break;
      }
      case Phase::CloseBody:
        current_.body.append(data.data() + pos, data.size() - pos);
        pos = data.size();
        break;
      case Phase::ChunkSize:
        pos = consume_chunk_size(data, pos);
        break;
      case Phase::ChunkDataEnd:
        pos = consume_chunk_data_end(data, pos);
        break;
      case Phase::Trailer:
        pos = consume_trailer(data, pos);
        break;
    }
    trim_body();
    if (state_ != State::Error && !in_message()) boundary = pos;
    if (one_step && (completed_.size() != completed_before || (phase_before == Phase::Head && phase_ != Phase::Head)))
      break;
  }
  return state_ == State::Error ? boundary : pos;
}

bool HttpParser::finish() {
  if (state_ == State::Error) return false;
  if (state_ == State::Tunnel) return true;
  if (phase_ == Phase::CloseBody) {
    complete_message(false);
    return true;
  }
  const bool clean = !in_message();
  reset_message();  // a message cut short is not recorded
  return clean;
}

size_t HttpParser::consume_head(std::string_view data, size_t pos) {
  if (!in_message()) {
    // Between messages: skip empty lines (RFC 9112 section 2.2), and stop there so that feed()
    // counts them as consumed even if the next message turns out to be unparsable.
    const size_t start = pos;
    while (pos < data.size() && (data[pos] == '\r' || data[pos] == '\n')) pos++;
    if (pos != start) return pos;
  }

  bool complete = false;
  const size_t end = line_end(data, pos, &complete);
  head_bytes_ += end - pos;
  if (head_bytes_ > kMaxHeaderSection) {
    fail("header section larger than 1 MiB");
    return pos;
  }
  const size_t checked_before = line_.size();
  line_.append(data.data() + pos, end - pos);
  pos = end;
  if (!have_start_line_ && checked_before < kStartLinePrefix && !check_start_line_prefix()) return pos;
  if (!complete) return pos;

  const std::string_view line = without_line_end(line_);
  if (!have_start_line_) {
    if (!parse_start_line(line)) return pos;
    have_start_line_ = true;
  } else if (line.empty()) {
    line_.clear();
    start_body();
    return pos;
  } else {
    HttpHeader field;
    if (!parse_field_line(line, &field)) return pos;
    current_.headers.push_back(std::move(field));
  }
  line_.clear();
  return pos;
}

bool HttpParser::check_start_line_prefix() {
  std::string_view prefix = std::string_view(line_).substr(0, kStartLinePrefix);
  if (prefix.size() < kStartLinePrefix || prefix.back() == '\n') prefix = without_line_end(prefix);

  if (direction_ == Direction::Request) {
    // METHOD SP ...: the method is checked byte by byte, so TLS or binary data fails at once.
    for (size_t i = 0; i < prefix.size(); i++) {
      if (prefix[i] == ' ' && i > 0) return true;
      if (!is_method_char(prefix[i])) {
        fail("request line does not start with a method");
        return false;
      }
      if (i + 1 > kMaxMethodLength) {
        fail("request method too long");
        return false;
      }
    }
    return true;
  }

  // "HTTP/1.x DDD" then SP or the line end.
  static constexpr std::string_view shape = "HTTP/1.d dddx";
  for (size_t i = 0; i < prefix.size() && i < shape.size(); i++) {
    const char c = prefix[i];
    bool ok;
    switch (shape[i]) {
      case 'd':
        ok = is_digit(c);
        break;
      case 'x':
        ok = c == ' ' || c == '\r';
        break;
      default:
        ok = c == shape[i];
        break;
    }
    if (!ok) {
      fail("not an HTTP/1.x status line");
      return false;
    }
  }
  return true;
}

bool HttpParser::parse_start_line(std::string_view line) {
  if (direction_ == Direction::Request) {
    // method SP request-target SP HTTP-version: with single spaces only, as the target and the
    // version cannot hold one.
    const RequestLine request = split_request_line(line);
    if (request.method.empty() || request.target.empty() ||
        !std::all_of(request.method.begin(), request.method.end(), is_method_char) ||
        !std::all_of(request.target.begin(), request.target.end(), is_target_char) ||
        !is_http1_version(request.version)) {
      fail("request line is not METHOD SP target SP HTTP/1.x");
      return false;
    }
  } else {
    // HTTP-version SP 3DIGIT [SP reason]: the reason may be empty or missing altogether.
    const StatusLine status = split_status_line(line);
    const std::optional<int> code = three_digit_status(status.code);
    if (!is_http1_version(status.version) || !code) {
      fail("not an HTTP/1.x status line");
      return false;
    }
    status_code_ = *code;
    if (status_code_ < 100) {
      fail("invalid status code");
      return false;
    }
  }
  current_.first_line = line;
  return true;
}

bool HttpParser::parse_field_line(std::string_view line, HttpHeader* field) {
  if (is_ows(line.front())) {
    fail("obsolete line folding");  // RFC 9112 section 5.2 lets a recipient reject it
    return false;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    fail("header line without a colon");
    return false;
  }
  const std::string_view name = line.substr(0, colon);
  if (name.empty() || !std::all_of(name.begin(), name.end(), is_tchar)) {
    fail("invalid header name");  // includes whitespace before the colon (RFC 9112 section 5.1)
    return false;
  }
  if (field) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && is_ows(value.front())) value.remove_prefix(1);
    field->key = name;
    field->value = value;  // trailing whitespace kept: the recording reproduces what was sent
  }
  return true;
}

void HttpParser::start_body() {
  if (direction_ == Direction::Response) {
    const bool interim = status_code_ < 200 && status_code_ != 101;
    if (interim) {  // 100 Continue, 103 Early Hints...: the final response to the same request follows
      complete_message(true);
      return;
    }
    std::string method = "GET";  // a response nobody asked for: assume the common case
    if (!expected_methods_.empty()) {
      method = std::move(expected_methods_.front());
      expected_methods_.pop_front();
    }
    if (status_code_ == 101 || (method == "CONNECT" && status_code_ / 100 == 2)) {
      complete_message(false);
      state_ = State::Tunnel;
      return;
    }
    if (method == "HEAD" || status_code_ == 204 || status_code_ == 304) {
      complete_message(false);
      return;
    }
  }

  switch (transfer_coding(current_)) {
    case TransferCoding::ChunkedLast:
      phase_ = Phase::ChunkSize;
      body_line_start_ = 0;
      return;
    case TransferCoding::Other:
      if (direction_ == Direction::Request) {
        fail("transfer-encoding does not end in chunked");  // RFC 9112 section 6.3: 400
      } else {
        phase_ = Phase::CloseBody;  // RFC 9112 section 6.3: read until the connection closes
      }
      return;
    case TransferCoding::Absent:
      break;
  }

  const ContentLength length = content_length(current_);
  if (!length.valid) {
    fail("invalid Content-Length");
    return;
  }
  if (length.present) {
    if (length.value == 0) {
      complete_message(false);
      return;
    }
    const uint64_t reserve = std::min<uint64_t>(length.value, kMaxBodyReserve);
    current_.body.reserve(static_cast<size_t>(body_limit_ > 0 ? std::min(reserve, body_limit_) : reserve));
    body_remaining_ = length.value;
    phase_ = Phase::FixedBody;
  } else if (direction_ == Direction::Response) {
    phase_ = Phase::CloseBody;
  } else {
    complete_message(false);  // a request without framing fields has no body
  }
}

size_t HttpParser::consume_chunk_size(std::string_view data, size_t pos) {
  const size_t line_so_far = current_.body.size() - body_line_start_;
  bool complete = false;
  const size_t end = line_end(data, pos, &complete);
  if (line_so_far + (end - pos) > kMaxChunkSizeLine) {
    fail("chunk size line too long");
    return pos;
  }
  // The line must start with a hex digit: reject garbage without waiting for a line end.
  if (line_so_far == 0 && hex_digit_value(data[pos]) < 0) {
    fail("invalid chunk size");
    return pos;
  }
  current_.body.append(data.data() + pos, end - pos);
  pos = end;
  if (!complete) return pos;

  // chunk-size [BWS ";" extensions]: extensions are recorded with the body, not interpreted.
  const std::string_view line = without_line_end(std::string_view(current_.body).substr(body_line_start_));
  uint64_t size = 0;
  size_t i = 0;
  for (; i < line.size() && hex_digit_value(line[i]) >= 0; i++) {
    if (size >> 60) {
      fail("invalid chunk size");  // does not fit in 64 bits
      return pos;
    }
    size = (size << 4) | static_cast<uint64_t>(hex_digit_value(line[i]));
  }
  while (i < line.size() && is_ows(line[i])) i++;
  if (i < line.size() && line[i] != ';') {
    fail("invalid chunk size");
    return pos;
  }

  if (size == 0) {  // the last chunk: trailer fields follow, up to an empty line
    phase_ = Phase::Trailer;
    trailer_bytes_ = 0;
  } else {
    phase_ = Phase::ChunkData;
    body_remaining_ = size;
  }
  body_line_start_ = current_.body.size();
  return pos;
}

size_t HttpParser::consume_chunk_data_end(std::string_view data, size_t pos) {
  const char c = data[pos];
  if (c == '\r' && !saw_cr_) {
    saw_cr_ = true;
  } else if (c == '\n') {
    phase_ = Phase::ChunkSize;
    body_line_start_ = current_.body.size() + 1;
  } else {
    fail("chunk data not followed by a line end");
    return pos;
  }
  current_.body.push_back(c);
  return pos + 1;
}

size_t HttpParser::consume_trailer(std::string_view data, size_t pos) {
  bool complete = false;
  const size_t end = line_end(data, pos, &complete);
  trailer_bytes_ += end - pos;
  if (trailer_bytes_ > kMaxHeaderSection) {
    fail("trailer section larger than 1 MiB");
    return pos;
  }
  current_.body.append(data.data() + pos, end - pos);
  pos = end;
  if (!complete) return pos;

  const std::string_view line = without_line_end(std::string_view(current_.body).substr(body_line_start_));
  if (line.empty()) {
    complete_message(false);
    return pos;
  }
  if (!parse_field_line(line, nullptr)) return pos;
  body_line_start_ = current_.body.size();
  return pos;
}

void HttpParser::complete_message(bool interim) {
  uint64_t dropped = 0;
  if (body_limit_ > 0 && (dropped_ > 0 || current_.body.size() > body_limit_)) {
    dropped = dropped_ + current_.body.size();
    current_.body.clear();
    current_.body.shrink_to_fit();
  }
  completed_.push_back({std::move(current_), interim, dropped});
  reset_message();
}

void HttpParser::trim_body() {
  if (body_limit_ == 0 || phase_ == Phase::Head) return;
  if (dropped_ == 0 && current_.body.size() <= body_limit_) return;
  // Past the limit: only the line being parsed (a chunk-size or trailer line) is still needed.
  const bool in_line = phase_ == Phase::ChunkSize || phase_ == Phase::Trailer;
  const size_t keep_from = in_line ? std::min(body_line_start_, current_.body.size()) : current_.body.size();
  dropped_ += keep_from;
  current_.body.erase(0, keep_from);
  // What a large piece made it allocate goes back (it would stay for the rest of the message).
  if (current_.body.capacity() > 2 * body_limit_ + 65536) current_.body.shrink_to_fit();
  body_line_start_ = body_line_start_ > keep_from ? body_line_start_ - keep_from : 0;
}

void HttpParser::reset_message() {
  current_ = HttpMessage{};
  phase_ = Phase::Head;
  have_start_line_ = false;
  line_.clear();
  head_bytes_ = 0;
  status_code_ = 0;
  body_remaining_ = 0;
  body_line_start_ = 0;
  trailer_bytes_ = 0;
  saw_cr_ = false;
  dropped_ = 0;
}

void HttpParser::fail(std::string why) {
  state_ = State::Error;
  error_ = std::move(why);
}
