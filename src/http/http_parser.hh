// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An incremental HTTP/1.x parser for one direction of one connection (RFC 9112 framing).
// The recording proxy forwards bytes as they arrive and feeds the same bytes here, in whatever
// pieces the socket delivered, to learn where each message ends; it never waits for a whole
// message. Messages are recorded as they crossed the wire (see http_message.hh): bodies keep
// their chunk framing and trailers, so the recording replays byte for byte.
//
// It stops being HTTP when a response switches protocols (101, or 2xx to CONNECT: the rest is
// a tunnel) or when the bytes cannot be HTTP/1.x (e.g. TLS sent to a plain-HTTP port): the
// caller keeps forwarding but stops recording.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "http/http_message.hh"

class HttpParser {
 public:
  enum class Direction { Request, Response };
  enum class State { Http, Tunnel, Error };

  explicit HttpParser(Direction direction);

  // Response side only: the method of each request sent on this connection, in order (call it
  // when a request is complete, before or while its response is parsed). HEAD => no body;
  // CONNECT + 2xx => the connection becomes a tunnel. A response with none queued counts as GET.
  void expect_response_to(std::string_view method);

  // Consumes bytes as they arrive (any split, down to 1 byte at a time). Returns how many bytes
  // of `data` were HTTP; fewer than data.size() only when the state left Http during this call:
  //  - Tunnel: everything up to the end of the 101 / 2xx-to-CONNECT response, not the tunnel bytes;
  //  - Error: the bytes before the start of the message that could not be parsed (0 if that
  //    message began in an earlier call); that message is dropped.
  // Empty lines between messages are skipped (and count as consumed). Once not Http, returns 0.
  size_t feed(std::string_view data);

  // As feed, but stops as soon as a message's header section has ended or a message is
  // complete (whichever comes first), so that the caller knows which bytes belong to it
  // (mm-record --deterministic holds an HTML page back to change it). Returns the bytes consumed.
  size_t feed_step(std::string_view data);
  // The message being parsed, once its header section has ended (its body is coming), else null.
  const HttpMessage* head() const;
  // The peer closed its direction. Completes a close-delimited response body (pushes that
  // message). Returns true if the stream ended cleanly between messages (or a close-delimited
  // body ended), false if a message was cut short (that message is dropped) or after an Error.
  bool finish();

  State state() const { return state_; }
  // Why, when state() == Error (e.g. "header line without a colon", "invalid chunk size").
  const std::string& error() const { return error_; }
  // Bytes of an unfinished message have been consumed.
  bool in_message() const { return phase_ != Phase::Head || have_start_line_ || !line_.empty(); }

  struct Completed {
    HttpMessage message;
    bool interim;  // a 1xx response other than 101 (100 Continue, 103 Early Hints)
    // With a body limit: the body passed it, so it was counted, not kept (message.body is empty).
    uint64_t dropped_body_bytes;
  };

  // Bodies beyond `bytes` are counted, not kept (0, the default: every body is kept whole), so
  // that a relay that records (mm-record --max-body) holds at most that much of a message: the
  // framing is still followed, and the message completes with dropped_body_bytes set.
  void set_body_limit(uint64_t bytes) { body_limit_ = bytes; }
  bool has_completed() const { return !completed_.empty(); }
  Completed pop_completed();                 // oldest first; throws std::logic_error if !has_completed()
  const Completed& front_completed() const;  // the one pop_completed would return

  // state() == Tunnel because of 101 Switching Protocols or a 2xx response to CONNECT.
  bool upgraded() const { return state_ == State::Tunnel; }

  static constexpr size_t kMaxHeaderSection = 1 << 20;   // start line + fields (and trailer section)
  static constexpr size_t kMaxChunkSizeLine = 64 << 10;  // size + extensions
  static constexpr size_t kMaxBodyReserve = 64 << 20;    // Content-Length may lie: grow beyond this as bytes come

 private:
  enum class Phase {
    Head,          // start line and header fields (and empty lines before them)
    FixedBody,     // Content-Length bytes
    CloseBody,     // until finish()
    ChunkSize,     // the chunk-size line (size, extensions, line end)
    ChunkData,     // chunk bytes
    ChunkDataEnd,  // the line end after chunk bytes
    Trailer,       // trailer fields up to the empty line
  };

  size_t consume(std::string_view data, bool one_step);  // feed, feed_step
  // Each consumes from data[pos...] and returns the new position; each stops at a phase change.
  size_t consume_head(std::string_view data, size_t pos);
  size_t consume_chunk_size(std::string_view data, size_t pos);
  size_t consume_chunk_data_end(std::string_view data, size_t pos);
  size_t consume_trailer(std::string_view data, size_t pos);

  bool check_start_line_prefix();  // reject non-HTTP bytes before their line ends
  bool parse_start_line(std::string_view line);
  bool parse_field_line(std::string_view line, HttpHeader* field);  // nullptr: validate only
  void start_body();                                                // the header section ended: choose the framing
  void complete_message(bool interim);
  void trim_body();      // with a body limit: drops what the framing no longer needs
  void reset_message();  // forget the message in progress
  void fail(std::string why);

  Direction direction_;
  State state_ = State::Http;
  std::string error_;
  Phase phase_ = Phase::Head;

  std::deque<std::string> expected_methods_;  // response side: requests not yet answered
  std::deque<Completed> completed_;

  HttpMessage current_;
  bool have_start_line_ = false;
  std::string line_;             // the unfinished line of the header section
  size_t head_bytes_ = 0;        // header section bytes so far (for the size cap)
  int status_code_ = 0;          // response side: of the message being parsed
  uint64_t body_remaining_ = 0;  // FixedBody / ChunkData: bytes still to come
  size_t body_line_start_ = 0;   // ChunkSize / Trailer: where the current line starts in current_.body
  size_t trailer_bytes_ = 0;     // trailer section bytes so far (for the size cap)
  bool saw_cr_ = false;          // ChunkDataEnd: the CR of the CRLF has been seen
  uint64_t body_limit_ = 0;      // 0: none
  uint64_t dropped_ = 0;         // body bytes of the current message counted, not kept
};
