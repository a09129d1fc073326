// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Host header as servers compare it, one copy for the replay matcher and the Cumulus bulk
// cache: a name is case-insensitive, a trailing dot and the scheme's default port name the same
// host (RFC 9110 §4.2, §7.2).
#include <string>
#include <string_view>
#include <utility>

// Host and port of a Host value: "[v6]:port", "name:port", "name". Port empty if absent; a bare
// IPv6 address (several colons, no brackets) is all host.
std::pair<std::string_view, std::string_view> split_host_port(std::string_view host);

// Host as compared: lower case, trailing dot of the name dropped, the scheme's default port
// dropped ("Example.COM.:443" over https -> "example.com"). Empty stays empty.
std::string normalize_host(std::string_view host, bool https);
