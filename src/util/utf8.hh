// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// UTF-8 validity: what HAR (JSON) text may hold as is, and what mm-recording shows as text.
#include <string_view>

// Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF, no
// truncated sequence. NUL and other control characters are valid.
bool is_valid_utf8(std::string_view text);
