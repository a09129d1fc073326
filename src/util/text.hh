// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Small text helpers, one copy each: ASCII case (HTTP field names, host names and schemes are
// case-insensitive ASCII; locale-dependent tolower is not wanted), whitespace trimming, and
// making recorded bytes safe to print.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// `text` with A-Z turned into a-z; every other byte unchanged.
std::string ascii_lowercase(std::string_view text);

// ASCII case-insensitive comparison.
bool equals_ignoring_case(std::string_view a, std::string_view b);
bool starts_with_ignoring_case(std::string_view text, std::string_view prefix);

// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
std::string_view trim_blanks(std::string_view text);
// Takes the next line off `text` (without its '\n'; the last may lack one). Loop while !text.empty().
std::string_view next_line(std::string_view& text);
// The words of `line` between blanks (spaces, tabs, carriage returns): a table's line.
std::vector<std::string_view> blank_separated_words(std::string_view line);

// `text` as a decimal number: ASCII digits only, all of it; nullopt when empty, when anything else
// is in it, or when it does not fit in 64 bits.
std::optional<uint64_t> decimal_value(std::string_view text);

// `text` for a terminal or a log: control bytes (below 0x20, and 0x7f) as \xNN, so that a
// recorded byte cannot drive the terminal; shortened to `max` bytes followed by "..." if longer.
std::string printable(std::string_view text, size_t max = std::string_view::npos);

// "1 pair", "3 pairs": a count with its noun, for messages a user reads. `plural` defaults to
// `singular` + "s".
std::string count_of(size_t count, std::string_view singular, std::string_view plural = {});

// Lower-case hexadecimal, two digits a byte: {0x0a, 0xff} -> "0aff".
std::string hex_bytes(const uint8_t* data, size_t length);

// A word as bash would read it back, on one line (a log header has one line per field): the
// word itself when it is plain, 'word', or $'...' with escapes for a word with control bytes.
std::string shell_quote(std::string_view word);
