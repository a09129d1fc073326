// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Chunked transfer coding (RFC 9112 section 7.1) of a stored message: recordings keep bodies as
// they crossed the wire, and whoever shows or serves the content de-chunks them here. (The
// parser's incremental framing of live bytes is in http_parser.cc.)
#include <string>

#include "http/http_message.hh"

// The value of a hexadecimal digit (either case), -1 if `c` is not one: chunk sizes are hex
// (and so are URLs' percent-escapes).
int hex_digit_value(char c);

// True if the message's last Transfer-Encoding field ends in "chunked". (The parser frames the
// live stream by all Transfer-Encoding fields together, parameters dropped; stored messages
// have always been read by this simpler rule, which agrees with it on ordinary messages and
// is kept so that existing recordings read as before.)
bool is_chunked(const HttpMessage& message);

// The body as content: de-chunked (extensions and trailers dropped) if the message says
// Transfer-Encoding: chunked, otherwise as stored. Not decompressed. A malformed or truncated
// chunked body gives the content up to the point where it goes wrong.
std::string decoded_body(const HttpMessage& message);
