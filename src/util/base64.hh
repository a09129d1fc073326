// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Standard base64 (RFC 4648 alphabet, with padding): HAR files carry binary bodies and
// non-UTF-8 header bytes this way.
#include <optional>
#include <string>
#include <string_view>

// `bytes` as base64, padded with '=' to a multiple of 4 characters, on one line.
std::string base64_encode(std::string_view bytes);

// The bytes `text` encodes; nullopt if it is not base64 (a character outside the alphabet,
// data after the padding, more than two '=', or a length that leaves a lone character).
// Spaces, tabs and line breaks anywhere are ignored; missing padding is tolerated.
std::optional<std::string> base64_decode(std::string_view text);
