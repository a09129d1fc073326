// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Deterministic pages (mm-record --deterministic, mm-replay --deterministic), as Web Page
// Replay's deterministic.js: a script put at the top of every HTML response makes the page's
// clock (Date) start at the time the page was recorded and advance a fixed step at each reading,
// and makes Math.random, crypto.getRandomValues and crypto.randomUUID repeat one sequence from a
// fixed seed. A page that builds URLs from the clock or at random then asks for the same URLs
// when recorded and when replayed (given the same order of calls), so replay finds them.
// In the responses, so it works for any browser; both sides put in the same script, which is
// why the recorder must use it too: the recording keeps the page as the server sent it.
#include <cstdint>
#include <string>
#include <vector>

#include "http/http_message.hh"

// The seed of every page's sequence, and how far each reading moves the clock.
constexpr uint32_t kDeterministicSeed = 0x6d6d6a73;
constexpr unsigned kDeterministicClockStepMs = 1;
// Pages larger than this (decoded) are served unchanged: the script's place is searched in them.
constexpr size_t kMaxDeterministicPage = 64 << 20;

// The script (JavaScript, without the <script> tags) for a page recorded at `start_ms`
// (milliseconds since the epoch).
std::string deterministic_script(uint64_t start_ms);

// Is this response an HTML page (Content-Type text/html or application/xhtml+xml)?
bool is_html_response(const std::vector<HttpHeader>& headers);

// Where the script goes in `html`: after the <head> start tag (after a <meta charset> that
// follows it, so the charset stays where the browser looks for it), else after <html>, else
// after the doctype, else at the start; std::string::npos when the content does not look like
// HTML (it does not start with '<' after blanks: JSON served as text/html) or is UTF-16.
size_t script_position(std::string_view html);

// The Content-Security-Policy value `policy` amended so that an inline script with the hash
// `source` ("'sha256-...'") may run: the hash is added to the directive that governs inline
// <script> elements (script-src-elem, else script-src, else default-src) of each policy (they
// are separated by commas) that would block it; a policy that already allows it is unchanged.
std::string csp_allowing(std::string_view policy, std::string_view source);

// Puts the script for `start_ms` into an HTML response: `headers` without Transfer-Encoding (the
// body is not chunked) and `body` with its content codings. The content is decoded, the script
// inserted, the codings applied again (gzip, deflate, br), Content-Length set and every
// Content-Security-Policy amended. Returns false, leaving both unchanged, when the response is
// not an HTML page the script can go into; then *why says why when that is a problem worth a
// warning (an unknown or corrupt coding), and is empty when it is simply not a page.
bool add_deterministic_script(std::vector<HttpHeader>& headers, std::string& body, uint64_t start_ms, std::string* why);
