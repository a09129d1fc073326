// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The bulk protocol between Cumulus's two proxies (the paper's §5.2), version 1.
//
// The Local Proxy opens a TCP connection to the Remote Proxy and sends one HTTP/1.1 request,
//
//   GET /cumulus/1/load?url=<the page's URL, percent-encoded> HTTP/1.1
//   Host: <the Remote Proxy's address>
//   Authorization: Bearer <the Remote Proxy's token>
//   User-Agent: <the user's browser's>        (the Remote Proxy's browser presents it)
//   Accept-Language: <the user's browser's>   (if it sent one)
//
// and the Remote Proxy answers "HTTP/1.1 200 OK" with Content-Type application/x-mahimahi-cumulus
// and "Connection: close", then a stream of frames until it closes the connection:
//
//   kind (1 byte) | length (4 bytes, big-endian) | payload (length bytes)
//
//   'P'  one request/response pair the Remote Proxy's browser exchanged with an origin, as soon
//        as it is whole: a MahimahiProtobufs.RequestResponse, byte for byte a recording file of
//        mm-record (so the response's body is what the origin sent: compressed as sent, chunked
//        if it was sent chunked).
//   'E'  the end of the load: "key=value" lines (status=ok|timeout|error, reason=..., pairs=N,
//        bytes=N, load_ms=..., cpu_ms=..., wall_ms=...). Nothing follows it; a load that failed
//        ends so too, with status=error or timeout and the reason.
//
// Anything else (another status, a frame of an unknown kind or beyond kMaxBulkFrame, a stream
// cut before 'E') is a failed bulk: the Local Proxy forwards what it still needs to the origins.
// A client that is not the Local Proxy can read the stream too, with the token:
// curl -H "Authorization: Bearer $TOKEN" -o - 'http://REMOTE/...'.
//
// The token (kBulkTokenBytes random bytes, in hex) is the Remote Proxy's, made when it starts or
// kept in a file of the user's (--token-file); a request without it is answered 401 and loads
// nothing. The Local Proxy learns it with the address: MAHIMAHI_CUMULUS_REMOTE=TOKEN@ADDRESS:PORT.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

inline constexpr std::string_view kBulkPath = "/cumulus/1/load";
inline constexpr std::string_view kBulkContentType = "application/x-mahimahi-cumulus";
// The largest frame: a pair beyond it is not sent (the Local Proxy forwards its request).
inline constexpr uint32_t kMaxBulkFrame = 256u << 20;
// The longest URL and header value a bulk request carries, and the largest request.
inline constexpr size_t kMaxBulkUrl = 8192, kMaxBulkHeaderValue = 1024, kMaxBulkRequest = 16384;

// The token: 16 random bytes, 32 hex digits; a token file may hold 16 to 128 of [A-Za-z0-9_-].
inline constexpr size_t kBulkTokenBytes = 16, kMinBulkToken = 16, kMaxBulkToken = 128;
// The largest token file read.
inline constexpr size_t kMaxBulkTokenFile = 4096;

enum class BulkFrameKind : char { Pair = 'P', End = 'E' };

// "%XX" for every byte outside RFC 3986's unreserved set.
std::string percent_encode(std::string_view text);
// The inverse; nullopt for a malformed escape.
std::optional<std::string> percent_decode(std::string_view text);

// What the Local Proxy asks for.
struct BulkRequest {
  std::string url;  // http:// or https://, at most kMaxBulkUrl bytes
  std::string user_agent, accept_language;
  std::string token;  // from "Authorization: Bearer TOKEN" (empty: none)
};

// A new token: kBulkTokenBytes from the kernel's random source, in hex.
std::string new_bulk_token();
// Whether `text` is a token as a token file or MAHIMAHI_CUMULUS_REMOTE may carry it.
bool valid_bulk_token(std::string_view text);
// The same token, compared in constant time.
bool same_bulk_token(std::string_view a, std::string_view b);
// The token in FILE (one line; a token file must be the user's own, a regular file, and not
// readable by others); if FILE does not exist and `create`, a new token is written to it (mode
// 0600). Throws UserError naming FILE and the fix.
std::string read_bulk_token_file(const std::string& file, bool create);

// Where the Local Proxy finds the Remote Proxy: "TOKEN@ADDRESS:PORT" (MAHIMAHI_CUMULUS_REMOTE)
// or "ADDRESS:PORT" (--remote, whose token comes from a file). nullopt if malformed.
struct BulkRemote {
  std::string token;    // empty if the text had none
  std::string address;  // "ADDRESS:PORT"
};
std::optional<BulkRemote> parse_bulk_remote(std::string_view text);

// The request's bytes (host: the Remote Proxy's "ADDRESS:PORT"). Header values are cut at
// kMaxBulkHeaderValue bytes and control bytes are dropped from them.
std::string encode_bulk_request(const BulkRequest& request, std::string_view host);

// The request in `head` (the bytes up to and including the blank line). nullopt, with the
// reason in *why, for anything else: another method or path, a URL that is not http(s), too long.
std::optional<BulkRequest> parse_bulk_request(std::string_view head, std::string* why);

// The response head the Remote Proxy sends before its frames, and its answer to a bad request.
std::string bulk_response_head();
std::string bulk_error_response(int status, std::string_view reason, std::string_view text);

// One frame's bytes; its header alone (the payload follows, `length` bytes).
std::string encode_bulk_frame(BulkFrameKind kind, std::string_view payload);
std::string encode_bulk_frame_header(BulkFrameKind kind, uint32_t length);
// An 'E' frame's payload from its fields (values: their line ends replaced by spaces), and back.
std::string encode_bulk_end(const std::map<std::string, std::string>& fields);
std::map<std::string, std::string> parse_bulk_end(std::string_view payload);

// The Local Proxy's reader of the Remote Proxy's answer: the response head, then frames, from
// bytes in any pieces. Holds at most one frame (and what arrived after it) at a time.
class BulkDecoder {
 public:
  struct Frame {
    BulkFrameKind kind;
    std::string payload;
  };
  // Takes bytes as they arrive. False once the stream is not the bulk protocol (error() says why).
  bool feed(std::string_view data);
  // The next whole frame, if one has arrived.
  std::optional<Frame> next();
  const std::string& error() const { return error_; }
  bool ended() const { return ended_; }  // the 'E' frame was taken
  uint64_t bytes() const { return bytes_; }

 private:
  bool take_head();
  bool frame_header(uint32_t* length);
  std::string buffer_;
  size_t offset_ = 0;
  bool head_done_ = false, ended_ = false;
  std::string error_;
  uint64_t bytes_ = 0;
};
