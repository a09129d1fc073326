// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// HAR 1.2 (HTTP Archive: browsers' devtools, WebPageTest, mitmproxy) to and from recordings.
// to_har (har_export.cc) keeps everything a recording holds in a custom "_mahimahi" object per
// entry, so that from_har(to_har(x)) gives back every pair byte for byte; from_har
// (har_import.cc) turns a HAR made elsewhere into plain HTTP/1.1 exchanges the replay server
// can serve.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "recording/record_file.hh"

// A HAR 1.2 document: entries in order of request start (then file name), each with the
// standard fields (content decoded as the spec says: de-chunked and decompressed, base64 with
// "encoding": "base64" only when not UTF-8; size the decoded length; compression the bytes the
// coding saved; timings from our timestamps, -1 where unknown) and
// "_mahimahi": {ip, port, scheme, server_name, protocol, request_first_line,
// response_first_line, request_body_raw_base64, response_body_raw_base64, timestamps{...}}.
// Text that is not valid UTF-8 goes in a "<name>_base64" field instead of "<name>"; header
// lists that are not all valid UTF-8 are kept as "request_headers_raw"/"response_headers_raw"
// ([{"name_base64", "value_base64"}]). Content that cannot be decoded (an unknown coding,
// corrupt or truncated data) stays encoded, marked "_contentEncoding": "<codings>" with a
// comment saying why.
nlohmann::json to_har(const std::vector<RecordingEntry>& entries);

// The pairs of a HAR document. Entries carrying "_mahimahi" are reproduced exactly. Others (a
// browser's export, or ours with "_mahimahi" removed) are converted to HTTP/1.1: pseudo-headers
// dropped, Host added, the decoded content served without Content-Encoding (unless marked
// "_contentEncoding") or Transfer-Encoding and with its Content-Length; Location from
// redirectURL and Cookie/Set-Cookie from the cookies arrays where the headers lack them; a 304
// that carries the cached content becomes a 200 with it. An entry without an IPv4
// serverIPAddress takes its host's from another entry, or a stand-in from 198.18.0.0/15 (one
// note per host in *notes). Entries that cannot be replayed (status 0, 101, a 304 or another
// body the HAR does not hold, not http/https) are skipped with a warning naming the entry. Not
// a HAR at all => UserError naming `source`.
std::vector<RecordedPair> from_har(const nlohmann::json& har, std::vector<std::string>* warnings,
                                   const std::string& source = "HAR input", std::vector<std::string>* notes = nullptr);

// Parses HAR text; malformed JSON => UserError naming `source` and where the error is.
nlohmann::json parse_har_text(std::string_view text, const std::string& source);
