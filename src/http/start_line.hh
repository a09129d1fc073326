// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Splitting the first line of an HTTP/1.x message into its parts, one copy for the parser, the
// recording proxy, HAR export, mm-recording and the replay index. Splitting only: each caller
// checks what it needs (the parser is strict, the replay index tolerant). The views point into
// `line`.
#include <optional>
#include <string_view>

// How the parts of a start line are separated.
enum class StartLineSpaces {
  // RFC 9112's single spaces. A request's method ends at the first space and its version
  // starts after the last, so a target with spaces in it stays whole; with one space only
  // there is no version (HTTP/0.9's form). A status line's code ends at the second space.
  Single,
  // Runs of spaces count as one separator, and the target or code ends at the next space
  // (the replay index's tolerance for recordings made by other tools).
  Runs,
};

// request-line = method SP request-target SP HTTP-version. A line without a space is all
// method; the missing parts are empty.
struct RequestLine {
  std::string_view method, target, version;
};
RequestLine split_request_line(std::string_view line, StartLineSpaces spaces = StartLineSpaces::Single);

// status-line = HTTP-version SP status-code SP [reason-phrase]. The reason is the rest of the
// line after the code and its space, as it is (possibly empty, or with spaces in it).
struct StatusLine {
  std::string_view version, code, reason;
};
StatusLine split_status_line(std::string_view line, StartLineSpaces spaces = StartLineSpaces::Single);

// The status code when `code` is exactly three digits ("200" -> 200, "099" -> 99); nullopt
// otherwise.
std::optional<int> three_digit_status(std::string_view code);

// The reason phrase RFC 9110 gives a status code ("OK", "Not Found"), for a response that came
// without one (HTTP/2 and HTTP/3 have none); "" for a code it does not name.
const char* standard_reason_phrase(int status);
