// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// OpenSSL's error text: the reasons waiting in the calling thread's error queue, read once and
// cleared, for messages about TLS handshakes, certificates and keys.
#include <stdexcept>
#include <string>

// The reasons in this thread's OpenSSL error queue, oldest first, joined by "; ", each without
// OpenSSL's "error:CODE:LIBRARY:FUNCTION:" prefix (e.g. "certificate verify failed"); "" if the
// queue is empty. Drains the queue, which would otherwise make a later, unrelated
// SSL_get_error() report a failure.
std::string openssl_error_reasons();

// An OpenSSL failure that is not the user's doing: "OpenSSL: WHAT: REASONS" (": REASONS" only if
// the queue held any). Drains the queue.
std::runtime_error openssl_failure(const std::string& what);
