// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Content codings (RFC 9110 section 8.4.1) of stored messages: recordings keep bodies
// compressed as they crossed the wire, and whoever needs the content itself (HAR export,
// mm-recording show --decode) decodes it here. gzip (and x-gzip), deflate (zlib-wrapped as the
// RFC says, or raw as some servers send it) and br (brotli) are known; identity is no coding.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_message.hh"

// Decoded content larger than this is refused rather than held in memory (a compression bomb
// in a recording must not exhaust the machine of whoever looks at it).
constexpr size_t kMaxDecodedContent = size_t{1} << 30;

// The codings of the message's Content-Encoding fields in the order they were applied,
// lower-cased, "identity" and empty list elements left out. Empty: the body is the content.
std::vector<std::string> content_codings(const HttpMessage& message);

// True for the codings decode_content knows: gzip, x-gzip, deflate, br.
bool is_known_coding(std::string_view coding);

// `body` with `codings` undone, the last applied first. nullopt when one is unknown, the data
// is corrupt or truncated, or a result would exceed `limit` bytes; then *why (if given) says
// which, e.g. "the gzip data is truncated".
std::optional<std::string> decode_content(std::string_view body, const std::vector<std::string>& codings,
                                          std::string* why, size_t limit = kMaxDecodedContent);

// `content` with `codings` applied in their order (the inverse of decode_content, with
// compression settings of its own: the bytes differ from a server's, the content does not).
// nullopt and *why for a coding it does not know.
std::optional<std::string> encode_content(std::string_view content, const std::vector<std::string>& codings,
                                          std::string* why);

// The message's content: de-chunked (decoded_body in http/chunked.hh), then its content codings
// undone. nullopt and *why as decode_content.
std::optional<std::string> message_content(const HttpMessage& message, std::string* why);

// The codings as a Content-Encoding value: "gzip", "deflate, br".
std::string coding_list_text(const std::vector<std::string>& codings);
