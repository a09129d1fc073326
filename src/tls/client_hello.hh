// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The server name a TLS client asks for (SNI), read from its ClientHello, which an intercepting
// proxy (mm-record's, Cumulus's Local Proxy) sees before it knows which server the client means.
// The bytes are the client's: read with bounds, and the name is only checked as a host name later
// (CertificateAuthority::server_context).
#include <cstddef>
#include <cstdint>
#include <string>

struct ssl_st;

// The first host_name of a server_name extension's data (RFC 6066, 3: a ServerNameList), in
// lower case; empty if there is none or the list is malformed.
std::string server_name_from_extension(const uint8_t* data, size_t length);

// The same, from the ClientHello OpenSSL holds during its client-hello callback.
std::string client_hello_server_name(ssl_st* ssl);
