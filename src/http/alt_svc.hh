// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Alt-Svc (RFC 7838): what replay and mm-recording need of it.
#include <string>
#include <vector>

#include "http/http_message.hh"

// Does this Alt-Svc field value advertise HTTP/3 (h3, or a draft h3-NN)?
bool alt_svc_advertises_h3(const std::string& value);

// Does any Alt-Svc field among `headers` advertise HTTP/3?
bool advertises_h3(const std::vector<HttpHeader>& headers);
